"""PLUIE: log p(answer1 | Tpl(S, H)) − log p(answer2 | Tpl(S, H)) from a chat LLM, in one pass.

    >>> scorer = PluieScorer("mistralai/Mistral-7B-Instruct-v0.2", template="fs-direct")
    >>> scorer.score(["Have you ever seen a tsunami ?"], ["Have you ever seen a tiramisu ?"])
    array([-16.976...])   # published check value (reference implementation, bf16 GPU); not
                          # checkable offline: the tests use tiny random models instead.

The papers computed the score with two forward passes per pair,
(T+1)·(loss(Tpl∘No) − loss(Tpl∘Yes)); the log-probabilities of every prompt token cancel, so one
forward pass over the prompt and a log-softmax of the *last* position's logits give the same value.
This module does that, and:

- renders each template through the model's own chat template with ``add_generation_prompt=True``,
  so the prompt ends where the one-word answer begins; the end-of-turn tokens that the chat
  template puts after an answer are never part of what is scored;
- resolves each answer word to the single token the tokenizer produces right after that point
  (trying the chat template's own spacing, the bare word and its leading-space variant), and
  raises PluieError with the tokenisation when it is not one token;
- sorts prompts by length, left-pads batches with explicit position ids, and restores input order;
- encodes the template's shared prefix (e.g. FS-DIRECT's few-shot block) once and reuses its KV
  cache for every batch, checking per pair that the prompt really starts with the cached tokens
  (pairs that do not take the uncached path);
- asks the model for the last position's logits only (``logits_to_keep=1``) and does the
  log-softmax in float32;
- on CPU, for Llama / Mistral / Qwen2 models, runs the pairs that reuse the prefix through
  pluie_core.packed instead of the model's own forward: their tokens packed without padding, the
  prefix attended once per batch for all of them (same scores, about 1.2x faster on 2 cores);
- bounds each batch by a pair count *and* a token budget (rows × padded length, the cached prefix
  included): long pairs go in small batches, short ones in large ones; both are automatic unless
  given, and halve on out-of-memory;
- for INDIRECT-like templates, first generates the explanation (batched, greedy, bounded length);
- with ``render_seconds`` (the worker, and check_model always), renders the model's chat template, which
  is code that comes with the model, in a child process, each prompt bounded in time (pluie_core.chat_render).

bf16 on GPU, float32 on CPU by default.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import numpy as np

from pluie_core import chat_render
from pluie_core.gguf_files import one_reader
from pluie_core.hub import ModelNotFound, find_model, from_transformers, hub_usable, import_locked, pickle_refusal
from pluie_core.inputs import sentence_pairs
from pluie_core.templates import Template, TemplateError, get_template

if TYPE_CHECKING:
    from pluie_core.packed import PackedForward

_PREFIX_MARGIN = 2  # tokens dropped from the shared prefix: a merge across its end could differ per pair
_MIN_PREFIX = 8  # shorter shared prefixes are not worth a cache
_CPU_BATCH_TOKENS = 16384  # automatic token budget per forward pass on CPU (16 pairs of up to 1,024 tokens)


class PluieError(ValueError):
    """A problem the user can fix (model, template, answers, inputs); the message says what to change."""


def _resolve_device(device):
    import torch

    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


PRECISIONS = ("float32", "bfloat16", "float16")  # what a model can compute in: torch's dtypes of these names
_PRECISION_ALIASES = {"bf16": "bfloat16", "fp16": "float16", "half": "float16", "fp32": "float32", "float": "float32"}


def precision_name(dtype) -> str:
    """The name in PRECISIONS of a dtype given by any of its names ("bf16", "half", "float32"...); a
    PluieError for one that is not there."""
    name = _PRECISION_ALIASES.get(str(dtype).lower(), str(dtype).lower())
    if name not in PRECISIONS:
        raise PluieError(f"Unknown dtype {dtype!r}; use bfloat16, float16 or float32.")
    return name


def _resolve_dtype(dtype, device):
    import torch

    if dtype is None:
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    if isinstance(dtype, torch.dtype):
        return dtype
    return getattr(torch, precision_name(dtype))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0].rstrip(". ") if text else exc.__class__.__name__


QUANTIZATIONS = ("8bit", "4bit")
# accelerate's strategies that spread a model over the GPUs ("auto" also falls back to the CPU)
GPU_DEVICE_MAPS = ("balanced", "balanced_low_0", "sequential")


def check_placement(device_map=None, quantization=None, cuda: bool | None = None) -> None:
    """Refuse, with one sentence, a device map or quantisation this machine cannot do.

    device_map: None (one device), "auto" (accelerate: the GPUs first, then the CPU; everything on the
    CPU without a GPU), "cpu", "balanced" / "balanced_low_0" / "sequential" (spread over the GPUs:
    needs CUDA), or a ``{module: device}`` dict. quantization: None, "8bit" or "4bit" (bitsandbytes, on
    CUDA only). cuda: whether CUDA GPUs are visible (default: ask torch)."""
    import importlib.util

    if device_map is None and quantization is None:
        return
    if quantization is not None and quantization not in QUANTIZATIONS:
        raise PluieError(f"Unknown quantization {quantization!r}; use 8bit or 4bit.")
    if isinstance(device_map, str) and device_map not in ("auto", "cpu", *GPU_DEVICE_MAPS):
        raise PluieError(
            f"Unknown device map {device_map!r}; use auto, cpu, balanced, balanced_low_0, "
            "sequential, or a {module: device} mapping."
        )
    if importlib.util.find_spec("accelerate") is None:
        raise PluieError(
            "Loading with a device map or in 8-bit / 4-bit needs the accelerate package, which is "
            "not installed: pip install accelerate."
        )
    if cuda is None:
        import torch

        cuda = torch.cuda.is_available()
    if quantization is not None:
        if not cuda:
            raise PluieError(
                f"{quantization[0]}-bit loading needs a CUDA GPU (bitsandbytes) and this machine has "
                "none; load the model in bfloat16 / float32 instead, or run on a GPU machine."
            )
        if importlib.util.find_spec("bitsandbytes") is None:
            raise PluieError(
                f"{quantization[0]}-bit loading needs the bitsandbytes package, which is not "
                "installed: pip install bitsandbytes."
            )
    gpu_map = device_map in GPU_DEVICE_MAPS or (
        isinstance(device_map, dict) and any(str(d) not in ("cpu", "disk") for d in device_map.values())
    )
    if gpu_map and not cuda:
        raise PluieError(
            f"Sharding the model across GPUs (device map {device_map!r}) needs CUDA GPUs and this "
            "machine has none; use device_map='auto' or 'cpu', or no device map."
        )


def _locate(name: str):
    """pluie_core.hub.find_model, its refusal as a PluieError."""
    try:
        return find_model(name)
    except ModelNotFound as exc:
        raise PluieError(str(exc)) from None


def _find_gguf(name: str) -> Path | None:
    """The GGUF file a local name points at (a .gguf file, or a directory without a config.json holding
    one: pluie_core.gguf_files.find_gguf), else None; a PluieError with one sentence for a bad file."""
    from pluie_core.gguf_files import GGUFError, find_gguf

    path = Path(os.path.expanduser(str(name)))
    if not path.exists():
        return None
    try:
        return find_gguf(path)
    except GGUFError as exc:
        raise PluieError(str(exc)) from None


def _gguf_metadata(path: Path):
    """The checked metadata of a GGUF model (a PluieError with one sentence when it cannot be used)."""
    from pluie_core.gguf_files import GGUFError, read_metadata

    try:
        return read_metadata(path)
    except GGUFError as exc:
        raise PluieError(str(exc)) from None


def load_model_and_tokenizer(name: str, device, dtype, device_map=None, quantization=None):
    """Load a causal LM and its tokenizer from a Hugging Face id or a local directory: onto one device,
    or placed by accelerate (``device_map``), optionally quantised to 8 / 4 bits (see check_placement)."""
    AutoModelForCausalLM, AutoTokenizer = from_transformers("AutoModelForCausalLM", "AutoTokenizer")

    check_placement(device_map, quantization)
    gguf = _find_gguf(name)
    if gguf is not None:
        _gguf_metadata(gguf)  # an architecture transformers cannot dequantise: one sentence, before loading
        source, local_only, placed, folder = str(gguf.parent), True, {"gguf_file": gguf.name}, None
    else:
        location = _locate(name)
        source, folder = location.source, Path(location.config_path).parent
        # a model on this machine is read from it alone: no minute of retries when the hub is unreachable
        local_only = location.where == "directory" or not hub_usable()
        placed = {}
    if quantization is not None:
        BitsAndBytesConfig = from_transformers("BitsAndBytesConfig")

        placed["quantization_config"] = (
            BitsAndBytesConfig(load_in_8bit=True)
            if quantization == "8bit"
            else BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=dtype)
        )
        placed["device_map"] = device_map or "auto"
    elif device_map is not None:
        placed["device_map"] = device_map
    try:
        # a GGUF file is parsed once for its config, its tokenizer and its weights (gguf_files.one_reader)
        with one_reader(gguf) if gguf is not None else contextlib.nullcontext():
            tokenizer = (
                _gguf_tokenizer(str(gguf))
                if gguf is not None
                else AutoTokenizer.from_pretrained(source, local_files_only=local_only)
            )
            model = AutoModelForCausalLM.from_pretrained(source, dtype=dtype, local_files_only=local_only, **placed)
    except Exception as exc:  # transformers raises many types (OSError, HF hub errors, ValueError)
        refused = pickle_refusal(name, exc, folder)  # never torch's advice to load it unsafely
        if refused:
            raise PluieError(refused) from None
        raise PluieError(
            f"Could not load the model {name!r}: {_first_line(exc)}. Check the model id or directory; "
            "without internet access the model must already be in the Hugging Face cache or on disk."
        ) from None
    return (model if _placed(model) else model.to(device)), tokenizer


def _placed(model) -> bool:
    """Whether accelerate placed the model (device map) or it is quantised: it must not be moved."""
    return bool(getattr(model, "hf_device_map", None)) or bool(getattr(model, "is_quantized", False))


def _input_device(model):
    """Where the inputs go: the device of the input embeddings (the first shard)."""
    return model.get_input_embeddings().weight.device


def grouped_attention_on_cpu() -> None:
    """Let transformers' SDPA attention run grouped-query attention on the CPU without copying the keys
    and values once per query head (``enable_gqa``). transformers does that only without a mask, since
    CUDA's fast kernels need none; a PLUIE batch always has one (its left padding), so on CPU it copied
    every layer's keys and values 3× for SmolLM2 (9 query heads, 3 key/value heads) before attending.
    torch's CPU kernel takes grouped heads with a mask and gives the same numbers (bench/scorer.py:
    the scores still equal the papers' two-pass formula). CUDA and other devices keep transformers' rule.
    Installed once per process, for every model loaded after it (PluieScorer and the LLM judges)."""
    sdpa = import_locked("transformers.integrations.sdpa_attention")
    original = sdpa.use_gqa_in_sdpa
    if getattr(original, "pluie_cpu", False):
        return

    def use_gqa_in_sdpa(attention_mask, key, value):
        if key.device.type == "cpu" and key.shape[-1] == value.shape[-1]:
            return True
        return original(attention_mask, key, value)

    use_gqa_in_sdpa.pluie_cpu = True  # type: ignore[attr-defined]  # the mark that it is ours
    sdpa.use_gqa_in_sdpa = use_gqa_in_sdpa


def load_or_adopt(model, tokenizer, device, dtype, device_map=None, quantization=None, owner: str = "PluieScorer"):
    """The model a scorer or judge works with, as ``(model, tokenizer, device, dtype, name)``.

    model: a Hugging Face id, a local directory or a .gguf file (loaded onto ``device``, or placed by accelerate
    with ``device_map`` / ``quantization``: see check_placement), an already-loaded causal LM with its
    ``tokenizer``, or a ``(model, tokenizer)`` tuple. A loaded model is moved to ``device`` / ``dtype``
    unless accelerate placed or quantised it; ``device`` is where the inputs go."""
    import torch

    grouped_attention_on_cpu()

    if isinstance(model, tuple) and len(model) == 2:
        model, tokenizer = model
    if isinstance(model, (str, Path)):
        if device_map is not None or quantization is not None:
            check_placement(device_map, quantization)
            cuda = torch.cuda.is_available()  # the map decides where weights go; dtype as on that hardware
            dtype = _resolve_dtype(dtype, torch.device("cuda" if cuda and device_map != "cpu" else "cpu"))
            loaded, tokenizer = load_model_and_tokenizer(
                str(model), None, dtype, device_map=device_map, quantization=quantization
            )
            return loaded, tokenizer, _input_device(loaded), dtype, str(model)
        device = _resolve_device(device)
        dtype = _resolve_dtype(dtype, device)
        loaded, tokenizer = load_model_and_tokenizer(str(model), device, dtype)
        return loaded, tokenizer, device, dtype, str(model)
    if tokenizer is None:
        raise PluieError(f"An already-loaded model needs its tokenizer: {owner}(model, tokenizer=tokenizer).")
    name = getattr(model.config, "_name_or_path", type(model).__name__)
    if _placed(model):  # sharded or quantised: it stays where accelerate put it
        return model, tokenizer, _input_device(model), model.dtype, name
    device = _resolve_device(device) if device is not None else next(model.parameters()).device
    dtype = _resolve_dtype(dtype, device) if dtype is not None else next(model.parameters()).dtype
    model.to(device=device, dtype=dtype)
    return model, tokenizer, device, dtype, name


def greedy_generate(model, prompts: list[list[int]], pad_id: int, eos_ids, max_new_tokens: int, device):
    """Greedy generation for one batch of token-id prompts, left-padded to the longest: the output
    rows, whose tokens after the padded prompt width are the generated ones."""
    import torch

    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for row, prompt in enumerate(prompts):
        ids[row, width - len(prompt) :] = torch.tensor(prompt)
        mask[row, width - len(prompt) :] = 1
    with torch.inference_mode():
        return model.generate(
            input_ids=ids.to(device),
            attention_mask=mask.to(device),
            max_new_tokens=max_new_tokens,
            do_sample=False,
            num_beams=1,
            temperature=None,
            top_p=None,
            top_k=None,
            pad_token_id=pad_id,
            eos_token_id=list(eos_ids) or None,
        )


def check_model(name: str, template="fs-direct", answers=None) -> list[str]:
    """What can be checked about a model at once, without loading its weights: a local directory
    exists with a config.json; a GGUF file (or a directory holding one) has an architecture
    transformers can dequantise and a chat template in its metadata (read by the gguf package's
    GGUFReader, which does not load the weights); a hub id is in the local Hugging Face cache, or on
    the hub when the hub may be used and answers (pluie_core.hub.find_model: seconds, not a minute,
    without internet); its tokenizer loads and has a chat template that accepts the template's turns;
    each answer word is one token right after the prompt. The chat template is the model's own code:
    it is rendered in a child process, each render within chat_render.RENDER_SECONDS
    (pluie_core.chat_render), so a template that loops cannot hold the caller (the server). Returns
    sentences saying what was checked; raises PluieError with the reason otherwise. (Whether the
    weights load and fit in memory is only known when a worker loads them.)"""
    gguf = _find_gguf(name)
    chat_render.warm()  # the renderer starts while the tokenizer loads
    if gguf is not None:
        checked = [_gguf_metadata(gguf).describe() + " that transformers can dequantise"]
        try:
            tokenizer = _gguf_tokenizer(str(gguf))
        except Exception as exc:
            raise PluieError(f"Could not read the tokenizer of {name!r}: {_first_line(exc)}.") from None
    else:
        location = _locate(name)  # in seconds, also without internet (pluie_core.hub)
        AutoTokenizer = from_transformers("AutoTokenizer")
        try:
            tokenizer = AutoTokenizer.from_pretrained(location.source, local_files_only=location.where != "hub")
        except Exception as exc:  # OSError, hub errors, ValueError...
            # a cached config without a cached tokenizer: the hub may still have it
            if location.where != "cache" or not hub_usable():
                raise PluieError(
                    f"Could not load the tokenizer of {name!r}: {_first_line(exc)}. Check the model id or "
                    "directory; without internet access the model must already be in the Hugging Face cache or "
                    "on disk."
                ) from None
            try:
                tokenizer = AutoTokenizer.from_pretrained(location.source)
            except Exception as again:
                raise PluieError(
                    f"Could not load the tokenizer of {name!r}: {_first_line(again)}. Check the model id or directory."
                ) from None
        checked = [location.described()]
    checker = PluieScorer._without_weights(tokenizer, template, answers, str(name), chat_render.RENDER_SECONDS)
    first, second = checker.answers
    return checked + ["its tokenizer has a chat template", f"the answers {first!r} and {second!r} are one token each"]


def _gguf_tokenizer(path: str):
    """The tokenizer of a GGUF file, built from its metadata (several seconds: kept for the next check
    of the same unchanged file)."""
    stat = os.stat(path)
    return _gguf_tokenizer_cached(path, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=2)
def _gguf_tokenizer_cached(path: str, _mtime: int, _size: int):
    AutoTokenizer = from_transformers("AutoTokenizer")

    return AutoTokenizer.from_pretrained(str(Path(path).parent), gguf_file=Path(path).name)


def _shared_prefix_cache(prefix_kv, batch: int):
    """A DynamicCache whose every row holds the shared prefix's keys and values, as views of the one
    copy (``expand``): the forward pass's append then writes each row's prefix once. (Built from
    the tensors, DynamicCache would first copy the prefix into every row, and the append copy it
    again: 13% of a 135M model's FS-DIRECT batch on CPU, bench/scorer.py --profile.)"""
    DynamicCache = from_transformers("DynamicCache")
    from transformers.cache_utils import DynamicLayer  # transformers is imported (under the lock) by now

    cache = DynamicCache()
    for keys, values in prefix_kv:
        layer = DynamicLayer()
        layer.lazy_initialization(keys, values)
        layer.keys, layer.values = keys.expand(batch, -1, -1, -1), values.expand(batch, -1, -1, -1)
        cache.layers.append(layer)
    return cache


class PluieScorer:
    """Score sentence pairs with PLUIE.

    model: a Hugging Face model id, a local directory, a .gguf file (or a directory holding one:
        its own tokenizer and chat template, dequantised to ``dtype``), an already-loaded causal LM
        (then pass ``tokenizer=``), or a ``(model, tokenizer)`` tuple.
    template: a built-in name ("fs-direct", "direct", "indirect", "fs-direct-fr", "net", "rev"),
        a YAML / JSON file, a mapping or list of turns, or a Template.
    answers: the two answer words; the score is log p(answers[0]) − log p(answers[1]).
        Default: the template's answers ("Yes", "No" for the English built-ins). Each must be a
        single token for the model's tokenizer.
    device, dtype: default cuda + bfloat16 when a GPU is available, else cpu + float32.
    device_map: let accelerate place the model instead of ``device``: "auto" (the GPUs first, then the
        CPU), "cpu", "balanced" / "sequential" (spread over the GPUs), or a {module: device} dict.
    quantization: "8bit" or "4bit" (bitsandbytes, CUDA only; implies device_map="auto").
        Both are refused with one sentence where CUDA, accelerate or bitsandbytes is missing.
    batch_size: at most this many pairs per forward pass; None = automatic (16 on CPU, 256 on GPU;
        halves on out-of-memory).
    max_batch_tokens: at most this many tokens per forward pass, counted as rows × padded length
        (the cached prefix included, as its keys and values are in memory for every row);
        None = automatic (16,384 on CPU; on GPU from the free memory and the model's size).
    prefix_cache: reuse the KV cache of the template's shared prefix (same scores, less work).
    packed: on CPU, run the pairs that reuse the prefix through pluie_core.packed (tokens packed without
        padding, the prefix attended once for the whole batch) where it knows the model's layers
        (Llama, Mistral, Qwen2); same scores, less time. False keeps the model's own forward for all.
    max_new_tokens: length bound of the INDIRECT generation step (default: the template's).
    render_seconds: render the model's chat template in a child process, each prompt within this many
        seconds (pluie_core.chat_render; the worker's bound, as a template is code that comes with the
        model); None renders it here, unbounded.
    """

    def __init__(
        self,
        model,
        template="fs-direct",
        answers=None,
        device=None,
        dtype=None,
        batch_size=None,
        tokenizer=None,
        prefix_cache: bool = True,
        max_new_tokens: int | None = None,
        device_map=None,
        quantization: str | None = None,
        max_batch_tokens: int | None = None,
        packed: bool = True,
        render_seconds: float | None = None,
    ):
        import torch

        try:
            self.template: Template = get_template(template)
        except TemplateError as exc:
            raise PluieError(str(exc)) from None
        self.device_map, self.quantization = device_map, quantization
        self.render_seconds = render_seconds
        self.model, self.tokenizer, self.device, self.dtype, self.model_name = load_or_adopt(
            model, tokenizer, device, dtype, device_map, quantization, owner="PluieScorer"
        )
        self.model.eval()
        self._check_chat_template()
        self.pad_id = next((i for i in (self.tokenizer.pad_token_id, self.tokenizer.eos_token_id) if i is not None), 0)
        self.prefix_cache = prefix_cache
        self.max_new_tokens = max_new_tokens or self.template.max_new_tokens
        self.batch_size = batch_size
        self._auto_batch = 256 if self.device.type == "cuda" else 16
        self.max_batch_tokens = max_batch_tokens
        self._auto_tokens: Optional[int] = None  # set on first use (_token_budget)
        self._keeps_logits = "logits_to_keep" in inspect.signature(self.model.forward).parameters
        self._oom = getattr(torch, "OutOfMemoryError", RuntimeError)
        self._prefix = None  # (token ids, per-layer (key, value)), built on first use
        self.packed = packed
        # pluie_core.packed.PackedForward (or False: not this model), built on first use
        self._packed: Optional[PackedForward | bool] = None
        self.last_run: dict = {}  # how many prompts of the last call took the cached / uncached path
        self._set_answers(answers)

    @classmethod
    def _without_weights(
        cls, tokenizer, template, answers, model_name: str, render_seconds: float | None = None
    ) -> "PluieScorer":
        """The prompt-building half of a scorer (template, chat template, answer tokens) on a
        tokenizer alone: what check_model needs. It cannot score."""
        checker = cls.__new__(cls)
        try:
            checker.template = get_template(template)
        except TemplateError as exc:
            raise PluieError(str(exc)) from None
        checker.tokenizer, checker.model_name, checker.render_seconds = tokenizer, model_name, render_seconds
        checker._check_chat_template()
        checker._set_answers(answers)
        return checker

    def _check_chat_template(self) -> None:
        if not getattr(self.tokenizer, "chat_template", None):
            raise PluieError(
                f"The tokenizer of {self.model_name} has no chat template, so the prompt cannot be built; "
                "use the chat / instruct version of the model (e.g. a '-Instruct' checkpoint) or set "
                "tokenizer.chat_template."
            )

    def _set_answers(self, answers) -> None:
        """The two answer words, each resolved to the one token that follows the prompt."""
        self.answers = tuple(answers) if answers is not None else tuple(self.template.answers)
        if len(self.answers) != 2 or not all(isinstance(a, str) and a.strip() for a in self.answers):
            raise PluieError(f"Give exactly two non-empty answer words, e.g. ('Yes', 'No'), not {self.answers!r}.")
        if self.answers[0] == self.answers[1]:
            raise PluieError(f"The two answers are the same word {self.answers[0]!r}.")
        self.answer_ids, self.answer_texts = self._resolve_answers()
        if self.answer_ids[0] == self.answer_ids[1]:
            raise PluieError(f"The answers {self.answers} map to the same token; choose two different words.")

    # ------------------------------------------------------------------ prompts
    def _chats(self, conversations, add_generation_prompt: bool) -> list[str]:
        """Each conversation through the model's chat template: here, or with render_seconds in a child
        process, each within that bound (pluie_core.chat_render)."""
        try:
            if self.render_seconds is None:
                return [
                    self.tokenizer.apply_chat_template(c, tokenize=False, add_generation_prompt=add_generation_prompt)
                    for c in conversations
                ]
            return chat_render.render(
                self.tokenizer, conversations, add_generation_prompt, self.model_name, self.render_seconds
            )
        except chat_render.ChatTemplateError as exc:  # ran past its bound: already a sentence
            raise PluieError(str(exc)) from None
        except Exception as exc:  # jinja2 TemplateError from the model's own template, e.g. roles it refuses
            raise PluieError(
                f"The chat template of {self.model_name} refuses the {self.template.name!r} template's turns: "
                f"{_first_line(exc)}. Use a template whose roles this model accepts (many refuse 'system')."
            ) from None

    def _chat(self, messages, add_generation_prompt: bool) -> str:
        return self._chats([messages], add_generation_prompt)[0]

    def prompt_text(self, messages) -> str:
        """The scored prompt: chat-templated turns, generation prompt, then any fixed answer prefix."""
        return self.prompt_texts([messages])[0]

    def prompt_texts(self, conversations) -> list[str]:
        """prompt_text of each conversation (one request to the renderer for all of them)."""
        return [text + self.template.answer_prefix for text in self._chats(conversations, add_generation_prompt=True)]

    def _encode(self, text: str) -> list[int]:
        # The chat template already writes BOS etc. (as apply_chat_template(tokenize=True) assumes).
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def _probe(self, variant: int) -> list[dict]:
        """Turns filled with dummy values; two variants differ in every placeholder."""
        word = ("Xq zv", "Ky wu mo")[variant]
        fields = {f: word for f in self.template.fields}
        generated = word if self.template.needs_generation else None
        return self.template.messages(word, word[::-1], generated=generated, **fields)

    def _answer_variants(self, word: str, messages, prompt: str) -> list[str]:
        """Texts to try for an answer after the prompt: first as the model's own chat template
        writes an assistant answer (e.g. Llama-2 puts a space before it, ChatML does not), then
        the bare word, then its leading-space variant."""
        variants = []
        if not self.template.answer_prefix:
            full = self._chat(messages + [{"role": "assistant", "content": word}], add_generation_prompt=False)
            if full.startswith(prompt) and word in full[len(prompt) :]:
                after = full[len(prompt) :]
                lead = after[: after.find(word)]
                if lead.strip() == "":
                    variants.append(lead + word)
        for variant in (word, " " + word):
            if variant not in variants:
                variants.append(variant)
        return variants

    def _resolve_answers(self) -> tuple[tuple[int, int], tuple[str, str]]:
        """The single token of each answer right after the prompt, and the text it stands for.

        Both answers use the same spacing variant (the first one under which both are a single
        token that extends the prompt's tokenisation), so "Yes" is never opposed to " No"."""
        messages = self._probe(0)
        prompt = self.prompt_text(messages)
        prompt_ids = self._encode(prompt)
        per_answer = [self._answer_variants(w, messages, prompt) for w in self.answers]
        found: list[dict[int, int]] = [{}, {}]
        report: list[list[str]] = [[], []]
        for a, variants in enumerate(per_answer):
            for k, text in enumerate(variants):
                ids = self._encode(prompt + text)
                if ids[: len(prompt_ids)] == prompt_ids and len(ids) == len(prompt_ids) + 1:
                    found[a][k] = ids[-1]
                extra = ids[len(prompt_ids) :] if ids[: len(prompt_ids)] == prompt_ids else ids[-4:]
                report[a].append(f"{text!r} -> {self.tokenizer.convert_ids_to_tokens(extra)}")
        for k in range(min(len(v) for v in per_answer)):
            if k in found[0] and k in found[1]:
                return (found[0][k], found[1][k]), (per_answer[0][k], per_answer[1][k])
        bad = [a for a in (0, 1) if not found[a]] or [0, 1]
        details = "; ".join(" or ".join(report[a]) for a in bad)
        raise PluieError(
            f"The answer {' and '.join(repr(self.answers[a]) for a in bad)} is not a single token for the "
            f"tokenizer of {self.model_name} (right after the prompt, {details}). PLUIE needs each answer "
            "to be exactly one token, with the same spacing for both; choose other answer words "
            "(e.g. 'Yes' / 'No')."
        )

    # ------------------------------------------------------------------ prefix cache
    def _shared_prefix(self):
        """Token prefix common to every prompt of the template, and its KV cache (computed once)."""
        if self._prefix is None:
            first, second = (self._encode(self.prompt_text(self._probe(v))) for v in (0, 1))
            n = 0
            while n < min(len(first), len(second)) and first[n] == second[n]:
                n += 1
            n -= _PREFIX_MARGIN
            self._prefix = self._encode_prefix(first[:n]) if n >= _MIN_PREFIX else ([], None)
        return self._prefix

    def _encode_prefix(self, prefix_ids: list[int]):
        """Run the prefix once; keep its per-layer keys and values (batch of one)."""
        import torch

        packed = self._packed_model()
        if packed is not None:
            with torch.inference_mode():
                cache = packed.encode_prefix(list(prefix_ids))
            if cache is not None:
                return list(prefix_ids), cache
        ids = torch.tensor([prefix_ids], device=self.device)
        with torch.inference_mode():
            out = self.model(input_ids=ids, use_cache=True, **self._keep_last())
        layers = getattr(out.past_key_values, "layers", None)
        if not layers or not all(isinstance(getattr(layer, "keys", None), torch.Tensor) for layer in layers):
            return [], None  # a cache without plain per-layer keys / values (e.g. recurrent layers): no reuse
        return list(prefix_ids), tuple((layer.keys, layer.values) for layer in layers)

    def _keep_last(self) -> dict:
        return {"logits_to_keep": 1} if self._keeps_logits else {}

    # ------------------------------------------------------------------ forward passes
    def _packed_model(self):
        """pluie_core.packed's pass for this model (built on first use), or None where it does not apply."""
        if not self.packed:
            return None
        if self._packed is None:
            from pluie_core.packed import packed_forward

            self._packed = packed_forward(self.model, self.device) or False
        return self._packed or None

    def _packed_pass(self, rows: list[list[int]], prefix):
        """The packed forward for this batch of prefixed rows, or None where the generic path applies."""
        packed = self._packed_model() if prefix is not None else None
        if packed is None or not packed.fits(rows, len(prefix[0])):
            return None
        return packed

    def _last_logprobs(self, rows: list[list[int]], prefix=None):
        """log p(answer) at the last position of each row (float32, shape (len(rows), 2))."""
        import torch

        packed = self._packed_pass(rows, prefix)
        if packed is not None:
            with torch.inference_mode():
                logits = packed.last_logits(rows, prefix[1], len(prefix[0]))
                logprobs = torch.log_softmax(logits.float(), dim=-1)
                self.last_run["packed"] = self.last_run.get("packed", 0) + len(rows)
                return logprobs[:, list(self.answer_ids)].cpu().numpy()
        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, row in enumerate(rows):  # left padding: every row's last token sits at the last position
            ids[i, width - len(row) :] = torch.tensor(row)
            mask[i, width - len(row) :] = 1
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        kwargs = {}
        if prefix is not None:
            prefix_ids, prefix_kv = prefix
            kwargs["past_key_values"] = _shared_prefix_cache(prefix_kv, len(rows))
            # Padding sits between prefix and suffix: the mask hides it, the positions skip it.
            mask = torch.cat([torch.ones((len(rows), len(prefix_ids)), dtype=torch.long), mask], dim=1)
            positions = positions + len(prefix_ids)
        with torch.inference_mode():
            out = self.model(
                input_ids=ids.to(self.device),
                attention_mask=mask.to(self.device),
                position_ids=positions.to(self.device),
                use_cache=prefix is not None,
                **kwargs,
                **self._keep_last(),
            )
            logprobs = torch.log_softmax(out.logits[:, -1, :].float(), dim=-1)
            return logprobs[:, list(self.answer_ids)].cpu().numpy()

    def _run(self, rows: list[list[int]], prefix, on_batch) -> np.ndarray:
        """Length-sorted batches within the pair and token bounds, with out-of-memory back-off;
        results in the order of ``rows``."""
        result = np.empty((len(rows), 2), dtype=np.float64)
        order = sorted(range(len(rows)), key=lambda i: -len(rows[i]))  # longest first: OOM shows up early
        lengths = [len(r) for r in rows]
        extra = len(prefix[0]) if prefix is not None else 0  # every row attends to the cached prefix too
        start = 0
        while start < len(order):
            chunk, width = self._next_chunk(order, lengths, start, extra)
            try:
                result[chunk] = self._last_logprobs([rows[i] for i in chunk], prefix)
            except self._oom:
                if len(chunk) == 1:
                    raise PluieError(
                        f"Not enough memory to score one pair of {len(rows[chunk[0]])} tokens; use a smaller "
                        "model, bfloat16, or shorter texts."
                    ) from None
                self._shrink(len(chunk), width)
                continue
            self._check_finite(result[chunk])
            start += len(chunk)
            self.last_run["batches"] = self.last_run.get("batches", 0) + 1
            on_batch(len(chunk))
        return result

    def _check_finite(self, logprobs: np.ndarray) -> None:
        """Refuse a batch whose answer log-probabilities are not finite numbers (NaN or infinite): a model
        whose activations overflowed (float16 holds at most 65,504) or whose weights are broken. Stored,
        such a score would read as a figure; raised, the worker shows the sentence and scores nothing."""
        import torch

        bad = int((~np.isfinite(logprobs)).any(axis=1).sum())
        if not bad:
            return
        cause = (
            "its activations overflowed in float16, which holds numbers up to 65,504; score in bfloat16 or "
            "float32 instead"
            if self.dtype == torch.float16
            else f"its weights or activations are not numbers in {str(self.dtype).removeprefix('torch.')}; check "
            "the model's files"
        )
        raise PluieError(
            f"The model's answer probabilities are not numbers for {bad} of {len(logprobs)} pairs in a batch: {cause}."
        )

    # ------------------------------------------------------------------ batch bounds
    def _next_chunk(self, order: list[int], lengths: list[int], start: int, extra: int = 0):
        """The next batch of ``order`` (sorted longest first) from ``start``: at most the pair cap,
        and at most the token budget at the padded width its first (longest) row sets.
        Returns (indices, padded width counted against the budget)."""
        width = lengths[order[start]] + extra
        size = min(self.batch_size or self._auto_batch, max(1, self._token_budget() // max(1, width)))
        return order[start : start + size], width

    def _token_budget(self) -> int:
        """Tokens per forward pass: the one given, else 16,384 on CPU; on GPU, half the free memory
        over what one token costs (its keys and values in every layer, plus one layer's transient
        activations), between 2,048 and 1,048,576."""
        if self.max_batch_tokens:
            return self.max_batch_tokens
        if self._auto_tokens is None:
            self._auto_tokens = _CPU_BATCH_TOKENS
            if self.device.type == "cuda":
                try:
                    import torch

                    free, _total = torch.cuda.mem_get_info(self.device)
                    self._auto_tokens = int(min(max(free // 2 // self._bytes_per_token(), 2048), 1 << 20))
                except Exception:  # a config without the usual sizes, no CUDA runtime: keep the default
                    pass
        return self._auto_tokens

    def _bytes_per_token(self) -> int:
        config = self.model.config
        config = config.get_text_config() if hasattr(config, "get_text_config") else config
        hidden, heads = config.hidden_size, config.num_attention_heads
        kv_heads = getattr(config, "num_key_value_heads", None) or heads
        head_dim = getattr(config, "head_dim", None) or hidden // heads
        intermediate = getattr(config, "intermediate_size", None) or 4 * hidden
        try:  # the compute dtype: keys and values are stored in it even when the weights are quantised
            import torch

            itemsize = torch.empty((), dtype=self.dtype).element_size()
        except (TypeError, RuntimeError):
            itemsize = next(self.model.parameters()).element_size()
        keys_values = config.num_hidden_layers * 2 * kv_heads * head_dim * itemsize
        return keys_values + (4 * hidden + 3 * intermediate) * itemsize

    def _shrink(self, rows: int, width: int) -> None:
        """After an out-of-memory error on ``rows`` pairs of padded width ``width``: halve the pair
        cap and the token budget (the given ones too) from that batch's size."""
        import torch

        if self.device.type == "cuda":
            torch.cuda.empty_cache()
        if self.batch_size:
            self.batch_size = max(1, rows // 2)
        else:
            self._auto_batch = max(1, rows // 2)
        budget = max(1, rows * width // 2)
        if self.max_batch_tokens:
            self.max_batch_tokens = budget
        else:
            self._auto_tokens = budget

    def _logprobs(self, prompts: list[list[int]], on_batch) -> np.ndarray:
        prefix_ids, prefix_kv = self._shared_prefix() if self.prefix_cache else ([], None)
        n = len(prefix_ids)
        cached = [i for i, p in enumerate(prompts) if n and len(p) > n and p[:n] == prefix_ids]
        cached_set = set(cached)
        plain = [i for i in range(len(prompts)) if i not in cached_set]
        self.last_run = {"cached": len(cached), "uncached": len(plain), "prefix_tokens": n}
        out = np.empty((len(prompts), 2), dtype=np.float64)
        if cached:
            out[cached] = self._run([prompts[i][n:] for i in cached], (prefix_ids, prefix_kv), on_batch)
        if plain:
            out[plain] = self._run([prompts[i] for i in plain], None, on_batch)
        return out

    # ------------------------------------------------------------------ generation (INDIRECT)
    def generate_explanations(self, sources, hypotheses, fields=None, progress=False) -> list[str]:
        """INDIRECT's first step: the model's greedy answer to the turns before ``{generated}``."""
        sources, hypotheses, fields = self._check_inputs(sources, hypotheses, fields)
        prompts = [
            self._encode(text)
            for text in self._chats(
                [
                    self.template.messages(s, h, **self._row(fields, i))
                    for i, (s, h) in enumerate(zip(sources, hypotheses))
                ],
                add_generation_prompt=True,
            )
        ]
        texts = [""] * len(prompts)
        order = sorted(range(len(prompts)), key=lambda i: -len(prompts[i]))
        eos = {
            i
            for i in (self.tokenizer.eos_token_id, getattr(self.model.generation_config, "eos_token_id", None))
            if isinstance(i, int)
        }
        bar = self._progress(progress, len(prompts), "PLUIE generation")
        lengths = [len(p) for p in prompts]
        start = 0
        while start < len(order):
            chunk, cost = self._next_chunk(order, lengths, start, self.max_new_tokens)
            width = lengths[chunk[0]]
            try:
                out = greedy_generate(
                    self.model, [prompts[i] for i in chunk], self.pad_id, sorted(eos), self.max_new_tokens, self.device
                )
            except self._oom:
                if len(chunk) == 1:
                    raise PluieError("Not enough memory to generate an explanation for one pair.") from None
                self._shrink(len(chunk), cost)
                continue
            for row, i in enumerate(chunk):
                texts[i] = self.tokenizer.decode(out[row, width:], skip_special_tokens=True).strip()
            start += len(chunk)
            bar(len(chunk))
        bar(0, close=True)
        return texts

    # ------------------------------------------------------------------ public API
    def prompts(self, sources, hypotheses, fields=None, explanations=None) -> list[str]:
        """The exact prompt texts that are scored (for inspection)."""
        sources, hypotheses, fields = self._check_inputs(sources, hypotheses, fields)
        return self.prompt_texts(
            [
                self.template.messages(
                    s, h, generated=None if explanations is None else explanations[i], **self._row(fields, i)
                )
                for i, (s, h) in enumerate(zip(sources, hypotheses))
            ]
        )

    def score(
        self, sources, hypotheses, symmetric: bool = False, progress=False, fields=None, return_logprobs: bool = False
    ):
        """PLUIE score of each pair, in input order: numpy array of log p(answer1) − log p(answer2).

        symmetric: the mean of score(S, H) and score(H, S) (PLUIE is not symmetric).
        progress: True for a tqdm bar, or a callable ``progress(done, total)``.
        fields: extra per-pair values for templates that use them, e.g. ``{"instruction": [...]}``.
        return_logprobs: also return an (n, 2) array of log p(answer1), log p(answer2) (averaged
            over both directions when symmetric), as ``(scores, logprobs)``.
        """
        return self._score(sources, hypotheses, symmetric, progress, fields, return_logprobs, self._logprobs)

    __call__ = score

    def _score(self, sources, hypotheses, symmetric, progress, fields, return_logprobs, logprobs_of):
        """score's body, the log-probabilities of the answers after each prompt (token ids) read by
        ``logprobs_of(prompts, bar)``: this model's forward passes (_logprobs), or a server's
        (pluie_core.endpoint.EndpointScorer), with the same prompts, directions and arithmetic."""
        sources, hypotheses, fields = self._check_inputs(sources, hypotheses, fields)
        pairs = list(zip(sources, hypotheses))
        if symmetric:
            pairs += [(h, s) for s, h in pairs]
            fields = {k: list(v) * 2 for k, v in fields.items()}
        total = len(pairs) * (2 if self.template.needs_generation else 1)
        bar = self._progress(progress, total, "PLUIE")
        explanations = None
        if self.template.needs_generation:
            explanations = self.generate_explanations(
                [p[0] for p in pairs], [p[1] for p in pairs], fields, progress=lambda done, _total: None
            )
            bar(len(pairs))
        prompts = [
            self._encode(text)
            for text in self.prompt_texts(
                [
                    self.template.messages(
                        s, h, generated=None if explanations is None else explanations[i], **self._row(fields, i)
                    )
                    for i, (s, h) in enumerate(pairs)
                ]
            )
        ]
        logprobs = logprobs_of(prompts, bar)
        bar(0, close=True)
        if symmetric:
            logprobs = (logprobs[: len(sources)] + logprobs[len(sources) :]) / 2
        scores = logprobs[:, 0] - logprobs[:, 1]
        return (scores, logprobs) if return_logprobs else scores

    # ------------------------------------------------------------------ helpers
    def _check_inputs(self, sources, hypotheses, fields):
        sources, hypotheses = sentence_pairs(sources, hypotheses, PluieError)
        fields = {k: list(v) for k, v in (fields or {}).items()}
        for key, values in fields.items():
            if len(values) != len(sources):
                raise PluieError(f"Field {key!r} has {len(values)} values for {len(sources)} pairs.")
        missing = [f for f in self.template.fields if f not in fields and not self.template._optional(f)]
        if missing:
            raise PluieError(f"Template {self.template.name!r} needs the per-pair field(s) {sorted(missing)}.")
        return sources, hypotheses, fields

    @staticmethod
    def _row(fields: dict, i: int) -> dict:
        return {k: (None if isinstance(v[i], float) and math.isnan(v[i]) else v[i]) for k, v in fields.items()}

    @staticmethod
    def _progress(progress, total: int, desc: str):
        """A ``bar(n, close=False)`` callable over tqdm, a user callback, or nothing."""
        done = 0
        bar = None
        if progress is True:
            from tqdm.auto import tqdm

            bar = tqdm(total=total, desc=desc, unit="pair")

        def update(n: int, close: bool = False):
            nonlocal done
            done += n
            if bar is not None:
                bar.update(n)
                if close:
                    bar.close()
            elif callable(progress) and n:
                progress(done, total)

        return update
