"""Tiny random-weight chat models for tests and benchmarks (no download, no GPU).

``build_tiny_model(directory, ...)`` trains a tokenizer on the fly with the ``tokenizers``
library, builds a random-weight causal LM from a config, attaches a Jinja chat template that
closes *every* turn with an end-of-turn token (the assistant's too, as real chat models do),
and saves model + tokenizer with ``save_pretrained``. The returned directory is then loaded
exactly like a user's local model path: ``AutoTokenizer.from_pretrained(path)`` /
``AutoModelForCausalLM.from_pretrained(path)`` or ``PluieScorer(str(path))``.

Stable signature (the worker's tests use it too; ``build_tiny_tokenizer(tokenizer, vocab_size,
extra_text)`` returns just the tokenizer)::

    build_tiny_model(directory, arch="llama", tokenizer="bpe", vocab_size=1024,
                     hidden_size=64, num_layers=2, num_heads=4, seed=0,
                     model_vocab_size=None, extra_text=()) -> Path

- ``arch``: "llama", "mistral", "qwen2" or "gpt_neox". transformers reloads qwen2 (and
  gpt_neox) directories with their own byte-level tokenizer classes, so pair "qwen2" with
  "bpe"; a combination that does not reload faithfully raises ValueError.
- ``tokenizer``:
    "bpe"       byte-level BPE with "Ġ" spaces (GPT-2 / Qwen style), ChatML template
                (<|im_start|>role\\n ... <|im_end|>\\n), pad token set;
    "metaspace" BPE over a Metaspace "▁" pre-tokenizer (Llama-2 style), Llama-2-chat
                template "<s>[INST] ... [/INST] answer </s>" (answer token "▁Yes"),
                *no* pad token (as Llama-2 / Mistral);
    "unigram"   Unigram over Metaspace "▁" (SentencePiece-unigram style), Mistral-Instruct
                template "<s>[INST] ... [/INST]answer</s>" (bare "Yes"), no pad token.
- ``vocab_size``: target size of the trained tokenizer vocabulary; ``model_vocab_size``
  (default: the same, raised to the real tokenizer size) is the embedding size of the model,
  so a benchmark can have a 32k-row head with a smaller trained vocabulary.

"Yes", "No", "Oui", "Non" and their leading-space variants are guaranteed single tokens
(checked after training). Pytest fixtures: ``tiny_model_builder`` (session-scoped factory,
cached per argument set) and ``tiny_model_path`` (the default Llama + byte-level BPE model);
import them in a test module or a conftest.py to use them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ARCHITECTURES = ("llama", "mistral", "qwen2", "gpt_neox")
TOKENIZER_STYLES = ("bpe", "metaspace", "unigram")

CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

# Llama-2-chat-like: the assistant's answer is rendered " answer </s>" (a leading space, so the
# answer token is the "▁Yes" variant).
LLAMA2_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{% if message['role'] == 'system' %}{{ '<<SYS>>\n' + message['content'] + '\n<</SYS>>\n\n' }}"
    "{% elif message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}"
    "{% else %}{{ ' ' + message['content'] + ' ' + eos_token }}{% endif %}"
    "{% endfor %}"
)

# Mistral-Instruct-like: the assistant's answer follows "[/INST]" directly (bare "Yes" token)
# and is closed by </s>.
INST_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{% if message['role'] == 'system' %}{{ '<<SYS>>\n' + message['content'] + '\n<</SYS>>\n\n' }}"
    "{% elif message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}"
    "{% else %}{{ message['content'] + eos_token }}{% endif %}"
    "{% endfor %}"
)

_BASE_CORPUS = """\
You will receive two sentences A and B. Do these two sentences mean the same thing?
Answer with only one word "yes" or "no". Please provide the sentences for me to evaluate.
Summarize your answer with only one word "yes" or "no".
A: "The cat drinks water."; B: "The cat drinks milk."
The quick brown fox jumps over the lazy dog. Have you ever seen a tsunami ? Have you ever seen a tiramisu ?
Amrozi accused his brother, whom he called "the witness", of deliberately distorting his evidence .
The Indian Malayalam film 'Pennmakkal', released in 1966, was produced by J. Sasikumar.
Gilroy police and FBI agents described Gehring as cooperative, but said Saturday that he had revealed nothing.
The electric charge of the particle is denoted by "e", and the magnetic vector potential is denoted by 'A'.
The Jidanul River is a tributary of the Jiul de Vest River in Romania.
Vous allez recevoir deux phrases A et B. Ces deux phrases veulent-elles dire la même chose ?
Répondez par un seul mot « oui » ou « non ». Donnez-moi les phrases à évaluer. À ça où été.
Does the revised text follow the instruction? Does this network policy allow the traffic?
Instruction: Revision: Original: Policy: Reference revision: Explanation: 0123456789 %$#@&*+-=/\\|<>[]{}()_~`^!?.,;:'"
"""

_ANSWERS = ("Yes", "No", "Oui", "Non", "yes", "no", "oui", "non")


def _training_text(extra_text) -> list[str]:
    lines = _BASE_CORPUS.splitlines()
    try:  # The real template wording makes prompts short in tokens; optional so this file stands alone.
        from pluie_core.templates import BUILTIN_TEMPLATES

        for template in BUILTIN_TEMPLATES.values():
            lines += [turn["content"] for turn in template.turns]
    except Exception:
        pass
    lines += list(extra_text)
    # Repetition makes every answer word (bare and after a space) merge into a single token.
    # Varied left neighbours ("]Yes", '"Yes', ...) make the bare form a token for Metaspace styles
    # without any single "]Yes"-like merge winning.
    answer_line = " ".join(f'{a} {a}. ]{a} "{a}" ({a}) :{a} -{a}' for a in _ANSWERS)
    lines += ["system user assistant <<SYS>> <</SYS>> [INST] [/INST]"] * 20
    return lines + [answer_line] * 200


def _train_tokenizer(style: str, vocab_size: int, extra_text):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    if style == "bpe":
        specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size,
            special_tokens=specials,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        )
    elif style in ("metaspace", "unigram"):
        specials = ["<unk>", "<s>", "</s>"]
        if style == "metaspace":
            tok = Tokenizer(models.BPE(unk_token="<unk>"))
            trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials, show_progress=False)
        else:
            tok = Tokenizer(models.Unigram())
            trainer = trainers.UnigramTrainer(
                vocab_size=vocab_size, special_tokens=specials, unk_token="<unk>", show_progress=False
            )
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first")
        tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="first")
    else:
        raise ValueError(f"unknown tokenizer style {style!r}; choose one of {TOKENIZER_STYLES}")
    tok.train_from_iterator(_training_text(extra_text), trainer=trainer)
    if style == "unigram":
        _make_unigram_deterministic(tok, specials)
    return tok


def _make_unigram_deterministic(tok, specials) -> None:
    """The Unigram trainer finds the same pieces every run but in a thread-dependent id order,
    with scores that differ in far decimals; fix both so a build is reproducible."""
    import json

    from tokenizers import models

    vocab = json.loads(tok.to_str())["model"]["vocab"]
    special = [(p, 0.0) for p, _ in vocab if p in specials]
    pieces = sorted(((p, round(s, 2)) for p, s in vocab if p not in specials), key=lambda ps: (-ps[1], ps[0]))
    tok.model = models.Unigram(special + pieces, unk_id=specials.index("<unk>"), byte_fallback=False)


def _wrap_tokenizer(raw, style: str):
    from transformers import PreTrainedTokenizerFast

    if style == "bpe":
        hf = PreTrainedTokenizerFast(
            tokenizer_object=raw,
            bos_token=None,
            eos_token="<|im_end|>",
            pad_token="<|endoftext|>",
            unk_token=None,
        )
        hf.chat_template = CHATML_TEMPLATE
    else:
        hf = PreTrainedTokenizerFast(tokenizer_object=raw, bos_token="<s>", eos_token="</s>", unk_token="<unk>")
        hf.chat_template = LLAMA2_TEMPLATE if style == "metaspace" else INST_TEMPLATE
    return hf


def build_tiny_tokenizer(tokenizer: str = "bpe", vocab_size: int = 1024, extra_text=()):
    """Just the trained tokenizer (a transformers fast tokenizer with its chat template), for
    callers that build their own model, e.g. bench/scorer.py's Mistral-7B-sized one."""
    hf_tokenizer = _wrap_tokenizer(_train_tokenizer(tokenizer, vocab_size, extra_text), tokenizer)
    _check_single_tokens(hf_tokenizer, tokenizer)
    return hf_tokenizer


def _check_single_tokens(hf, style: str) -> None:
    space = "Ġ" if style == "bpe" else "▁"
    vocab = hf.get_vocab()
    missing = [w for a in _ANSWERS for w in (a, space + a) if w not in vocab]
    if missing:
        raise RuntimeError(f"tiny tokenizer ({style}) lacks single tokens for {missing}; raise vocab_size")


def _config(arch: str, vocab: int, hidden: int, layers: int, heads: int, special_ids: dict):
    from transformers import GPTNeoXConfig, LlamaConfig, MistralConfig, Qwen2Config

    common = dict(
        vocab_size=vocab,
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        max_position_embeddings=8192,
        # Wider than the 0.02 default so random-weight scores spread over a few units, which keeps
        # a 1e-4 comparison meaningful.
        initializer_range=0.2,
        tie_word_embeddings=False,
        **special_ids,
    )
    if arch == "llama":
        return LlamaConfig(num_key_value_heads=max(1, heads // 2), **common)
    if arch == "mistral":
        return MistralConfig(num_key_value_heads=max(1, heads // 2), sliding_window=None, **common)
    if arch == "qwen2":
        return Qwen2Config(num_key_value_heads=max(1, heads // 2), **common)
    if arch == "gpt_neox":
        return GPTNeoXConfig(rotary_pct=0.5, use_parallel_residual=True, **common)
    raise ValueError(f"unknown architecture {arch!r}; choose one of {ARCHITECTURES}")


def build_tiny_model(
    directory,
    arch: str = "llama",
    tokenizer: str = "bpe",
    vocab_size: int = 1024,
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 4,
    seed: int = 0,
    model_vocab_size: int | None = None,
    extra_text=(),
) -> Path:
    """Build and save a tiny random chat model in ``directory``; return that directory (a Path).

    Deterministic for a given argument set (tokenizer training and weights are seeded).
    """
    import torch
    from transformers import AutoModelForCausalLM

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    raw = _train_tokenizer(tokenizer, vocab_size, extra_text)
    hf_tokenizer = _wrap_tokenizer(raw, tokenizer)
    _check_single_tokens(hf_tokenizer, tokenizer)

    vocab = max(len(hf_tokenizer), model_vocab_size or vocab_size)
    ids = {
        "bos_token_id": hf_tokenizer.bos_token_id,
        "eos_token_id": hf_tokenizer.eos_token_id,
        "pad_token_id": hf_tokenizer.pad_token_id,
    }
    config = _config(arch, vocab, hidden_size, num_layers, num_heads, ids)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.generation_config.pad_token_id = hf_tokenizer.pad_token_id or hf_tokenizer.eos_token_id
    model.save_pretrained(directory)
    hf_tokenizer.save_pretrained(directory)
    _check_reload(directory, raw, arch, tokenizer)
    return directory


def _check_reload(directory: Path, raw, arch: str, style: str) -> None:
    """transformers 5 maps some model types to their own tokenizer class (qwen2 -> Qwen2Tokenizer,
    always byte-level); refuse a combination whose reloaded tokenizer is not the one trained."""
    from transformers import AutoTokenizer

    sample = 'A: "Have you ever seen a tsunami ?"; B: "Yes" [/INST] Yes'
    reloaded = AutoTokenizer.from_pretrained(directory)
    if reloaded(sample, add_special_tokens=False)["input_ids"] != raw.encode(sample, add_special_tokens=False).ids:
        raise ValueError(
            f"transformers reloads the {arch!r} model with its own tokenizer class "
            f"({type(reloaded).__name__}), which does not reproduce the {style!r} tokenizer; "
            f"pair {arch!r} with another tokenizer style (qwen2 needs 'bpe')."
        )


@pytest.fixture(scope="session")
def tiny_model_builder(tmp_path_factory):
    """Factory: ``tiny_model_builder(arch="qwen2", tokenizer="metaspace")`` -> saved model dir.

    Builds each distinct argument set once per test session."""
    built: dict = {}

    def build(**kwargs) -> Path:
        key = tuple(sorted(kwargs.items()))
        if key not in built:
            name = "tiny-" + "-".join(f"{k}{v}" for k, v in key) if key else "tiny-default"
            built[key] = build_tiny_model(tmp_path_factory.mktemp(name[:60]), **kwargs)
        return built[key]

    return build


@pytest.fixture(scope="session")
def tiny_model_path(tiny_model_builder) -> Path:
    """The default tiny model: Llama architecture, byte-level BPE tokenizer, ChatML template."""
    return tiny_model_builder()
