"""A score that is not a number is never stored as one. In float16 a model's activations can overflow
(float16 holds numbers up to 65,504), and its answer probabilities come out NaN: the scorer refuses such a
batch with a sentence, and the worker shows that sentence on the run's pairs instead of writing scores
(SQLite would store NaN as NULL, which reads as a judge's unparsed answer, counted as scored)."""

from __future__ import annotations

import re
import shutil

import pytest
import torch
from sqlalchemy import func, select

from db import explanations as expl
from db import init_db
from db.engine import read_session
from db.models import Score, WorkItem
from db.runs import create_run
from tests.store_fixtures import add_pairs, sentence_pairs
from tests.tiny_models import tiny_model_builder, tiny_model_path  # noqa: F401

OVERFLOW = (
    "The model's answer probabilities are not numbers for {bad} of {n} pairs in a batch: its activations "
    "overflowed in float16, which holds numbers up to 65,504; score in bfloat16 or float32 instead."
)
SOURCES = ["The cat sat on the mat.", "A dog ran home quickly.", "Prices rose in May."]
HYPOTHESES = ["A cat sat on the mat.", "The dog went home.", "In May, prices went up."]


@pytest.fixture(scope="module")
def overflowing_model(tiny_model_path, tmp_path_factory):  # noqa: F811
    """The tiny model with its output layer scaled so that its logits are finite in float32 and overflow in
    float16 (every weight stays under float16's largest number: the overflow is the activations')."""
    from transformers import AutoModelForCausalLM

    copy = tmp_path_factory.mktemp("overflowing") / "model"
    shutil.copytree(tiny_model_path, copy)
    model = AutoModelForCausalLM.from_pretrained(copy, dtype=torch.float32)
    with torch.no_grad():
        model.get_output_embeddings().weight.mul_(7e4)
    assert model.get_output_embeddings().weight.abs().max() < 65504
    model.save_pretrained(copy)
    return copy


def test_the_scorer_refuses_answer_probabilities_that_are_not_numbers(overflowing_model, tiny_model_path):  # noqa: F811
    from pluie_core.scorer import PluieError, PluieScorer

    finite = PluieScorer(str(overflowing_model), device="cpu", dtype=torch.float32).score(SOURCES, HYPOTHESES)
    assert torch.isfinite(torch.as_tensor(finite)).all() and abs(finite).max() > 1000  # large, but numbers
    half = PluieScorer(str(overflowing_model), device="cpu", dtype=torch.float16)
    with pytest.raises(PluieError) as refused:
        half.score(SOURCES, HYPOTHESES)
    assert str(refused.value) == OVERFLOW.format(bad=3, n=3)
    # the same model before the scaling scores in float16 as in float32, to float16's rounding
    plain = PluieScorer(str(tiny_model_path), device="cpu", dtype=torch.float16).score(SOURCES, HYPOTHESES)
    exact = PluieScorer(str(tiny_model_path), device="cpu", dtype=torch.float32).score(SOURCES, HYPOTHESES)
    assert abs(plain - exact).max() < 0.02
    # weights that are not numbers, in float32: the sentence names the model's files
    broken = PluieScorer(str(tiny_model_path), device="cpu", dtype=torch.float32)
    with torch.no_grad():
        broken.model.get_output_embeddings().weight[0, 0] = float("nan")
    with pytest.raises(PluieError) as refused:
        broken.score(SOURCES, HYPOTHESES)
    assert str(refused.value) == (
        "The model's answer probabilities are not numbers for 3 of 3 pairs in a batch: "
        "its weights or activations are not numbers in float32; check the model's files."
    )


def test_the_worker_writes_no_score_for_an_overflow_and_says_why(tmp_path, overflowing_model):
    from worker import ScoringWorker

    engine = init_db(f"sqlite:///{tmp_path / 'store.db'}")
    first = add_pairs(engine, "d", sentence_pairs(3))[0]
    half = create_run(engine, name="half", model=str(overflowing_model), template="direct", dtype="float16")
    full = create_run(engine, name="full", model=str(overflowing_model), template="direct", dtype="float32")
    expl.request_explanation(engine, half, first)  # why this score, asked of the float16 run
    worker = ScoringWorker(engine, device="cpu", poll_seconds=0.1)
    worker.run(exit_when_idle=True)
    asked = expl.explanation(engine, half, first)
    # the pair and each of its one-word-out variants, in one batch: all overflow
    every = re.escape(OVERFLOW).replace(r"\{bad\}", r"(\d+)").replace(r"\{n\}", r"\1")
    assert asked.status == "failed" and re.fullmatch(every, asked.error), asked
    with read_session(engine) as session:

        def scores(run_id):
            return session.scalars(select(Score.value).where(Score.run_id == run_id)).all()

        def items(run_id):
            return session.execute(select(WorkItem.status, WorkItem.error).where(WorkItem.run_id == run_id)).all()

        assert scores(half) == []  # nothing stored that would read as a score
        assert items(half) == [("failed", f"run {half}: scoring failed: " + OVERFLOW.format(bad=3, n=3))] * 3
        assert len(scores(full)) == 3 and all(value is not None for value in scores(full))
        assert (
            session.scalar(
                select(func.count()).select_from(WorkItem).where(WorkItem.run_id == full, WorkItem.status == "done")
            )
            == 3
        )
    engine.dispose()
