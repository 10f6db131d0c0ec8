"""LLM-choice as a run kind on preference data: each pair (source, X) that a preference item links to
(source, Y) is asked "X (A) or Y (B)?" by the worker; the store keeps 1 / 0 / NULL per pair and the
Preferences page reads the run like any other (the item's two pairs are the two orders). Tiny models
with fixed answers (a saved generation config) make the expected values known in advance."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import func, select
from streamlit.testing.v1 import AppTest

from db import init_db
from db.engine import read_session
from db.evaluation_reads import preferences_frame
from db.models import Pair, Score, ScoreRun, WorkItem
from db.preferences import add_preferences, import_preference_file, preference_partners
from db.runs import RunError, create_run, dataset_names, runs_progress
from pluie_core.evaluation.preference import metric_decisions, preference_agreement
from pluie_core.judges import LLMJudge
from tests.paths import REPO
from tests.store_fixtures import add_pairs, sentence_pairs
from tests.test_judges import answering_model

HUMAN = ["A", "B", "tie", "A"]
MAGIC = "zebra"  # the word the "magic" model always prefers


@pytest.fixture(scope="module")
def tiny(tiny_model_builder) -> Path:
    return tiny_model_builder()


def preference_file(path: Path, items) -> Path:
    pd.DataFrame([{"source": s, "candidate_a": a, "candidate_b": b, "preferred": p} for s, a, b, p in items]).to_csv(
        path, index=False
    )
    return path


ITEMS = [
    ("The cat drinks water.", "The cat drinks milk.", "Water is what the cat drinks.", "A"),
    ("A river in Romania.", "A Romanian river.", "A long river.", "B"),
    ("The house is red.", "The red house.", "A house that is red.", "tie"),
    ("He walks slowly.", "He is walking slowly.", "Slowly he walks.", "A"),
]


def scores_of(engine, run_id: int) -> dict[tuple[str, str], tuple]:
    with read_session(engine) as session:
        rows = session.execute(
            select(Pair.source, Pair.hypothesis, Score.value, Score.details)
            .join(Score, Score.pair_id == Pair.id)
            .where(Score.run_id == run_id)
        ).all()
    return {(s, h): (v, d) for s, h, v, d in rows}


@pytest.mark.slow
def test_a_worker_process_scores_an_llm_choice_run_always_a_gives_ties(tmp_path, tiny):
    from tests.test_worker import start_worker

    url = f"sqlite:///{tmp_path / 'store.db'}"
    engine = init_db(url)
    model = answering_model(tiny, tmp_path / "a", "A")
    import_preference_file(engine, preference_file(tmp_path / "prefs.csv", ITEMS), "prefs")
    add_pairs(engine, "plain", sentence_pairs(3))  # not preference data: never queued for the choice run
    run = create_run(engine, kind="llm-choice", name="choice", model=str(model), device="cpu")
    with read_session(engine) as session:
        assert session.scalar(select(func.count(WorkItem.id)).where(WorkItem.run_id == run)) == 8
    log = tmp_path / "worker.log"
    worker = start_worker(url, "--runs", str(run), "--batch-size", "3", "--device", "cpu", "--exit-when-idle", log=log)
    assert worker.wait(timeout=300) == 0, log.read_text()[-3000:]

    stored = scores_of(engine, run)
    assert len(stored) == 8  # every candidate, asked once in first position
    for source, a, b, _ in ITEMS:
        assert stored[(source, a)] == (1.0, {"answer": "A", "parsed": True, "against": b})
        assert stored[(source, b)] == (1.0, {"answer": "A", "parsed": True, "against": a})
    progress = next(p for p in runs_progress(engine) if p.id == run)
    assert progress.done == progress.total == 8 and progress.unparsed == 0 and progress.timed_pairs == 8
    assert progress.status == "active" and progress.compute_seconds > 0
    # always "A": each candidate wins when asked first, so every item is a tie
    links = preferences_frame(engine)
    by_pair = {pid: 1.0 for pid in pd.concat([links["pair_a_id"], links["pair_b_id"]])}
    decisions = metric_decisions([by_pair[p] for p in links["pair_a_id"]], [by_pair[p] for p in links["pair_b_id"]])
    assert list(decisions) == ["tie"] * 4
    engine.dispose()


def magic_model(base: Path, target: Path) -> Path:
    """A tiny model that answers "A" unless the prompt ends with the magic word (then "B"): with the
    template below, which puts the second candidate last, it always picks the candidate that
    ends with the magic word, first or second, and the first one otherwise."""
    from transformers import AutoTokenizer, GenerationConfig

    answering_model(base, target, "A")
    tokenizer = AutoTokenizer.from_pretrained(target)
    b = tokenizer("B", add_special_tokens=False)["input_ids"]
    end = tokenizer.apply_chat_template(
        [{"role": "user", "content": f"x {MAGIC}"}], tokenize=False, add_generation_prompt=True
    )
    tail = tokenizer(end, add_special_tokens=False)["input_ids"]
    suffix = tokenizer(end.split(MAGIC, 1)[1], add_special_tokens=False)["input_ids"]
    tail = tail[-(len(suffix) + len(tokenizer(" " + MAGIC, add_special_tokens=False)["input_ids"])) :]
    config = GenerationConfig.from_pretrained(target)
    config.sequence_bias = config.sequence_bias + [[tail + b, 5000.0], [b + [tokenizer.eos_token_id], 2000.0]]
    config.save_pretrained(target)
    return target


MAGIC_TEMPLATE = {
    "name": "second-last",
    "kind": "choice",
    "answers": ["A", "B"],
    "max_new_tokens": 4,
    "turns": [
        {"role": "user", "content": "Source: {source}\nWhich is better, A or B?\nA: {candidate_a}\nB: {candidate_b}"}
    ],
}
# item: (candidate A, candidate B, human choice) -> the model picks the one ending with the magic word;
# neither or both: each candidate wins when asked first (neither: always A) or second (both: always B)
MAGIC_ITEMS = [
    (f"a striped {MAGIC}", "a horse", "A"),  # run: A, agrees
    ("a horse", f"a plain {MAGIC}", "B"),  # run: B, agrees
    ("a horse", "a pony", "tie"),  # run: tie (1, 1), agrees
    (f"one {MAGIC}", f"two {MAGIC}", "A"),  # run: tie (0, 0), disagrees
    (f"a big {MAGIC}", "a mule", "B"),
]  # run: A, disagrees
RUN_CHOICE = ["A", "B", "tie", "tie", "A"]


def test_known_different_answers_per_pair_and_the_preferences_page(tmp_path, tiny, monkeypatch):
    from db.queue import run_config
    from worker import ScoringWorker, load_metric

    url = f"sqlite:///{tmp_path / 'store.db'}"
    engine = init_db(url)
    model = magic_model(tiny, tmp_path / "magic")
    items = [(f"Source {i}.", a, b, p) for i, (a, b, p) in enumerate(MAGIC_ITEMS)]
    import_preference_file(engine, preference_file(tmp_path / "magic.csv", items[:3]), "magic")
    run = create_run(
        engine,
        kind="llm-choice",
        name="magic choice",
        model=str(model),
        device="cpu",
        template="custom",
        template_spec=MAGIC_TEMPLATE,
    )
    ScoringWorker(engine, device="cpu", batch_size=4, poll_seconds=0.1).run(exit_when_idle=True)
    # imported after a metric was loaded: it reads the new partners when it meets their pairs
    metric = load_metric(run_config(engine, run), "cpu", 4, engine=engine)
    import_preference_file(engine, preference_file(tmp_path / "later.csv", items[3:]), "later")
    later_values, later_details = metric.score([items[3][0], items[4][0]], [items[3][2], items[4][2]])
    assert later_values == [0.0, 0.0] and [d["against"] for d in later_details] == [items[3][1], items[4][1]]
    with pytest.raises(ValueError, match="is not part of any preference item"):  # the worker's item error
        metric.score(["Source 0."], ["a candidate nobody compared"])
    ScoringWorker(engine, device="cpu", batch_size=4, poll_seconds=0.1).run(exit_when_idle=True)

    stored = scores_of(engine, run)
    judge = LLMJudge(str(model), template=MAGIC_TEMPLATE, device="cpu")
    sources = [s for s, *_ in items] * 2
    firsts = [a for _, a, _, _ in items] + [b for _, _, b, _ in items]
    seconds = [b for _, _, b, _ in items] + [a for _, a, _, _ in items]
    direct = judge.choose(sources, firsts, seconds)  # the library called directly, one question per pair
    assert [stored[(s, x)][0] for s, x in zip(sources, firsts)] == direct.values.tolist()
    assert [stored[(s, x)][1]["answer"] for s, x in zip(sources, firsts)] == direct.texts
    expected = [float(not y.endswith(MAGIC)) for y in seconds]  # "B" exactly when the second ends with it
    assert direct.values.tolist() == expected  # the model behaves as built: 1 0 1 0 1 | 0 1 1 0 0
    values_a, values_b = expected[:5], expected[5:]
    assert list(metric_decisions(values_a, values_b)) == RUN_CHOICE
    figures = preference_agreement([p for *_, p in items], values_a, values_b)
    assert figures["accuracy"] == 3 / 5 and figures["n"] == 5

    monkeypatch.setenv("PLUIE_DB_URL", url)
    monkeypatch.setenv("PLUIE_NO_WORKER", "1")
    page = AppTest.from_file(str(REPO / "pages" / "preferences.py"), default_timeout=60).run()
    assert not page.exception, page.exception
    assert "magic choice" in page.multiselect(key="preference_runs").options
    page.multiselect(key="preference_runs").set_value(["magic choice"]).run()
    row = page.dataframe[0].value.set_index("metric").loc["magic choice"]
    assert row["n"] == 5 and row["accuracy"] == 3 / 5 and row["accuracy_calibrated"] == figures["accuracy_calibrated"]
    assert row["kappa"] == pytest.approx(figures["kappa"])
    # the pair-level views do not offer it: its 1 / 0 is a choice within an item, not a paraphrase score
    thresholds = AppTest.from_file(str(REPO / "pages" / "thresholds.py"), default_timeout=60).run()
    assert not thresholds.exception, thresholds.exception
    assert "magic choice" not in " ".join(str(o) for s in thresholds.selectbox for o in s.options)
    engine.dispose()


def test_choice_runs_refuse_what_they_cannot_score_in_one_sentence(store_url, tmp_path, tiny):
    engine = init_db(store_url)  # SQLite, then PostgreSQL: the queue's filter and the partners' read
    plain = add_pairs(engine, "plain", sentence_pairs(4))
    done = import_preference_file(engine, preference_file(tmp_path / "p.csv", ITEMS), "prefs")
    plain_id = next(i for i, n in dataset_names(engine).items() if n == "plain")
    with pytest.raises(RunError, match="choose datasets imported as preference data"):
        create_run(engine, kind="llm-choice", name="x", model=str(tiny), dataset_ids=[plain_id, done.dataset_id])
    with pytest.raises(RunError, match="leave the direction forward"):
        create_run(engine, kind="llm-choice", name="x", model=str(tiny), direction="symmetric")
    with pytest.raises(RunError, match="a likert prompt, not a choice one"):
        create_run(engine, kind="llm-choice", name="x", model=str(tiny), template="likert")
    run = create_run(engine, kind="llm-choice", name="x", model=str(tiny), dataset_ids=[done.dataset_id])
    with read_session(engine) as session:
        assert session.scalar(select(ScoreRun.kind).where(ScoreRun.id == run)) == "llm-choice"
        assert session.scalar(select(func.count(WorkItem.id)).where(WorkItem.run_id == run)) == 8
    # preferences added later between stored pairs (the bench's path): the linked pairs are queued then
    unscoped = create_run(engine, kind="llm-choice", name="all", model=str(tiny))
    add_preferences(
        engine, plain_id, pd.DataFrame({"pair_a_id": plain[:2], "pair_b_id": plain[2:], "preferred": ["A", "B"]})
    )
    with read_session(engine) as session:
        queued = set(session.scalars(select(WorkItem.pair_id).where(WorkItem.run_id == unscoped)))
    assert set(plain) <= queued and len(queued) == 12
    partners = preference_partners(engine, unscoped)
    texts = sentence_pairs(4)  # as add_pairs stored them, in order
    assert partners[texts[0]] == [texts[2][1]] and partners[texts[3]] == [texts[1][1]]
    assert partners[(ITEMS[0][0], ITEMS[0][1])] == [ITEMS[0][2]]
    engine.dispose()


def test_the_scoring_page_creates_an_llm_choice_run_on_preference_datasets(tmp_path, tiny, monkeypatch):
    import streamlit as st

    from worker import ScoringWorker

    url = f"sqlite:///{tmp_path / 'store.db'}"
    monkeypatch.setenv("PLUIE_DB_URL", url)
    monkeypatch.setenv("PLUIE_NO_WORKER", "1")
    st.cache_resource.clear()
    engine = init_db(url)
    add_pairs(engine, "plain", sentence_pairs(3))
    done = import_preference_file(engine, preference_file(tmp_path / "prefs.csv", ITEMS), "prefs")
    page = AppTest.from_file(str(REPO / "pages" / "scoring.py"), default_timeout=60).run()
    assert not page.exception, page.exception
    page.radio(key="judge_kind").set_value("llm-choice").run()
    assert page.multiselect(key="judge_datasets").options == ["prefs"]  # preference data only
    assert "choice" in page.selectbox(key="judge_template").options
    page.text_input(key="judge_model").input(str(tiny))
    page.selectbox(key="judge_device").set_value("cpu")
    page.multiselect(key="judge_datasets").set_value([done.dataset_id])
    page.text_input(key="judge_name").input("random choice")
    next(b for b in page.button if b.label == "Create judge run").click().run()
    assert not page.exception and not page.error, [e.value for e in page.error]
    run = next(p for p in runs_progress(engine) if p.name == "random choice")
    assert run.kind == "llm-choice" and run.total == 8 and run.direction == "forward"

    ScoringWorker(engine, device="cpu", batch_size=8, poll_seconds=0.1, run_ids=[run.id]).run(exit_when_idle=True)
    run = next(p for p in runs_progress(engine) if p.id == run.id)
    stored = scores_of(engine, run.id)
    nulls = sum(v is None for v, _ in stored.values())
    assert run.done == 8 and run.unparsed == nulls
    assert all((v is None) == (not d["parsed"]) and (v is None or v in (0.0, 1.0)) for v, d in stored.values())
    page.run()
    assert not page.exception
    bars = "\n".join(str(p.proto) for p in page.get("progress"))
    assert "s/pair compute" in bars
    assert (f"{nulls} unparsed answers" in bars) == (nulls > 0)
    engine.dispose()
    st.cache_resource.clear()


def test_prefer_first_with_several_partners_is_the_share_of_wins(tmp_path, tiny):
    judge = LLMJudge(str(answering_model(tiny, tmp_path / "b", "B")), kind="choice", device="cpu")
    result = judge.prefer_first(["s", "s"], ["x", "y"], [["y", "z"], ["x"]])
    assert result.values.tolist() == [0.0, 0.0] and result.answers == ["0/2 A", "B"]
    assert result.texts == ["B | B", "B"]
    assert math.isnan(
        LLMJudge(
            (judge.model, judge.tokenizer),
            kind="choice",
            max_new_tokens=1,
            template={**MAGIC_TEMPLATE, "answers": ["C", "D"]},
        )
        .prefer_first(["s"], ["x"], [["y"]])
        .values[0]
    )
