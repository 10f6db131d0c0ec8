"""Output-based LLM judges (pluie_core.judges) on tiny random chat models: parsing, templates,
batched greedy generation against one-at-a-time generation, unparsed answers counted, and the
worker scoring judge runs (values, compute time, shared weights)."""

from __future__ import annotations

import math
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import select

from db import init_db
from db.engine import read_session
from db.models import Score, ScoreRun
from db.runs import RunError, compute_times, create_run, runs_progress, scores_by_pair
from pluie_core.judges import (
    BUILTIN_JUDGE_TEMPLATES,
    JUDGES,
    JudgeError,
    LLMJudge,
    get_judge_template,
    parse_choice,
    parse_likert,
    parse_yes_no,
)
from tests.store_fixtures import add_pairs, sentence_pairs

# --------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Yes", 1.0),
        ("yes.", 1.0),
        ("**No**", 0.0),
        ("No, they differ.", 0.0),
        ('"Yes"', 1.0),
        ("The answer is yes", 1.0),
        ("I would say no here", 0.0),
        ("I cannot say yes or no", None),
        ("Yesterday", None),
        ("Nope", None),
        ("maybe", None),
        ("", None),
        # negated answers are not that answer; an echoed choice is no answer
        ("Not yes", None),
        ("Definitely not a yes", None),
        ("I don't think yes", None),
        ("Never", None),
        ("yes/no", None),
        ("Yes / No", None),
        ("Yes or no?", None),
        ("No|Yes", None),
        ("Yes, no doubt", 1.0),
        ("No, not at all", 0.0),
        ("Yes, they do not differ", 1.0),
    ],
)
def test_yes_no_parsing(text, expected):
    assert parse_yes_no(text) == expected


def test_yes_no_parsing_takes_the_templates_words():
    assert parse_yes_no("Oui, tout à fait", ("Oui", "Non")) == 1.0
    assert parse_yes_no("Yes", ("Oui", "Non")) is None


@pytest.mark.parametrize(
    "text, expected",
    [
        ("4", 4.0),
        ("4/5", 4.0),
        ("5 out of 5", 5.0),
        ("Rating: 2", 2.0),
        ("I would say 3.", 3.0),
        ("**1**", 1.0),
        ("2023 was a 3", 3.0),
        ("3.5", None),
        ("between 3 and 4", None),
        ("10", None),
        ("0", None),
        ("excellent", None),
        ("", None),
        # a rating on another scale is not a rating on this one; the scale's own denominator is read
        ("2/10", None),
        ("3 out of 10", None),
        ("Rating: 3/10", None),
        ("4 (out of 10)", None),
        ("Score: 4 (out of 5)", 4.0),
        ("4 / 5", 4.0),
        ("Rating: 2 out of 5.", 2.0),
    ],
)
def test_likert_parsing(text, expected):
    assert parse_likert(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("A", "A"),
        ("B) it keeps the meaning", "B"),
        ("Candidate B", "B"),
        ("Option A.", "A"),
        ("a cat", None),
        ("b", None),
        ("Both A and B are fine", None),
        ("neither", None),
        ("A/B", None),
    ],
)
def test_choice_parsing(text, expected):
    assert parse_choice(text) == expected


# --------------------------------------------------------------------------- templates


def test_builtin_judge_templates_and_pluie_templates_as_yes_no_questions():
    assert {t.kind for t in BUILTIN_JUDGE_TEMPLATES.values()} == set(JUDGES)
    p1 = get_judge_template(None, "yes-no")
    assert "Are the following sentences paraphrases?" in p1.turns[0]["content"]  # PARAPHRASUS P1
    fs_direct = get_judge_template("fs-direct", "yes-no")
    assert fs_direct.kind == "yes-no" and fs_direct.answers == ("Yes", "No") and len(fs_direct.turns) > 10
    with pytest.raises(JudgeError, match="generation step"):
        get_judge_template("indirect", "yes-no")
    with pytest.raises(JudgeError, match="likert prompt, not a yes-no"):
        get_judge_template("likert", "yes-no")
    with pytest.raises(JudgeError, match="candidate_b"):
        get_judge_template({"kind": "choice", "turns": [{"role": "user", "content": "{source} {candidate_a}"}]})


def test_a_judge_template_file(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("kind: likert\nscale: [0, 3]\nturns:\n  - {role: user, content: 'Rate {source} vs {hypothesis}'}\n")
    template = get_judge_template(str(path))
    assert template.name == "mine" and template.scale == (0, 3)


# --------------------------------------------------------------------------- models


@pytest.fixture(scope="module")
def tiny(tiny_model_builder) -> Path:
    return tiny_model_builder()


def answering_model(base: Path, target: Path, answer: str) -> Path:
    """A copy of a tiny random model whose generation config makes it answer ``answer`` (one token)
    and stop: a sequence bias saved in generation_config.json, read through the user's load path."""
    from transformers import AutoTokenizer, GenerationConfig

    shutil.copytree(base, target)
    tokenizer = AutoTokenizer.from_pretrained(target)
    ids = tokenizer(answer, add_special_tokens=False)["input_ids"]
    assert len(ids) == 1
    config = GenerationConfig.from_pretrained(target)
    config.sequence_bias = [[[ids[0]], 1000.0], [[ids[0], tokenizer.eos_token_id], 2000.0]]
    config.save_pretrained(target)
    return target


def one_at_a_time(judge: LLMJudge, rows) -> list[str]:
    """Greedy answers computed independently: transformers' generate on each prompt alone, no padding."""
    import torch

    texts = []
    for row in rows:
        prompt = judge.tokenizer.apply_chat_template(
            judge.template.messages(*row), tokenize=False, add_generation_prompt=True
        )
        ids = torch.tensor([judge.tokenizer(prompt, add_special_tokens=False)["input_ids"]])
        with torch.inference_mode():
            out = judge.model.generate(
                input_ids=ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=judge.max_new_tokens,
                do_sample=False,
                pad_token_id=judge.pad_id,
                eos_token_id=judge.eos_ids,
            )
        new = out[0, ids.shape[1] :].tolist()
        end = next((k for k, t in enumerate(new) if t in judge.eos_ids), len(new))
        texts.append(judge.tokenizer.decode(new[:end], skip_special_tokens=True).strip())
    return texts


def saying_model(base: Path, target: Path, text: str) -> Path:
    """A copy of a tiny random model that generates ``text`` (several tokens) and stops: each prefix of
    its tokens biases the next one, longer prefixes more (generation_config.json's sequence bias)."""
    from transformers import AutoTokenizer, GenerationConfig

    shutil.copytree(base, target)
    tokenizer = AutoTokenizer.from_pretrained(target)
    ids = tokenizer(text, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    config = GenerationConfig.from_pretrained(target)
    config.sequence_bias = [[ids[: k + 1], 1000.0 * (k + 1)] for k in range(len(ids))]
    config.save_pretrained(target)
    return target


@pytest.mark.parametrize(
    "kind, text, value",
    [
        ("yes-no", "Not yes", None),
        ("yes-no", "Definitely not a yes", None),
        ("yes-no", "Yes/No", None),
        ("yes-no", "No, not at all", 0.0),
        ("likert", "2/10", None),
        ("likert", "3 out of 10", None),
        ("likert", "Score: 4 (out of 5)", 4.0),
    ],
)
def test_real_generations_are_read_as_the_prompt_asked(tiny, tmp_path, kind, text, value):
    judge = LLMJudge(str(saying_model(tiny, tmp_path / "model", text)), kind=kind, device="cpu", max_new_tokens=16)
    result = judge.score(["The cat drinks water.", "A man plays."], ["The cat drinks milk.", "Someone plays."])
    assert result.texts == [text] * 2  # what the model generated, read back
    if value is None:
        assert np.isnan(result.values).all() and result.answers == [None] * 2 and result.unparsed == 2
    else:
        assert result.values.tolist() == [value] * 2 and result.unparsed == 0


def test_batched_generation_equals_one_at_a_time_and_unparsed_answers_are_counted(tiny):
    pairs = sentence_pairs(9, seed=3)  # prompts of different lengths: padding and reordering matter
    sources, hypotheses = [s for s, _ in pairs], [h for _, h in pairs]
    judge = LLMJudge(str(tiny), kind="yes-no", device="cpu", batch_size=4, max_new_tokens=6)
    result = judge.score(sources, hypotheses)
    assert result.texts == one_at_a_time(judge, pairs)
    # each value is the parse of its own text; a random model mostly says nothing parseable
    for value, answer, text in zip(result.values, result.answers, result.texts):
        expected = parse_yes_no(text)
        assert (math.isnan(value) and answer is None) if expected is None else (value == expected and answer)
    assert result.unparsed == sum(parse_yes_no(t) is None for t in result.texts) > 0
    assert [d["answer"] for d in result.details()] == result.texts

    likert = LLMJudge((judge.model, judge.tokenizer), kind="likert", batch_size=2, max_new_tokens=6)
    assert likert.score(sources, hypotheses).texts == one_at_a_time(likert, pairs)


def test_parsed_answers_of_models_that_answer(tiny, tmp_path):
    pairs = sentence_pairs(5)
    sources, hypotheses = [s for s, _ in pairs], [h for _, h in pairs]
    yes = LLMJudge(str(answering_model(tiny, tmp_path / "yes", "Yes")), kind="yes-no", device="cpu")
    result = yes.score(sources, hypotheses)
    assert result.texts == ["Yes"] * 5 and result.values.tolist() == [1.0] * 5 and result.unparsed == 0

    four = LLMJudge(str(answering_model(tiny, tmp_path / "four", "4")), kind="likert", device="cpu")
    assert four.score(sources, hypotheses).values.tolist() == [4.0] * 5

    b = LLMJudge(str(answering_model(tiny, tmp_path / "b", "B")), kind="choice", device="cpu")
    chosen = b.choose(sources, hypotheses, sources[::-1])
    assert chosen.answers == ["B"] * 5 and chosen.values.tolist() == [0.0] * 5
    # always "B" whatever the order: asked both ways, the answers disagree on the candidate, a tie
    swapped = b.choose(sources, hypotheses, sources[::-1], swap=True)
    assert swapped.answers == ["tie"] * 5 and swapped.values.tolist() == [0.5] * 5
    with pytest.raises(JudgeError, match="choose"):
        b.score(sources, hypotheses)


def test_judge_errors_are_sentences(tiny, tmp_path):
    with pytest.raises(PluieErrorType()):
        LLMJudge(str(tmp_path / "nowhere"), kind="yes-no", device="cpu")
    with pytest.raises(JudgeError, match="Say which judge"):
        LLMJudge(str(tiny))
    judge = LLMJudge(str(tiny), kind="yes-no", device="cpu")
    with pytest.raises(JudgeError, match="2 sources but 1 hypotheses"):
        judge.score(["a", "b"], ["c"])


def PluieErrorType():
    from pluie_core.scorer import PluieError

    return PluieError


# --------------------------------------------------------------------------- runs and the worker


def test_the_worker_scores_judge_runs_with_their_compute_time(tmp_path, tiny):
    from worker import ScoringWorker

    engine = init_db(f"sqlite:///{tmp_path / 'store.db'}")
    pairs = sentence_pairs(10, seed=5)
    pair_ids = add_pairs(engine, "d", pairs)
    four = answering_model(tiny, tmp_path / "four", "4")
    runs = {
        "yes-no": create_run(engine, kind="llm-yes-no", name="yes-no", model=str(tiny), device="cpu"),
        "pluie": create_run(engine, name="pluie", model=str(tiny), template="direct", device="cpu"),
        "likert symmetric": create_run(
            engine, kind="llm-likert", name="likert", model=str(four), device="cpu", direction="symmetric"
        ),
    }
    with pytest.raises(RunError, match="likert prompt, not a yes-no"):
        create_run(engine, kind="llm-yes-no", name="bad", model=str(tiny), template="likert")
    with pytest.raises(RunError, match="Unknown run kind"):
        create_run(engine, kind="llm-ranking", name="bad", model=str(tiny))
    worker = ScoringWorker(engine, device="cpu", batch_size=4, poll_seconds=0.1)
    worker.run(exit_when_idle=True)
    assert len({id(m.weights[0]) for m in worker._metrics.values()}) == 2  # yes-no and PLUIE share one model

    # yes-no: each stored value is the judge's own answer for that pair, NULL where unparsed
    judge = LLMJudge(str(tiny), kind="yes-no", device="cpu")
    expected = judge.score([s for s, _ in pairs], [h for _, h in pairs])
    with read_session(engine) as session:
        stored = {
            p: (v, d)
            for p, v, d in session.execute(
                select(Score.pair_id, Score.value, Score.details).where(Score.run_id == runs["yes-no"])
            )
        }
    assert sorted(stored) == pair_ids
    for pair_id, value, text in zip(pair_ids, expected.values, expected.texts):
        got, details = stored[pair_id]
        assert (got is None) if math.isnan(value) else got == value
        assert details == {"answer": text, "parsed": not math.isnan(value)}
    # likert, symmetric: the mean of both directions, each answer kept
    likert = scores_by_pair(engine, runs["likert symmetric"])
    assert {p: v for p, v in likert.items()} == {p: [4.0] for p in pair_ids}

    progress = {p.name: p for p in runs_progress(engine)}
    assert progress["yes-no"].unparsed == int(np.isnan(expected.values).sum()) > 0
    assert progress["likert"].unparsed == 0 and progress["pluie"].unparsed == 0
    for name in ("yes-no", "pluie", "likert"):
        assert progress[name].timed_pairs == 10 and progress[name].compute_seconds > 0
    table = compute_times(list(progress.values())).set_index("run")
    assert table.loc["pluie", "× PLUIE"] == pytest.approx(1.0)
    assert table.loc["yes-no", "× PLUIE"] == pytest.approx(
        progress["yes-no"].seconds_per_pair / progress["pluie"].seconds_per_pair
    )
    assert np.isnan(table.loc["likert", "× PLUIE"])  # another model: no PLUIE run to compare with
    with read_session(engine) as session:
        kinds = dict(session.execute(select(ScoreRun.name, ScoreRun.template)).all())
    assert kinds["yes-no"] == "yes-no" and kinds["likert"] == "likert"
    engine.dispose()


def test_analysis_and_export_read_unparsed_answers_as_missing(tmp_path, tiny):
    from db.analysis import analysis_choices, scores_wide
    from db.export import export_frame
    from pluie_core.analysis import natural_threshold
    from worker import ScoringWorker

    engine = init_db(f"sqlite:///{tmp_path / 'store.db'}")
    pair_ids = add_pairs(engine, "d", sentence_pairs(8, seed=2))
    run = create_run(engine, kind="llm-yes-no", name="judge", model=str(tiny), device="cpu")
    ScoringWorker(engine, device="cpu", batch_size=8, poll_seconds=0.1).run(exit_when_idle=True)
    stored = scores_by_pair(engine, run)
    unparsed = [p for p in pair_ids if stored[p] == [None]]
    assert unparsed
    wide = scores_wide(engine, [run])
    assert wide["judge"].isna().sum() == len(unparsed) and len(wide) == 8
    exported = export_frame(engine)
    assert exported["score:judge"].isna().sum() == len(unparsed)
    kind = analysis_choices(engine).runs.set_index("name").loc["judge", "kind"]
    assert natural_threshold(kind) == 0.5 and natural_threshold("llm-likert") == 4.0
    assert natural_threshold("pluie") == 0.0 and natural_threshold("baseline") is None
    engine.dispose()


# --------------------------------------------------------------------------- the command line


def test_cli_adds_judge_columns(tiny, tmp_path, capsys):
    from pluie_core.cli import main
    from pluie_core.scorer import PluieScorer

    pairs = sentence_pairs(6, seed=4)
    path = tmp_path / "pairs.csv"
    pd.DataFrame(pairs, columns=["source", "hypothesis"]).to_csv(path, index=False)
    output = tmp_path / "out.csv"
    assert (
        main(
            [
                "score",
                str(path),
                "--model",
                str(tiny),
                "--template",
                "direct",
                "--judge",
                "yes-no",
                "--judge",
                "likert",
                "--no-progress",
                "--device",
                "cpu",
                "-o",
                str(output),
            ]
        )
        == 0
    )
    err = capsys.readouterr().err
    scored = pd.read_csv(output, keep_default_na=False, na_values=[""])
    assert {"pluie", "llm_yes_no", "llm_yes_no_answer", "llm_likert", "llm_likert_answer"} <= set(scored.columns)
    sources, hypotheses = [s for s, _ in pairs], [h for _, h in pairs]
    expected = LLMJudge(str(tiny), kind="yes-no", device="cpu").score(sources, hypotheses)
    np.testing.assert_array_equal(scored["llm_yes_no"].to_numpy(dtype=float), expected.values)  # NaN where unparsed
    assert scored["llm_yes_no_answer"].fillna("").tolist() == expected.texts
    assert f"llm_yes_no: {expected.unparsed} of 6 answers could not be parsed" in err
    assert re.search(r"pluie: [\d.]+ s for 6 rows = [\d.]+ s/row", err) and "llm_likert: " in err
    assert scored["pluie"].to_numpy() == pytest.approx(
        PluieScorer(str(tiny), template="direct").score(sources, hypotheses), abs=1e-4
    )


def test_cli_choice_judge_on_a_preference_file(tiny, tmp_path, capsys):
    from pluie_core.cli import main
    from pluie_core.scorer import PluieScorer

    model = answering_model(tiny, tmp_path / "a", "A")
    preferences = pd.DataFrame(
        {
            "source": ["The cat drinks water.", "A river in Romania."],
            "candidate_a": ["The cat drinks milk.", "A Romanian river."],
            "candidate_b": ["Water is what the cat drinks.", "A long river."],
            "preferred": ["B", "A"],
        }
    )
    path, output = tmp_path / "prefs.csv", tmp_path / "out.jsonl"
    preferences.to_csv(path, index=False)
    assert (
        main(
            [
                "score",
                str(path),
                "--model",
                str(model),
                "--judge",
                "choice",
                "--no-progress",
                "--device",
                "cpu",
                "-o",
                str(output),
            ]
        )
        == 0
    )
    scored = pd.read_json(output, lines=True)
    assert scored["llm_choice"].tolist() == ["A", "A"] and scored["preferred"].tolist() == ["B", "A"]
    scorer = PluieScorer(str(model), template="fs-direct")
    assert scored["pluie_b"].to_numpy() == pytest.approx(
        scorer.score(preferences.source, preferences.candidate_b), abs=1e-4
    )
    assert (
        main(
            [
                "score",
                str(path),
                "--model",
                str(model),
                "--judge",
                "choice",
                "--swap",
                "--no-progress",
                "-o",
                str(output),
            ]
        )
        == 0
    )
    assert pd.read_json(output, lines=True)["llm_choice"].tolist() == ["tie", "tie"]

    capsys.readouterr()
    pairs = tmp_path / "pairs.csv"
    pd.DataFrame({"source": ["a"], "hypothesis": ["b"]}).to_csv(pairs, index=False)
    for args, message in [
        (["--judge", "choice"], "has no column(s) candidate_a, candidate_b"),
        (["--judge", "choice", "--judge", "yes-no"], "run it separately"),
        (["--judge", "nonsense"], "Unknown judge template 'nonsense'"),
    ]:
        assert main(["score", str(pairs), "--model", str(model), "--no-progress", "-o", str(output), *args]) == 1
        err = capsys.readouterr().err
        assert err.count("error:") == 1 and message in err and "Traceback" not in err


# --------------------------------------------------------------------------- the scoring page


def test_scoring_page_creates_judge_runs_and_shows_unparsed_answers_and_seconds_per_pair(tmp_path, tiny, monkeypatch):
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    from worker import ScoringWorker

    url = f"sqlite:///{tmp_path / 'store.db'}"
    monkeypatch.setenv("PLUIE_DB_URL", url)
    monkeypatch.setenv("PLUIE_NO_WORKER", "1")
    st.cache_resource.clear()
    engine = init_db(url)
    add_pairs(engine, "d", sentence_pairs(6, seed=8))
    create_run(engine, name="pluie", model=str(tiny), template="direct", device="cpu")
    page = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "pages" / "scoring.py"), default_timeout=60)
    page.run()
    page.text_input(key="judge_model").input(str(tiny))
    page.radio(key="judge_kind").set_value("llm-yes-no")
    page.selectbox(key="judge_device").set_value("cpu")
    page.text_input(key="judge_name").input("yes-no judge")
    next(b for b in page.button if b.label == "Create judge run").click()
    page.run()
    assert not page.exception and not page.error, [e.value for e in page.error]
    page.text_input(key="judge_model").input(str(tiny))
    page.radio(key="judge_kind").set_value("llm-yes-no")
    page.selectbox(key="judge_template").set_value("likert")  # a Likert prompt for a Yes/No judge: refused
    page.text_input(key="judge_name").input("wrong")
    next(b for b in page.button if b.label == "Create judge run").click()
    page.run()
    assert any("likert prompt, not a yes-no one" in e.value for e in page.error), [e.value for e in page.error]

    ScoringWorker(engine, device="cpu", batch_size=3, poll_seconds=0.1).run(exit_when_idle=True)
    progress = {p.name: p for p in runs_progress(engine)}
    assert progress["yes-no judge"].unparsed > 0 and progress["yes-no judge"].done == 6
    page.run()
    assert not page.exception
    bars = "\n".join(str(p.proto) for p in page.get("progress"))
    assert f"{progress['yes-no judge'].unparsed} unparsed answers" in bars
    assert "s/pair compute" in bars
    timed = next(t.value for t in page.dataframe if "s / pair" in t.value.columns).set_index("run")
    for name in ("pluie", "yes-no judge"):
        assert timed.loc[name, "s / pair"] == pytest.approx(progress[name].seconds_per_pair)
    assert timed.loc["yes-no judge", "× PLUIE"] == pytest.approx(
        progress["yes-no judge"].seconds_per_pair / progress["pluie"].seconds_per_pair
    )
    engine.dispose()
    st.cache_resource.clear()


@pytest.mark.slow
def test_a_sigkilled_worker_on_a_judge_run_loses_nothing(tmp_path, tiny):
    """Killed mid-run, then restarted: every pair has exactly one judgement (the judge's own answer
    for it) and the compute time covers exactly the scores written."""
    import signal

    from tests.test_worker import assert_one_score_per_pair, start_worker, wait_until, written_by

    url = f"sqlite:///{tmp_path / 'store.db'}"
    engine = init_db(url)
    pairs = sentence_pairs(40, seed=9)
    pair_ids = add_pairs(engine, "crash", pairs)
    run = create_run(engine, kind="llm-yes-no", name="judge", model=str(tiny), device="cpu")
    log = tmp_path / "worker.log"
    args = ("--runs", str(run), "--batch-size", "4", "--lease-seconds", "2", "--device", "cpu")
    worker = start_worker(url, *args, log=log)
    wait_until(lambda: written_by(engine, worker.pid) > 0 or worker.poll() is not None, 120, "a first batch", log)
    worker.send_signal(signal.SIGKILL)
    worker.wait(timeout=30)
    assert len(scores_by_pair(engine, run)) < len(pairs), "the run finished before the kill"
    final = start_worker(url, *args, "--exit-when-idle", log=log)
    assert final.wait(timeout=300) == 0, log.read_text()[-3000:]

    assert_one_score_per_pair(engine, run, pair_ids)
    expected = LLMJudge(str(tiny), kind="yes-no", device="cpu").score([s for s, _ in pairs], [h for _, h in pairs])
    with read_session(engine) as session:
        stored = dict(session.execute(select(Score.pair_id, Score.details).where(Score.run_id == run)).all())
    assert [stored[p]["answer"] for p in pair_ids] == expected.texts
    progress = next(p for p in runs_progress(engine) if p.id == run)
    assert progress.timed_pairs == len(pairs) and progress.unparsed == expected.unparsed
    engine.dispose()


# --------------------------------------------------------------------------- analysis views


def test_thresholds_page_reads_a_likert_run_with_unparsed_answers_at_its_natural_threshold(db_url, engine, monkeypatch):
    """A Likert judge run (ratings 1-5, some answers unparsed: NULL) on real MRPC pairs: the page
    leaves the unparsed pairs out and reports the accuracy at the natural threshold 4."""
    from sqlalchemy import insert
    from streamlit.testing.v1 import AppTest

    from db.analysis import add_score_run
    from db.engine import write_session
    from pluie_core.analysis import edit_distances, gold_binary
    from pluie_core.stats import metrics_at
    from tests.analysis_store import build_store

    data = build_store(engine, n_mrpc=120)
    pairs = data["pairs"][data["pairs"]["dataset"] == "MRPC"]
    ratings = (1 + np.round(4 * (1 - edit_distances(pairs)))).clip(1, 5)
    unparsed = ratings.index[::7]
    run = add_score_run(engine, "LLM-Likert stand-in", ratings.drop(unparsed), kind="llm-likert")
    with write_session(engine) as session:
        session.execute(
            insert(Score),
            [
                {"run_id": run, "pair_id": int(p), "value": None, "details": {"answer": "hmm", "parsed": False}}
                for p in unparsed
            ],
        )
    monkeypatch.setenv("PLUIE_DB_URL", db_url)
    monkeypatch.setenv("PLUIE_NO_WORKER", "1")
    page = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "pages" / "thresholds.py"), default_timeout=60)
    page.run()
    page.multiselect(key="analysis_datasets").set_value(["MRPC"])
    page.run()
    page.selectbox(key="analysis_run").set_value("LLM-Likert stand-in")
    page.run()
    assert not page.exception, page.exception
    gold = gold_binary(pairs)
    scored = ratings.drop(unparsed)
    expected = metrics_at(scored, gold.reindex(scored.index), 4.0, True)
    shown = next(m.value for m in page.metric if m.label == "Accuracy at natural")
    assert shown == f"{expected['accuracy']:.3f}"
    assert f"{len(scored):,} pairs with both a score and a reference" in "\n".join(c.value for c in page.caption)
    for name in ("agreement", "distributions", "disagreements"):  # every view takes the run, NULLs included
        other = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "pages" / f"{name}.py"), default_timeout=60)
        other.run()
        other.multiselect(key="analysis_datasets").set_value(["MRPC"])
        other.run()
        if other.selectbox(key="analysis_run").options:
            other.selectbox(key="analysis_run").set_value("LLM-Likert stand-in")
            other.run()
        assert not other.exception, (name, other.exception)
        assert not other.error, (name, [e.value for e in other.error])


def test_complete_batch_times_the_scores_it_writes_and_stores_unparsed_as_null(store_url):
    """On SQLite and PostgreSQL: a batch whose lease was partly taken over adds only the share of its
    compute time that covers the scores it writes; an unparsed answer (NaN) is stored as NULL."""
    import time

    from db import queue

    engine = init_db(store_url)
    add_pairs(engine, "d", sentence_pairs(6))
    run = create_run(engine, kind="llm-yes-no", name="judge", model="some/model")
    first = queue.claim_batch(engine, "A", 4, lease_seconds=0.01)
    time.sleep(0.05)  # A's lease expires; B takes two of its items
    second = queue.claim_batch(engine, "B", 2, lease_seconds=60)
    assert {i.item_id for i in second.items} < {i.item_id for i in first.items}
    values = [float("nan"), 1.0, float("nan"), 0.0]
    scored = [queue.ScoredItem(i.item_id, i.pair_id, v, {"answer": "x"}) for i, v in zip(first.items, values)]
    assert queue.complete_batch(engine, "A", run, scored, compute_seconds=2.0) == 2
    progress = next(p for p in runs_progress(engine) if p.id == run)
    assert progress.compute_seconds == pytest.approx(1.0) and progress.timed_pairs == 2
    assert progress.seconds_per_pair == pytest.approx(0.5)
    kept = {i.pair_id: v for i, v in zip(first.items, values) if i.item_id not in {s.item_id for s in second.items}}
    stored = scores_by_pair(engine, run)
    assert stored == {p: [None if math.isnan(v) else v] for p, v in kept.items()}
    assert progress.unparsed == 1
    engine.dispose()
