"""PLUIE at the papers' sizes, tested on CPU: accelerate's device maps give the single-device scores,
8-bit / 4-bit / GPU sharding are refused with one sentence where CUDA or a package is missing, the
worker loads a placed model once for its runs, and the hardware suggestion follows the papers."""

import sys

import numpy as np
import pytest
from sqlalchemy import select

from db import init_db
from db.engine import read_session
from db.models import ScoreRun
from db.runs import create_run, scores_by_pair
from lab.hardware import LLAMA_3_70B, MISTRAL_7B, PLACEMENTS, SMALL_MODEL, placement_label, suggest_model
from pluie_core.scorer import PluieError, PluieScorer, check_placement
from tests.store_fixtures import add_pairs, sentence_pairs

SOURCES = ["The cat drinks water.", "Have you ever seen a tsunami ?", "A river."]
HYPOTHESES = ["The cat drinks milk.", "Have you ever seen a tiramisu ?", "A long river in Romania."]


@pytest.fixture(scope="module")
def model_dir(tiny_model_builder):
    return str(tiny_model_builder())


def test_device_maps_give_the_single_device_scores(model_dir):
    single = PluieScorer(model_dir, template="fs-direct", device="cpu").score(SOURCES, HYPOTHESES)
    assert np.ptp(single) > 1e-2  # scores that differ, so equality means something
    for device_map in ("cpu", "auto"):
        placed = PluieScorer(model_dir, template="fs-direct", device_map=device_map)
        assert placed.device.type == "cpu" and placed.device_map == device_map
        np.testing.assert_allclose(placed.score(SOURCES, HYPOTHESES), single, atol=1e-4)
    # an explicit per-module map (what a hand-made sharding looks like), every module on the CPU
    modules = {
        "model.embed_tokens": "cpu",
        "model.layers": "cpu",
        "model.norm": "cpu",
        "model.rotary_emb": "cpu",
        "lm_head": "cpu",
    }
    np.testing.assert_allclose(
        PluieScorer(model_dir, template="fs-direct", device_map=modules).score(SOURCES, HYPOTHESES), single, atol=1e-4
    )


@pytest.mark.parametrize(
    "options,sentence",
    [
        ({"quantization": "8bit"}, r"8-bit loading needs a CUDA GPU \(bitsandbytes\) and this machine has none"),
        ({"quantization": "4bit"}, r"4-bit loading needs a CUDA GPU \(bitsandbytes\) and this machine has none"),
        ({"device_map": "balanced"}, r"Sharding the model across GPUs \(device map 'balanced'\) needs CUDA GPUs"),
        ({"device_map": {"model": 0, "lm_head": 1}}, "Sharding the model across GPUs .* needs CUDA GPUs"),
        ({"quantization": "2bit"}, "Unknown quantization '2bit'; use 8bit or 4bit"),
    ],
)
def test_what_this_cpu_cannot_do_is_refused_with_one_sentence(model_dir, options, sentence):
    import torch

    assert not torch.cuda.is_available()  # these tests run on CPU machines
    with pytest.raises(PluieError, match=sentence) as refused:
        PluieScorer(model_dir, **options)
    assert "\n" not in str(refused.value)


def test_a_missing_package_is_named(model_dir, monkeypatch):
    monkeypatch.setitem(sys.modules, "bitsandbytes", None)  # find_spec then reports it absent
    with pytest.raises(PluieError, match="4-bit loading needs the bitsandbytes package, which is not installed"):
        check_placement(None, "4bit", cuda=True)
    monkeypatch.setitem(sys.modules, "accelerate", None)
    with pytest.raises(PluieError, match="needs the accelerate package, which is not installed"):
        PluieScorer(model_dir, device_map="auto")


def test_the_worker_loads_a_placed_model_once_and_refuses_quantisation_on_cpu(tmp_path, model_dir):
    from worker import ScoringWorker

    engine = init_db(f"sqlite:///{tmp_path / 'store.db'}")
    pairs = sentence_pairs(5)
    pair_ids = add_pairs(engine, "d", pairs)
    placed = {"device_map": "auto"}
    runs = {
        d: create_run(engine, name=d, model=model_dir, template="direct", direction=d, options=placed)
        for d in ("forward", "backward")
    }
    four_bit = create_run(engine, name="4-bit", model=model_dir, template="direct", options={"quantization": "4bit"})
    worker = ScoringWorker(engine, device="cpu", batch_size=5, poll_seconds=0.1)
    worker.run(exit_when_idle=True)

    assert len({id(m.weights[0]) for m in worker._metrics.values() if m.weights}) == 1  # held once
    scorer = PluieScorer(model_dir, template="direct", device="cpu")
    sources, hypotheses = [s for s, _ in pairs], [h for _, h in pairs]
    expected = {"forward": scorer.score(sources, hypotheses), "backward": scorer.score(hypotheses, sources)}
    for direction, run in runs.items():
        stored = scores_by_pair(engine, run)
        np.testing.assert_allclose([stored[p][0] for p in pair_ids], expected[direction], atol=1e-4)
    with read_session(engine) as session:
        failed = session.get(ScoreRun, four_bit)
        assert failed.status == "failed" and "4-bit loading needs a CUDA GPU" in failed.error
        assert session.scalar(select(ScoreRun.options).where(ScoreRun.id == runs["forward"])) == placed
    engine.dispose()


def test_the_suggestion_follows_the_papers_models_and_the_hardware():
    assert suggest_model([]).model == SMALL_MODEL
    one = suggest_model([80.0])
    assert (one.model, one.options) == (MISTRAL_7B, {})
    assert suggest_model([8.0], bitsandbytes=True).options == {"quantization": "4bit"}
    assert suggest_model([4.0], bitsandbytes=True).model == SMALL_MODEL
    three = suggest_model([80.0, 80.0], bitsandbytes=True)
    assert (three.model, three.options) == (LLAMA_3_70B, {"device_map": "auto"})
    two_small = suggest_model([24.0, 24.0], bitsandbytes=True)
    assert (two_small.model, two_small.options) == (LLAMA_3_70B, {"device_map": "auto", "quantization": "4bit"})
    assert suggest_model([24.0, 24.0], bitsandbytes=False).model == MISTRAL_7B
    # the page's placement for each suggestion (quantisation implies accelerate's "auto" map)
    assert PLACEMENTS[placement_label(suggest_model([8.0], bitsandbytes=True).options)] == ("auto", "4bit")
    assert PLACEMENTS[placement_label(three.options)] == ("auto", None)
    assert placement_label({}) == "one device"


def test_reading_the_gpus_of_a_machine_without_a_gpu_driver_does_not_load_torch(tmp_path, monkeypatch):
    """The app reads the GPUs with its first page (ui.forms.run_forms.read_hardware): on a machine with no GPU
    driver that is [] without importing torch (1.5-2 s of every server start, and of every test server's)."""
    import subprocess
    import sys

    from lab import hardware
    from tests.paths import REPO

    code = (
        "import sys; from lab import hardware; hardware.GPU_DRIVER_FILES = ({!r},); "
        "print(hardware.gpu_memory(), 'torch' in sys.modules)"
    )
    missing = str(tmp_path / "no-driver")
    out = subprocess.run(
        [sys.executable, "-c", code.format(missing)], cwd=REPO, capture_output=True, text=True, timeout=120, check=True
    ).stdout.split()
    assert out == ["[]", "False"]
    # where a driver is, torch is asked (this machine's torch sees no GPU: [] all the same)
    (tmp_path / "nvidiactl").touch()
    out = subprocess.run(
        [sys.executable, "-c", code.format(str(tmp_path / "nvidiactl"))],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout.split()
    assert out == ["[]", "True"]
    monkeypatch.setattr(hardware, "GPU_DRIVER_FILES", (missing,))
    assert hardware.gpu_driver_present() is (not sys.platform.startswith("linux"))
