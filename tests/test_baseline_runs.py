"""The new baselines as score runs: their model and options stored with the run, scored by the worker,
in the analysis views and the export like every run; the CLI's --baselines with named models."""

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import func, select

from db.analysis import analysis_choices, scores_wide
from db.engine import read_session
from db.export import export_frame
from db.models import ScoreRun
from db.runs import RunError, create_run, scores_by_pair
from pluie_core.baselines import BASELINES
from pluie_core.cli import main
from tests.store_fixtures import add_pairs, sentence_pairs
from tests.tiny_encoders import LANGUAGES, tiny_bert, tiny_nllb  # noqa: F401 (fixtures)


def test_new_baselines_run_in_the_worker_and_reach_the_views_and_the_export(engine, tiny_bert, tiny_nllb):
    from worker import ScoringWorker

    pairs = sentence_pairs(6)
    pair_ids = add_pairs(engine, "d", pairs)
    nmt = {"model": tiny_nllb, "lang": LANGUAGES[0], "pivot_lang": LANGUAGES[1], "num_beams": "1"}
    requested = {
        "SelfBLEU": ("selfbleu", None),
        "BERTScore tiny": ("bertscore", {"model": tiny_bert}),
        "BERT-iBLEU tiny": ("bert_ibleu", {"model": tiny_bert, "beta": "2"}),
        "NMT cross tiny": ("nmt_cross", nmt),
    }
    runs = {
        name: create_run(engine, name=name, kind="baseline", model=key, options=options)
        for name, (key, options) in requested.items()
    }
    ScoringWorker(engine, device="cpu", batch_size=6, poll_seconds=0.1, run_ids=list(runs.values())).run(
        exit_when_idle=True
    )

    sources, hypotheses = [s for s, _ in pairs], [h for _, h in pairs]
    exported = export_frame(engine)
    choices = analysis_choices(engine).runs.set_index("name")
    wide = scores_wide(engine, list(runs.values()))
    for name, (key, options) in requested.items():
        expected = BASELINES[key](sources, hypotheses, **(options or {}))
        stored = scores_by_pair(engine, runs[name])
        np.testing.assert_allclose([stored[p][0] for p in pair_ids], expected, rtol=1e-6)
        np.testing.assert_allclose(exported[f"score:{name}"], expected, rtol=1e-6)  # rows in pair order
        assert bool(choices.loc[name, "higher_is_similar"]) and choices.loc[name, "n_scores"] == len(pairs)
        assert wide.shape[0] == len(pairs)
    with read_session(engine) as session:  # the options are stored with the run, parsed as their kinds
        stored_options = session.scalar(select(ScoreRun.options).where(ScoreRun.id == runs["BERT-iBLEU tiny"]))
    assert stored_options == {"model": tiny_bert, "beta": 2.0}

    # a model of the wrong kind fails its run with the reason, before any pair is taken
    wrong = create_run(engine, name="NMT with BERT", kind="baseline", model="nmt_direct", options={"model": tiny_bert})
    ScoringWorker(engine, device="cpu", poll_seconds=0.1, run_ids=[wrong]).run(exit_when_idle=True)
    with read_session(engine) as session:
        failed = session.get(ScoreRun, wrong)
    assert failed.status == "failed" and "needs a multilingual translation model" in failed.error


def test_run_options_are_checked_before_anything_is_stored(store_url):
    from db import init_db

    engine = init_db(store_url)
    add_pairs(engine, "d", sentence_pairs(2))
    with pytest.raises(RunError, match="The s3c baseline needs a model"):
        create_run(engine, name="s3c", kind="baseline", model="s3c")
    with pytest.raises(RunError, match="has no option 'beta'"):
        create_run(engine, name="bs", kind="baseline", model="bertscore", options={"beta": 2})
    with pytest.raises(RunError, match="Unknown baseline 'meteor'"):
        create_run(engine, name="m", kind="baseline", model="meteor")
    with read_session(engine) as session:
        assert session.scalar(select(func.count()).select_from(ScoreRun)) == 0
    kept = create_run(
        engine,
        name="nmt",
        kind="baseline",
        model="nmt_pivot",
        options={"model": "facebook/m2m100_418M", "lang": "de", "num_beams": "2", "pivot_lang": ""},
    )
    with read_session(engine) as session:  # parsed as their kinds, empty ones left out, on every store
        assert session.get(ScoreRun, kept).options == {"model": "facebook/m2m100_418M", "lang": "de", "num_beams": 2}
    engine.dispose()


def test_cli_baselines_with_named_models_and_options(tmp_path, tiny_model_builder, tiny_bert, capsys):
    pairs = pd.DataFrame(
        {
            "source": ["The cat drinks water.", "A man is playing a guitar."],
            "hypothesis": ["The cat drinks milk.", "Someone plays the guitar."],
        }
    )
    pairs.to_csv(tmp_path / "pairs.csv", index=False)
    output = tmp_path / "out.csv"
    model = str(tiny_model_builder())
    assert (
        main(
            [
                "score",
                str(tmp_path / "pairs.csv"),
                "--model",
                model,
                "--no-progress",
                "--device-map",
                "cpu",
                "--baselines",
                "selfbleu",
                "--baseline-model",
                f"bertscore={tiny_bert}",
                "--baseline-model",
                f"bert_ibleu={tiny_bert}",
                "--baseline-option",
                "bert_ibleu.beta=2",
                "-o",
                str(output),
            ]
        )
        == 0
    ), capsys.readouterr().err
    scored = pd.read_csv(output)
    sources, hypotheses = pairs["source"].tolist(), pairs["hypothesis"].tolist()
    np.testing.assert_allclose(scored["selfbleu"], BASELINES["selfbleu"](sources, hypotheses), rtol=1e-9)
    np.testing.assert_allclose(
        scored["bertscore"], BASELINES["bertscore"](sources, hypotheses, model=tiny_bert), rtol=1e-6
    )
    np.testing.assert_allclose(
        scored["bert_ibleu"], BASELINES["bert_ibleu"](sources, hypotheses, model=tiny_bert, beta=2), rtol=1e-6
    )
    assert "levenshtein" not in scored  # only what was asked

    for args, sentence in (
        (["--baselines", "s3c"], "error: The s3c baseline needs a model"),
        (["--baseline-model", "nmt_cross"], "error: --baseline-model takes NAME=MODEL"),
        (["--baseline-option", "bert_ibleu.gamma=1"], "error: The bert_ibleu baseline has no option 'gamma'"),
        (["--quantize", "4bit"], "error: 4-bit loading needs a CUDA GPU"),
        (["--device-map", "balanced"], "error: Sharding the model across GPUs"),
    ):
        bad = tmp_path / "bad.csv"
        assert (
            main(["score", str(tmp_path / "pairs.csv"), "--model", model, "--no-progress", *args, "-o", str(bad)]) == 1
        )
        err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
        assert len(err) == 1 and err[0].startswith(sentence), err
        assert not bad.exists()
