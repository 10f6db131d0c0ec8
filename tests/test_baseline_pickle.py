"""A baseline run whose model's weights are a pickle torch refuses fails with our sentence, never torch's
advice to turn its safety off (issue 38, item 5: the same rule as a PLUIE model's)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch

from db import init_db
from db.runs import create_run
from tests.tiny_encoders import tiny_bert  # noqa: F401 (fixture)


def test_a_baseline_on_refused_pickle_weights_fails_in_our_words(tmp_path, tiny_bert):
    from transformers import AutoModel

    from db.queue import run_config
    from worker import ModelLoadError, load_metric

    model = tmp_path / "pickled-bert"
    shutil.copytree(tiny_bert, model, ignore=shutil.ignore_patterns("*.safetensors"))
    weights = AutoModel.from_pretrained(tiny_bert).state_dict()
    torch.save({**weights, "note": np.arange(3)}, model / "pytorch_model.bin")  # more than tensors
    engine = init_db(f"sqlite:///{tmp_path / 'store.db'}")
    run = create_run(
        engine, name="BERTScore pickled", kind="baseline", model="bertscore", options={"model": str(model)}
    )
    with pytest.raises(ModelLoadError) as refused:
        load_metric(run_config(engine, run), "cpu", 4, engine=engine)
    message = str(refused.value)
    assert message.startswith(f"The weights of {model} are a pickle file"), message
    for torch_advice in ("weights_only", "trust the source", "two options", "\x1b["):
        assert torch_advice not in message
