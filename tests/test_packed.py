"""pluie_core.packed: the packed CPU pass gives the generic path's scores, and only where it knows the model.

The generic path (the model's own forward, the shared prefix as a cache) is itself checked against the
papers' two-pass formula in test_scorer.py and, on real weights, test_demo_judge.py; here the two paths
score the same pairs on the same weights."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from pluie_core.packed import packed_forward
from pluie_core.scorer import PluieScorer
from tests import test_scorer as scorer_tests

# test_scorer's pairs, and two longer MRPC pairs so that a batch's rows differ in length
SOURCES = scorer_tests.SOURCES + [
    "He said the foodservice pie business does n't fit the company 's long-term growth strategy .",
    "Yucaipa owned Dominick 's before selling the chain to Safeway in 1998 for $ 2.5 billion .",
]
HYPOTHESES = scorer_tests.HYPOTHESES + [
    "The foodservice pie business does not fit our long-term growth strategy , he said .",
    "Yucaipa bought Dominick 's in 1995 for $ 693 million and sold it to Safeway for $ 1.8 billion in 1998 .",
]


def both_paths(model, tokenizer, **kwargs):
    packed = PluieScorer((model, tokenizer), **kwargs)
    generic = PluieScorer((model, tokenizer), packed=False, **kwargs)
    return packed, generic


def scored_both_ways(model, tokenizer, **kwargs):
    """FS-DIRECT scores of the pairs by the packed pass and by the generic path, and the packed scorer's
    last_run (which path its pairs took)."""
    packed, generic = both_paths(model, tokenizer, template="fs-direct", **kwargs)
    scores = packed.score(SOURCES, HYPOTHESES)
    return scores, generic.score(SOURCES, HYPOTHESES), packed.last_run


@pytest.mark.parametrize("arch", ["llama", "mistral", "qwen2"])
@pytest.mark.parametrize("batch_size", [None, 3])
def test_packed_pass_equals_the_models_own_forward(tiny_model_builder, arch, batch_size):
    path = tiny_model_builder(arch=arch)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(path)
    packed, generic = both_paths(model, tokenizer, template="fs-direct", batch_size=batch_size)
    expected, expected_logprobs = generic.score(SOURCES, HYPOTHESES, return_logprobs=True)
    assert "packed" not in generic.last_run
    scores, logprobs = packed.score(SOURCES, HYPOTHESES, return_logprobs=True)
    assert packed.last_run["packed"] == len(SOURCES) == packed.last_run["cached"]
    assert packed.last_run["batches"] == (1 if batch_size is None else 3)
    np.testing.assert_allclose(logprobs, expected_logprobs, atol=2e-5, rtol=0)
    np.testing.assert_allclose(scores, expected, atol=2e-5, rtol=0)
    assert np.ptp(scores) > 100 * 2e-5  # different pairs, different scores: the comparison means something
    # symmetric mode goes through the same pass, both directions
    np.testing.assert_allclose(
        packed.score(SOURCES, HYPOTHESES, symmetric=True),
        generic.score(SOURCES, HYPOTHESES, symmetric=True),
        atol=2e-5,
        rtol=0,
    )


def test_the_model_keeps_one_copy_of_its_weights_and_its_own_forward(tiny_model_builder):
    path = tiny_model_builder(arch="llama")
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(path)
    ids = torch.tensor([tokenizer("The cat drinks water.")["input_ids"]])
    with torch.no_grad():
        before = model(input_ids=ids).logits
    weights = {name: p.detach().clone() for name, p in model.named_parameters()}
    packed = packed_forward(model, torch.device("cpu"))
    assert packed is not None
    attention, mlp = model.model.layers[0].self_attn, model.model.layers[0].mlp
    qkv, gate_up = packed.fused[0][0][0], packed.fused[0][1][0]
    # the model's parameters are views of the concatenations: nothing is held twice
    assert attention.q_proj.weight.data_ptr() == qkv.data_ptr()
    assert attention.v_proj.weight.untyped_storage().data_ptr() == qkv.untyped_storage().data_ptr()
    assert mlp.up_proj.weight.untyped_storage().data_ptr() == gate_up.untyped_storage().data_ptr()
    for name, p in model.named_parameters():
        assert torch.equal(p, weights[name]), name
    with torch.no_grad():
        assert torch.equal(model(input_ids=ids).logits, before)
    # a second scorer on the same weights reuses the pass (no second concatenation)
    assert packed_forward(model, torch.device("cpu")) is packed
    # weights moved or cast since: the pass is built again on the new ones
    model.to(torch.bfloat16)
    again = packed_forward(model, torch.device("cpu"))
    assert again is not packed and again.fused[0][0][0].dtype == torch.bfloat16
    assert (
        model.model.layers[0].self_attn.k_proj.weight.untyped_storage().data_ptr()
        == again.fused[0][0][0].untyped_storage().data_ptr()
    )


def test_biases_in_attention_and_mlp_are_applied(tiny_model_builder):
    """Llama with attention_bias and mlp_bias (the tiny builder's models have none): every bias counts."""
    from transformers import LlamaConfig

    path = tiny_model_builder(arch="llama")
    tokenizer = AutoTokenizer.from_pretrained(path)
    base = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    config = LlamaConfig(**{**base.config.to_dict(), "attention_bias": True, "mlp_bias": True})
    torch.manual_seed(1)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(".bias"):
                p.normal_(0, 0.5)
    scores, expected, last_run = scored_both_ways(model, tokenizer)
    assert last_run["packed"] == len(SOURCES)
    np.testing.assert_allclose(scores, expected, atol=2e-5, rtol=0)


def test_models_it_does_not_know_take_the_generic_path(tiny_model_builder):
    # another architecture
    path = tiny_model_builder(arch="gpt_neox")
    scorer = PluieScorer(str(path), template="fs-direct")
    scorer.score(SOURCES[:2], HYPOTHESES[:2])
    assert scorer.last_run["cached"] == 2 and "packed" not in scorer.last_run
    # float64 weights (the flash kernel's merge is checked in float32 / bfloat16 only)
    path = tiny_model_builder(arch="llama")
    scorer = PluieScorer(str(path), template="fs-direct", dtype=torch.float64)
    scorer.score(SOURCES[:2], HYPOTHESES[:2])
    assert "packed" not in scorer.last_run
    # a layer with more in it than the pass runs (Qwen3's query / key norms)
    from transformers import Qwen3Config

    tokenizer = AutoTokenizer.from_pretrained(path)
    qwen3 = AutoModelForCausalLM.from_config(
        Qwen3Config(
            vocab_size=len(tokenizer),
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=16,
        ),
        dtype=torch.float32,
    )
    assert packed_forward(qwen3, torch.device("cpu")) is None
    # the packed pass is switched off
    scorer = PluieScorer(str(path), template="fs-direct", packed=False)
    scorer.score(SOURCES[:2], HYPOTHESES[:2])
    assert "packed" not in scorer.last_run


@pytest.mark.parametrize("window, packed", [(64, False), (4096, True)])
def test_a_sliding_window_shorter_than_the_prompt_keeps_the_models_own_attention(tiny_model_builder, window, packed):
    """Mistral attends through a window: shorter than the prompts, the model's own attention applies it;
    longer than every prompt, it changes nothing and the packed pass runs."""
    path = tiny_model_builder(arch="mistral")
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, sliding_window=window)
    scores, expected, last_run = scored_both_ways(model, AutoTokenizer.from_pretrained(path))
    assert last_run["cached"] == len(SOURCES) and last_run.get("packed", 0) == (len(SOURCES) if packed else 0)
    np.testing.assert_allclose(scores, expected, atol=2e-5 if packed else 0, rtol=0)


def test_bfloat16_weights_take_the_packed_pass_within_bfloat16_rounding(tiny_model_builder):
    path = tiny_model_builder(arch="llama")
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16)
    tokenizer = AutoTokenizer.from_pretrained(path)
    scores, expected, last_run = scored_both_ways(model, tokenizer, dtype=torch.bfloat16)
    assert last_run["packed"] == len(SOURCES)
    # bfloat16 keeps 8 bits of mantissa: the two arrangements round differently, by about 1% of the scores
    np.testing.assert_allclose(scores, expected, atol=0.05 * np.abs(expected).max(), rtol=0)
    assert np.corrcoef(scores, expected)[0, 1] > 0.99


@pytest.mark.parametrize("arch", ["llama", "mistral", "qwen2"])
def test_the_prefix_is_encoded_by_the_packed_pass_as_the_models_own_cache(tiny_model_builder, arch):
    path = tiny_model_builder(arch=arch)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    scorer = PluieScorer((model, AutoTokenizer.from_pretrained(path)), template="fs-direct")
    ids = scorer._encode(scorer.prompts(SOURCES[:1], HYPOTHESES[:1])[0])[:300]
    with torch.inference_mode():
        expected = model(input_ids=torch.tensor([ids]), use_cache=True).past_key_values.layers
        cache = packed_forward(model, torch.device("cpu")).encode_prefix(ids)
    assert len(cache) == len(expected) == model.config.num_hidden_layers
    for (keys, values), layer in zip(cache, expected):
        assert keys.shape == layer.keys.shape == (1, model.config.num_key_value_heads, len(ids), 16)
        torch.testing.assert_close(keys, layer.keys, atol=1e-5, rtol=0)
        torch.testing.assert_close(values, layer.values, atol=1e-5, rtol=0)
    # the scorer's own prefix comes from it
    prefix_ids, prefix_kv = scorer._shared_prefix()
    with torch.inference_mode():
        own = packed_forward(model, torch.device("cpu")).encode_prefix(prefix_ids)
    assert all(torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) for a, b in zip(prefix_kv, own))


@pytest.mark.parametrize("kernels", ["torch.matmul", "oneDNN on the model's weights", "oneDNN blocked copies"])
def test_every_matrix_multiply_kernel_gives_the_generic_scores(tiny_model_builder, monkeypatch, kernels):
    """The linear layers run through oneDNN where torch has it (blocked weight copies for a small model),
    else torch's matmul: the three give the same scores."""
    import pluie_core.packed as packed_module

    if not packed_module.onednn_works(torch, torch.float32):
        pytest.skip("this torch build has no oneDNN linear kernel")
    if kernels == "torch.matmul":
        monkeypatch.setattr(packed_module, "onednn_works", lambda torch, dtype: False)
    elif kernels == "oneDNN on the model's weights":
        monkeypatch.setattr(packed_module, "PREPACK_BYTES", 0)
    path = tiny_model_builder(arch="llama")
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    scores, expected, last_run = scored_both_ways(model, AutoTokenizer.from_pretrained(path))
    assert last_run["packed"] == len(SOURCES)
    np.testing.assert_allclose(scores, expected, atol=2e-5, rtol=0)
    built = model._pluie_packed
    assert built.onednn == (kernels != "torch.matmul")
    assert built.prepacked == (kernels == "oneDNN blocked copies")
    if built.prepacked:
        assert built.compute[0][2][0].is_mkldnn and not model.model.layers[0].mlp.gate_proj.weight.is_mkldnn


def test_weights_changed_in_place_rebuild_the_blocked_copies(tiny_model_builder):
    path = tiny_model_builder(arch="llama")
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(path)
    first = packed_forward(model, torch.device("cpu"))
    assert packed_forward(model, torch.device("cpu")) is first
    # a weight of its own, then one that is a view of a concatenation (q / k / v, gate / up)
    for weight in (
        model.model.layers[1].mlp.down_proj.weight,
        model.model.layers[0].self_attn.k_proj.weight,
        model.model.layers[1].mlp.up_proj.weight,
    ):
        with torch.no_grad():
            weight.mul_(3)
        changed = packed_forward(model, torch.device("cpu"))
        assert (changed is not first) == first.prepacked
        scores, expected, _ = scored_both_ways(model, tokenizer)
        np.testing.assert_allclose(scores, expected, atol=2e-5, rtol=0)
        first = changed
