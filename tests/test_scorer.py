"""PluieScorer on tiny random chat models loaded from disk, like a user's local model path.

The reference everywhere is the papers' two-pass formula, computed here independently:
PLUIE = (T+1)·(loss(Tpl∘No) − loss(Tpl∘Yes)), where Tpl∘answer is the chat-templated
conversation with the assistant's answer, cut right after the answer word (the papers' reference
implementation drops the end-of-turn tokens), and T+1 is the number of predicted tokens of that
sequence (its length − 1, which is what the model's mean loss divides by). The losses are the
model's causal-LM cross-entropy, computed in float64 so that the reference itself is exact to
far below the 1e-4 tolerance (a float32 mean over ~500 tokens alone carries ~1e-4 of rounding).
"""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from transformers import AutoModelForCausalLM, AutoTokenizer

from pluie_core.scorer import PluieError, PluieScorer

SOURCES = [
    "Have you ever seen a tsunami ?",
    "The cat drinks water.",
    "Amrozi accused his brother of deliberately distorting his evidence .",
    "x",
    "The Jidanul River is a tributary of the Jiul de Vest River in Romania, and it is a long one .",
]
HYPOTHESES = [
    "Have you ever seen a tiramisu ?",
    "The cat drinks milk.",
    "Amrozi accused his brother of twisting his testimony.",
    "The Indian Malayalam film 'Pennmakkal', released in 1966.",
    "A river.",
]

# (architecture, tokenizer style, the answer text the chat template writes after the prompt)
NATURAL = [
    ("llama", "bpe", "Yes"),  # ChatML, byte-level BPE: the bare "Yes" token, not "ĠYes"
    ("qwen2", "bpe", "Yes"),
    ("llama", "metaspace", " Yes"),  # Llama-2 chat template writes " Yes </s>": the "▁Yes" token
]


def model_loss(model, text: str, tokenizer) -> tuple[float, int]:
    """The model's mean causal-LM loss over a text (float64) and the number of predicted tokens."""
    ids = torch.tensor([tokenizer(text, add_special_tokens=False)["input_ids"]])
    with torch.no_grad():
        logits = model(ids).logits[0, :-1]
    return F.cross_entropy(logits.double(), ids[0, 1:]).item(), ids.shape[1] - 1


def two_pass_reference(model, tokenizer, scorer, source, hypothesis, cut_end_of_turn=True, answer_texts=None):
    messages = scorer.template.messages(source, hypothesis)
    losses = []
    for k, word in enumerate(scorer.answers):
        if answer_texts is None:
            full = tokenizer.apply_chat_template(messages + [{"role": "assistant", "content": word}], tokenize=False)
            text = full[: full.rindex(word) + len(word)] if cut_end_of_turn else full
        else:
            text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True) + answer_texts[k]
        losses.append(model_loss(model, text, tokenizer))
    (loss_yes, count_yes), (loss_no, count_no) = losses
    assert count_yes == count_no
    return count_yes * (loss_no - loss_yes)


@pytest.fixture(scope="module")
def float64_models():
    cache = {}

    def load(path):
        if path not in cache:
            cache[path] = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float64)
        return cache[path]

    return load


@pytest.mark.parametrize("arch,style,answer_text", NATURAL)
@pytest.mark.parametrize("template", ["fs-direct", "direct"])
def test_single_pass_equals_two_pass_formula(tiny_model_builder, float64_models, arch, style, answer_text, template):
    path = tiny_model_builder(arch=arch, tokenizer=style)
    scorer = PluieScorer(str(path), template=template)
    assert scorer.dtype == torch.float32 and scorer.device.type == "cpu"
    assert scorer.answer_texts == (answer_text, answer_text.replace("Yes", "No"))
    scores, logprobs = scorer.score(SOURCES, HYPOTHESES, return_logprobs=True)

    reference_model = float64_models(path)
    reference = [
        two_pass_reference(reference_model, scorer.tokenizer, scorer, s, h) for s, h in zip(SOURCES, HYPOTHESES)
    ]
    np.testing.assert_allclose(scores, reference, atol=1e-4, rtol=0)
    # Random weights still give scores of a few units, so 1e-4 is a demanding comparison.
    assert np.abs(scores).max() > 0.05
    np.testing.assert_allclose(scores, logprobs[:, 0] - logprobs[:, 1], atol=1e-12)
    assert (logprobs < 0).all()


def test_reference_loss_is_the_models_own_loss(tiny_model_builder):
    """The float64 cross-entropy used as reference is what the model's own ``labels=`` loss computes."""
    path = tiny_model_builder(arch="llama", tokenizer="bpe")
    model = AutoModelForCausalLM.from_pretrained(path)
    tokenizer = AutoTokenizer.from_pretrained(path)
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": "The cat drinks water."}, {"role": "assistant", "content": "Yes"}], tokenize=False
    )
    ids = torch.tensor([tokenizer(text, add_special_tokens=False)["input_ids"]])
    with torch.no_grad():
        own = model(ids, labels=ids).loss.item()
    ours, count = model_loss(model, text, tokenizer)
    assert count == ids.shape[1] - 1
    assert ours == pytest.approx(own, rel=1e-6)


def test_end_of_turn_token_is_not_scored(tiny_model_builder, float64_models):
    path = tiny_model_builder(arch="llama", tokenizer="bpe")
    scorer = PluieScorer(str(path), template="direct")
    tokenizer = scorer.tokenizer
    end_of_turn = tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert end_of_turn not in scorer.answer_ids
    assert tokenizer.convert_ids_to_tokens(list(scorer.answer_ids)) == ["Yes", "No"]
    prompt = scorer.prompts(SOURCES[:1], HYPOTHESES[:1])[0]
    assert prompt.endswith("<|im_start|>assistant\n")
    score = scorer.score(SOURCES[:1], HYPOTHESES[:1])[0]
    model = float64_models(path)
    with_end = two_pass_reference(model, tokenizer, scorer, SOURCES[0], HYPOTHESES[0], cut_end_of_turn=False)
    without_end = two_pass_reference(model, tokenizer, scorer, SOURCES[0], HYPOTHESES[0])
    assert score == pytest.approx(without_end, abs=1e-4)
    assert abs(score - with_end) > 1e-2  # scoring "<|im_end|>\n" too would give another number


def test_unigram_tokenizer_uses_one_spacing_for_both_answers(tiny_model_builder, float64_models):
    """Mistral-style "[/INST]No" does not end in a single token with this Unigram vocabulary, so
    both answers fall back to the leading-space variant ("▁Yes" / "▁No"), never a mix."""
    path = tiny_model_builder(arch="gpt_neox", tokenizer="unigram")
    scorer = PluieScorer(str(path), template="fs-direct")
    assert scorer.answer_texts == (" Yes", " No")
    assert scorer.tokenizer.convert_ids_to_tokens(list(scorer.answer_ids)) == ["▁Yes", "▁No"]
    scores = scorer.score(SOURCES, HYPOTHESES)
    reference = [
        two_pass_reference(float64_models(path), scorer.tokenizer, scorer, s, h, answer_texts=(" Yes", " No"))
        for s, h in zip(SOURCES, HYPOTHESES)
    ]
    np.testing.assert_allclose(scores, reference, atol=1e-4, rtol=0)


@pytest.mark.parametrize("arch,style", [("llama", "bpe"), ("gpt_neox", "unigram"), ("llama", "metaspace")])
def test_prefix_cache_equals_uncached(tiny_model_builder, arch, style):
    path = tiny_model_builder(arch=arch, tokenizer=style)
    cached = PluieScorer(str(path), template="fs-direct")
    scores = cached.score(SOURCES, HYPOTHESES)
    assert cached.last_run["cached"] == len(SOURCES) and cached.last_run["uncached"] == 0
    assert cached.last_run["prefix_tokens"] > 100  # the few-shot block is cached
    plain = PluieScorer((cached.model, cached.tokenizer), template="fs-direct", prefix_cache=False)
    expected = plain.score(SOURCES, HYPOTHESES)
    assert plain.last_run["cached"] == 0
    np.testing.assert_allclose(scores, expected, atol=1e-4, rtol=0)


def test_pairs_that_do_not_start_with_the_cached_prefix_fall_back(tiny_model_builder):
    path = tiny_model_builder(arch="llama", tokenizer="bpe")
    scorer = PluieScorer(str(path), template="direct", batch_size=2)
    expected = PluieScorer((scorer.model, scorer.tokenizer), template="direct", prefix_cache=False).score(
        SOURCES, HYPOTHESES
    )
    # A prefix that runs into the first pair's own source text: only that pair starts with it.
    first_prompt = scorer._encode(scorer.prompts(SOURCES[:1], HYPOTHESES[:1])[0])
    template_prefix = len(scorer._shared_prefix()[0])
    scorer._prefix = scorer._encode_prefix(first_prompt[: template_prefix + 6])
    scores = scorer.score(SOURCES, HYPOTHESES)
    assert scorer.last_run["cached"] == 1 and scorer.last_run["uncached"] == len(SOURCES) - 1
    np.testing.assert_allclose(scores, expected, atol=1e-4, rtol=0)


def test_batched_equals_one_at_a_time_in_input_order(tiny_model_builder):
    path = tiny_model_builder(arch="qwen2", tokenizer="bpe")
    batched = PluieScorer(str(path), template="fs-direct", batch_size=3)
    scores = batched.score(SOURCES, HYPOTHESES)
    single = PluieScorer((batched.model, batched.tokenizer), template="fs-direct", batch_size=1)
    one_by_one = np.array([single.score([s], [h])[0] for s, h in zip(SOURCES, HYPOTHESES)])
    np.testing.assert_allclose(scores, one_by_one, atol=1e-4, rtol=0)
    order = [3, 0, 4, 2, 1]
    permuted = batched.score([SOURCES[i] for i in order], [HYPOTHESES[i] for i in order])
    np.testing.assert_allclose(permuted, scores[order], atol=1e-4, rtol=0)
    assert len(set(np.round(scores, 3))) == len(scores)  # distinct values: a wrong order would show


def test_uncached_left_padding_matches_one_at_a_time(tiny_model_builder):
    path = tiny_model_builder(arch="llama", tokenizer="metaspace")  # no pad token, like Llama-2
    scorer = PluieScorer(str(path), template="direct", prefix_cache=False, batch_size=5)
    assert scorer.tokenizer.pad_token is None
    scores = scorer.score(SOURCES, HYPOTHESES)
    singles = [scorer.score([s], [h])[0] for s, h in zip(SOURCES, HYPOTHESES)]
    np.testing.assert_allclose(scores, singles, atol=1e-4, rtol=0)


def test_symmetric_is_the_mean_of_both_directions(tiny_model_builder):
    path = tiny_model_builder(arch="llama", tokenizer="bpe")
    scorer = PluieScorer(str(path), template="fs-direct")
    forward = scorer.score(SOURCES, HYPOTHESES)
    backward = scorer.score(HYPOTHESES, SOURCES)
    assert np.abs(forward - backward).max() > 1e-3  # PLUIE is not symmetric
    np.testing.assert_allclose(scorer.score(SOURCES, HYPOTHESES, symmetric=True), (forward + backward) / 2, atol=1e-4)


def test_out_of_memory_halves_the_batch(tiny_model_builder, monkeypatch):
    path = tiny_model_builder(arch="llama", tokenizer="bpe")
    scorer = PluieScorer(str(path), template="direct")
    expected = scorer.score(SOURCES, HYPOTHESES)
    real = scorer._last_logprobs
    sizes = []

    def small_memory(rows, prefix=None):
        sizes.append(len(rows))
        if len(rows) > 2:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return real(rows, prefix)

    monkeypatch.setattr(scorer, "_last_logprobs", small_memory)
    np.testing.assert_allclose(scorer.score(SOURCES, HYPOTHESES), expected, atol=1e-4)
    assert max(sizes) > 2 and scorer._auto_batch == 2


def test_token_budget_bounds_every_batch_and_keeps_the_scores(tiny_model_builder, monkeypatch):
    """Batches bounded by tokens (rows x padded length, the cached prefix included): the long pairs
    go in small batches, the short ones in large ones, and every score is today's (pair cap only)
    and the one-at-a-time score."""
    path = tiny_model_builder(arch="llama", tokenizer="bpe")
    today = PluieScorer(str(path), template="fs-direct", max_batch_tokens=10**9)
    sources = SOURCES + [" ".join([s] * 25) for s in SOURCES[:3]] + [s + " again" for s in SOURCES]
    hypotheses = HYPOTHESES + [" ".join([h] * 20) for h in HYPOTHESES[:3]] + [h + " too" for h in HYPOTHESES]
    expected = today.score(sources, hypotheses)
    assert today.last_run["batches"] == 1  # 13 pairs under the automatic pair cap of 16
    singles = np.array([today.score([s], [h])[0] for s, h in zip(sources, hypotheses)])
    np.testing.assert_allclose(expected, singles, atol=1e-4, rtol=0)

    prefix = len(today._shared_prefix()[0])
    suffixes = [len(today._encode(p)) - prefix for p in today.prompts(sources, hypotheses)]
    budget = 3 * (prefix + max(suffixes))  # three of the longest pairs, more of the short ones
    scorer = PluieScorer((today.model, today.tokenizer), template="fs-direct", max_batch_tokens=budget)
    real, batches = scorer._last_logprobs, []

    def spy(rows, prefix=None):
        batches.append((len(rows), max(len(r) for r in rows) + (len(prefix[0]) if prefix else 0)))
        return real(rows, prefix)

    monkeypatch.setattr(scorer, "_last_logprobs", spy)
    scores = scorer.score(sources, hypotheses)
    np.testing.assert_allclose(scores, expected, atol=1e-4, rtol=0)
    assert sum(n for n, _ in batches) == len(sources) and scorer.last_run["batches"] == len(batches)
    assert all(n * width <= budget for n, width in batches), batches
    assert batches[0][0] == 3 and max(n for n, _ in batches) > 3, batches  # longest first, short ones fuller

    tiny = PluieScorer((today.model, today.tokenizer), template="fs-direct", max_batch_tokens=1, batch_size=8)
    np.testing.assert_allclose(tiny.score(sources, hypotheses), expected, atol=1e-4, rtol=0)
    assert tiny.last_run["batches"] == len(sources)  # a budget below one pair still scores one at a time


def test_automatic_bounds_keep_todays_batches_on_cpu(tiny_model_builder):
    scorer = PluieScorer(str(tiny_model_builder(arch="llama", tokenizer="bpe")), template="fs-direct")
    sources, hypotheses = SOURCES * 4, HYPOTHESES * 4
    scorer.score(sources, hypotheses)
    assert scorer.last_run["batches"] == 2  # 20 short pairs: 16 + 4, as before the token budget
    # the per-token memory the GPU budget divides by covers the keys and values the prefix cache holds
    prefix_ids, prefix_kv = scorer._shared_prefix()
    kv_bytes = sum(k.nbytes + v.nbytes for k, v in prefix_kv) / len(prefix_ids)
    assert kv_bytes <= scorer._bytes_per_token() <= 4 * kv_bytes + 64 * scorer.model.config.intermediate_size


def test_progress_callback_reports_every_pair(tiny_model_builder):
    scorer = PluieScorer(str(tiny_model_builder()), template="direct", batch_size=2)
    seen = []
    scorer.score(SOURCES, HYPOTHESES, progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (len(SOURCES), len(SOURCES)) and len(seen) == 3


def test_indirect_generates_then_scores_the_summary(tiny_model_builder, float64_models):
    path = tiny_model_builder(arch="llama", tokenizer="bpe")
    scorer = PluieScorer(str(path), template="indirect", max_new_tokens=6, batch_size=4)
    explanations = scorer.generate_explanations(SOURCES, HYPOTHESES)
    assert all(isinstance(e, str) and e for e in explanations)
    assert all(len(scorer._encode(e)) <= 8 for e in explanations)  # bounded (re-tokenising may merge)
    singles = [scorer.generate_explanations([s], [h])[0] for s, h in zip(SOURCES, HYPOTHESES)]
    assert singles == explanations  # batched left-padded greedy generation = one at a time
    scores = scorer.score(SOURCES, HYPOTHESES)
    model = float64_models(path)
    reference = []
    for s, h, e in zip(SOURCES, HYPOTHESES, explanations):
        turns = scorer.template.messages(s, h, generated=e)
        assert turns[-2] == {"role": "assistant", "content": e}
        assert turns[-1]["content"] == 'Summarize your answer with only one word "yes" or "no".'
        prompt = scorer.tokenizer.apply_chat_template(turns, tokenize=False, add_generation_prompt=True)
        (yes, n), (no, _) = (model_loss(model, prompt + a, scorer.tokenizer) for a in ("Yes", "No"))
        reference.append(n * (no - yes))
    np.testing.assert_allclose(scores, reference, atol=1e-4, rtol=0)


def test_revision_template_uses_instruction_and_optional_gold(tiny_model_builder):
    scorer = PluieScorer(str(tiny_model_builder()), template="rev")
    originals, revisions = ["We propose a method."] * 2, ["We present a method.", "We propose a new method."]
    fields = {"instruction": ["Use a more formal verb.", "Be precise."], "reference": ["We introduce a method.", None]}
    prompts = scorer.prompts(originals, revisions, fields=fields)
    assert "We introduce a method." in prompts[0] and prompts[0].count("Instruction:") == 2
    assert prompts[1].count("Instruction:") == 1
    scores = scorer.score(originals, revisions, fields=fields)
    assert scores.shape == (2,) and np.isfinite(scores).all()
    with pytest.raises(PluieError, match="instruction"):
        scorer.score(originals, revisions)


def test_already_loaded_model_gives_the_same_scores(tiny_model_builder):
    path = tiny_model_builder(arch="qwen2", tokenizer="bpe")
    from_path = PluieScorer(str(path), template="direct").score(SOURCES, HYPOTHESES)
    model, tokenizer = AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)
    np.testing.assert_allclose(
        PluieScorer((model, tokenizer), template="direct").score(SOURCES, HYPOTHESES), from_path, atol=1e-6
    )
    np.testing.assert_allclose(
        PluieScorer(model, tokenizer=tokenizer, template="direct").score(SOURCES, HYPOTHESES), from_path, atol=1e-6
    )


def test_multi_token_answer_is_refused_with_its_tokenisation(tiny_model_builder):
    with pytest.raises(PluieError) as error:
        PluieScorer(str(tiny_model_builder()), template="direct", answers=("Yes", "Perhaps"))
    message = str(error.value)
    assert "'Perhaps' is not a single token" in message
    assert "exactly one token" in message and "choose other answer words" in message
    # Both spellings were tried and their tokenisations listed.
    assert "'Perhaps' -> ['P', " in message and "' Perhaps' -> ['Ġ" in message


def test_missing_model_directory_says_what_to_give(tmp_path):
    with pytest.raises(PluieError, match=r"No model found at .*nowhere: that directory does not exist"):
        PluieScorer(str(tmp_path / "nowhere"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(PluieError, match="is not a model directory \\(no config.json"):
        PluieScorer(str(tmp_path / "empty"))


def test_model_without_chat_template_is_refused(tiny_model_builder):
    path = tiny_model_builder()
    tokenizer = AutoTokenizer.from_pretrained(path)
    tokenizer.chat_template = None
    with pytest.raises(PluieError, match="has no chat template.*chat / instruct version"):
        PluieScorer((AutoModelForCausalLM.from_pretrained(path), tokenizer))


def test_bad_inputs_are_user_errors(tiny_model_builder):
    scorer = PluieScorer(str(tiny_model_builder()), template="direct")
    with pytest.raises(PluieError, match="2 sources but 1 hypotheses"):
        scorer.score(["a", "b"], ["c"])
    with pytest.raises(PluieError, match="Pair 2 has no hypothesis"):
        scorer.score(["a", "b"], ["c", None])
    assert scorer.score([], []).shape == (0,)


def test_answers_default_to_the_templates_own(tiny_model_builder):
    scorer = PluieScorer(str(tiny_model_builder()), template="fs-direct-fr")
    assert scorer.answers == ("Oui", "Non")
    assert scorer.tokenizer.convert_ids_to_tokens(list(scorer.answer_ids)) == ["Oui", "Non"]
    assert "« oui » ou « non »" in scorer.prompts(["a"], ["b"])[0]
    swapped = PluieScorer((scorer.model, scorer.tokenizer), template="fs-direct-fr", answers=("Non", "Oui"))
    np.testing.assert_allclose(
        swapped.score(SOURCES[:2], HYPOTHESES[:2]), -scorer.score(SOURCES[:2], HYPOTHESES[:2]), atol=1e-5
    )


def test_package_exports_the_scorer():
    import pluie_core

    assert pluie_core.PluieScorer is PluieScorer and pluie_core.PluieError is PluieError
