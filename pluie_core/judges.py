"""Output-based LLM judges beside PLUIE (star-pluie-2026, section 2.2): the model *generates* an
answer, which is then parsed.

- LLM-Yes/No (``yes-no``): "are these paraphrases?"; Yes = 1, No = 0.
- LLM-Likert (``likert``): a rating on a 1-5 scale, the number itself.
- LLM-choice (``choice``): for preference data (a source and two candidates), which candidate is
  better; A = 1, B = 0 (and, asked in both orders, 0.5 when the two answers disagree). As a run
  kind (``llm-choice``) it scores ordinary pairs: ``prefer_first`` asks, for the pair (source, X)
  whose preference item links it to (source, Y), "X (A) or Y (B)?", and the pair's value is 1 when
  X is chosen, 0 when Y is; the item's other pair is asked the other way round, so an item's two
  values are the swapped-order design, read by the preference view's rule like any run's scores.

    >>> judge = LLMJudge("mistralai/Mistral-7B-Instruct-v0.2", kind="yes-no")
    >>> result = judge.score(["The cat drinks water."], ["The cat drinks milk."])
    >>> result.values, result.answers        # array([0.]), ['No']  (NaN and the raw text when unparsed)

Templates are data: YAML files in ``pluie_core/templates/judges/`` (or your own file), chat turns
with ``{source}`` / ``{hypothesis}`` (``{candidate_a}`` / ``{candidate_b}`` for a choice), the
answer words or scale, and ``max_new_tokens``. A yes-no judge also takes any PLUIE template
(``fs-direct``...), so PLUIE and LLM-Yes/No can be compared on the very same prompt.

Generation is greedy, batched (prompts sorted by length, left-padded, results returned in input
order; the batch halves on out-of-memory) and bounded by ``max_new_tokens``; the answer is the
text up to the first end-of-sequence token. The model is loaded exactly as PluieScorer loads it.

Parsing: the answer is read the way the prompt asks for it, as the first word of the generated text
(the text after the assistant turn), after leading blanks and markup (``*``, quotes, brackets, ``:``...):
"Yes.", "**No**", "4/5", "B) ...". Where the text does not start with an answer, it is read as that answer
only when exactly one of the possible answers occurs in it as a whole word and nothing says otherwise
("The answer is yes", "Rating: 4", "Candidate B"). Anything else is **unparsed**: value NaN, the raw text
kept. In particular:

- Yes / No (any case): a negated answer is not that answer: a text that does not start with the answer
  and holds a negation (not, n't, never, neither, nor, hardly, cannot) is unparsed ("Not yes", "Definitely
  not a yes", "I don't think yes"; "No, not at all" starts with its answer); an echo of the question's
  choice, "Yes/No", "yes or no", is unparsed, as is "I cannot say yes or no".
- Ratings: a whole number on the scale. "4/5", "5 out of 5", "Score: 4 (out of 5)" read the number when
  the denominator is the top of the scale; a rating on another scale ("2/10", "3 out of 10") is unparsed,
  never taken as a rating on this one; "between 3 and 4", "3.5", "10" are unparsed.
- Choices: the labels match case-sensitively (so the article "a" is not "A"); "Both A and B" is unparsed.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import numpy as np
import yaml

from pluie_core import chat_render
from pluie_core.inputs import sentence_pairs
from pluie_core.run_kinds import LLM_CHOICE, LLM_LIKERT, LLM_YES_NO, RUN_KINDS
from pluie_core.scorer import PluieError, PluieScorer, greedy_generate, load_or_adopt
from pluie_core.templates import (
    _PLACEHOLDER,
    BUILTIN_TEMPLATES,
    ROLES,
    Template,
    TemplateError,
    _fill,
    _present,
    get_template,
)

JUDGE_TEMPLATE_DIR = Path(__file__).with_name("templates") / "judges"
KINDS = ("yes-no", "likert", "choice")
_TEXTS = {
    "yes-no": ("source", "hypothesis"),
    "likert": ("source", "hypothesis"),
    "choice": ("source", "candidate_a", "candidate_b"),
}
_LEADING_MARKUP = " \t\r\n*_`'\"‘’“”«»()[]{}<>:#>-.,"


class JudgeError(PluieError):
    """A judge that cannot be set up or used as asked; the message says what to change."""


# --------------------------------------------------------------------------- the registry


@dataclass(frozen=True)
class JudgeKind:
    """What the worker, the CLI and the pages need to know about a judge, without naming it."""

    kind: str
    run_kind: str  # the ScoreRun.kind of its runs
    title: str  # as in the paper
    column: str  # the CLI's output column
    default_template: str
    natural_threshold: Optional[float]  # score >= this: paraphrase (None for choice: not a pair score)
    description: str


def _judge(run_kind: str, column: str, description: str) -> JudgeKind:
    """A judge's entry: its kind, title, default template and threshold are its run kind's record
    (pluie_core.run_kinds); the CLI's column and the description are the judge's own."""
    record = RUN_KINDS[run_kind]
    assert record.judge is not None and record.default_template is not None, f"{run_kind} is not a judge's run kind"
    return JudgeKind(
        record.judge, record.name, record.title, column, record.default_template, record.natural_threshold, description
    )


JUDGES: dict[str, JudgeKind] = {
    j.kind: j
    for j in (
        _judge(
            LLM_YES_NO,
            "llm_yes_no",
            "generates an answer, parsed as Yes (1) or No (0); natural threshold 0.5 (a Yes; for a symmetric "
            "run, at least one of the two directions)",
        ),
        _judge(
            LLM_LIKERT,
            "llm_likert",
            "generates a 1-5 rating; natural threshold 4 (good or excellent, the acceptability cut-off the "
            "*-PLUIE paper applies to its 5-point human ratings)",
        ),
        _judge(
            LLM_CHOICE,
            "llm_choice",
            "for preference data: generates A or B, the better of two candidates for a source; a run scores each "
            "candidate 1 when chosen over its partner asked first, 0 when not (no paraphrase threshold)",
        ),
    )
}
# the judges by their runs' ScoreRun.kind (the run kinds themselves are pluie_core.run_kinds.RUN_KINDS)
JUDGES_BY_RUN_KIND: dict[str, JudgeKind] = {j.run_kind: j for j in JUDGES.values()}


def judge_for_run_kind(run_kind: str) -> Optional[JudgeKind]:
    """The judge whose runs have this ScoreRun.kind, or None (PLUIE, baselines)."""
    return JUDGES_BY_RUN_KIND.get(run_kind)


# --------------------------------------------------------------------------- templates


@dataclass(frozen=True)
class JudgeTemplate:
    """A judge prompt: chat turns with placeholders, the kind of answer and how to read it."""

    name: str
    kind: str
    turns: tuple[dict, ...]
    answers: tuple[str, str] = ("Yes", "No")  # yes-no: positive, negative; choice: the two labels
    scale: tuple[int, int] = (1, 5)  # likert
    answer_prefix: str = ""
    description: str = ""
    max_new_tokens: int = 10
    fields: frozenset = field(init=False)

    def __post_init__(self):
        where = f"Judge template {self.name!r}"
        if self.kind not in KINDS:
            raise JudgeError(f"{where}: kind must be one of {', '.join(KINDS)}, not {self.kind!r}.")
        if not self.turns:
            raise JudgeError(f"{where} has no turns; give a list of {{role, content}} chat turns.")
        for i, turn in enumerate(self.turns, 1):
            if not isinstance(turn, dict) or turn.get("role") not in ROLES or not isinstance(turn.get("content"), str):
                raise JudgeError(f"{where}: turn {i} must have a role ({', '.join(ROLES)}) and a text content.")
        if self.turns[-1]["role"] == "assistant":
            raise JudgeError(f"{where} ends with an assistant turn; end with the question the model answers.")
        text = "".join(t["content"] for t in self.turns)
        for needed in _TEXTS[self.kind]:
            if f"{{{needed}}}" not in text:
                raise JudgeError(f"{where} never uses {{{needed}}}; a {self.kind} prompt needs it.")
        if self.kind != "likert" and (
            len(self.answers) != 2
            or len({a.strip().casefold() for a in self.answers}) != 2
            or not all(a.strip() for a in self.answers)
        ):
            raise JudgeError(f"{where}: answers must be two different words, e.g. ['Yes', 'No'], not {self.answers!r}.")
        low, high = self.scale
        if self.kind == "likert" and not (isinstance(low, int) and isinstance(high, int) and low < high):
            raise JudgeError(f"{where}: scale must be two whole numbers, lowest first, e.g. [1, 5].")
        if self.max_new_tokens < 1:
            raise JudgeError(f"{where}: max_new_tokens must be at least 1.")
        names = {m.group(1) for t in self.turns for m in _PLACEHOLDER.finditer(t["content"])}
        names |= {t["when"] for t in self.turns if t.get("when")}
        object.__setattr__(self, "fields", frozenset(names - set(_TEXTS[self.kind])))

    def messages(self, *texts: str, **fields) -> list[dict]:
        """The chat turns for one item: (source, hypothesis) or (source, candidate_a, candidate_b)."""
        values = dict(zip(_TEXTS[self.kind], texts)) | fields
        missing = [f for f in self.fields if f not in values and not self._optional(f)]
        if missing:
            raise JudgeError(f"Judge template {self.name!r} needs the per-row field(s) {sorted(missing)}.")
        out = []
        for turn in self.turns:
            if turn.get("when") and not _present(values.get(turn["when"])):
                continue
            out.append({"role": turn["role"], "content": _PLACEHOLDER.sub(lambda m: _fill(m, values), turn["content"])})
        return out

    def _optional(self, name: str) -> bool:
        users = [t for t in self.turns if f"{{{name}}}" in t["content"] or t.get("when") == name]
        return all(t.get("when") == name for t in users)


def judge_template_from_mapping(data, name: str = "custom") -> JudgeTemplate:
    if not isinstance(data, dict) or "turns" not in data:
        raise JudgeError("A judge template must be a mapping with 'kind' and a 'turns' list.")
    unknown = set(data) - {
        "name",
        "kind",
        "description",
        "answers",
        "scale",
        "answer_prefix",
        "max_new_tokens",
        "turns",
    }
    if unknown:
        raise JudgeError(f"Unknown judge template key(s) {sorted(unknown)}.")
    kind = str(data.get("kind", ""))
    answers = data.get("answers", ("A", "B") if kind == "choice" else ("Yes", "No"))
    scale = data.get("scale", (1, 5))
    if not isinstance(answers, (list, tuple)) or not all(isinstance(a, str) for a in answers):
        raise JudgeError(
            f"answers must be a list of two quoted words, not {answers!r} (YAML reads a bare Yes as true)."
        )
    if not isinstance(scale, (list, tuple)) or len(scale) != 2:
        raise JudgeError(f"scale must be a list of two whole numbers, e.g. [1, 5], not {scale!r}.")
    return JudgeTemplate(
        name=str(data.get("name", name)),
        kind=kind,
        turns=tuple(dict(t) if isinstance(t, dict) else t for t in data["turns"]),
        answers=tuple(answers),
        scale=tuple(scale),
        answer_prefix=str(data.get("answer_prefix", "") or ""),
        description=str(data.get("description", "") or ""),
        max_new_tokens=int(data.get("max_new_tokens", 10)),
    )


def load_judge_template_file(path) -> JudgeTemplate:
    path = Path(path)
    if not path.is_file():
        raise JudgeError(f"Judge template file {path} does not exist.")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))  # JSON is YAML too
    except yaml.YAMLError as exc:
        raise JudgeError(f"Judge template file {path} is not valid YAML / JSON: {exc}") from None
    return judge_template_from_mapping(data, name=path.stem)


BUILTIN_JUDGE_TEMPLATES: dict[str, JudgeTemplate] = {
    p.stem: load_judge_template_file(p) for p in sorted(JUDGE_TEMPLATE_DIR.glob("*.yaml"))
}


def from_pluie_template(template: Template) -> JudgeTemplate:
    """A PLUIE template asked as an LLM-Yes/No question: the same turns, its two answer words."""
    if template.needs_generation:
        raise JudgeError(
            f"The PLUIE template {template.name!r} has a generation step; a yes-no judge needs a "
            "template that asks its question directly."
        )
    return JudgeTemplate(
        name=template.name,
        kind="yes-no",
        turns=template.turns,
        answers=template.answers,
        answer_prefix=template.answer_prefix,
        description=template.description,
        max_new_tokens=10,
    )


def get_judge_template(spec, kind: Optional[str] = None) -> JudgeTemplate:
    """A judge template from a JudgeTemplate, a built-in judge template name (yes-no, likert, choice,
    ...), a PLUIE template name or Template (for a yes-no judge), a mapping, or a YAML / JSON file.
    ``kind``: the kind the template must have (its default template when ``spec`` is None)."""
    if spec is None:
        if kind not in JUDGES:
            raise JudgeError(f"Unknown judge {kind!r}; use one of {', '.join(JUDGES)}.")
        spec = JUDGES[kind].default_template
    if isinstance(spec, JudgeTemplate):
        template = spec
    elif isinstance(spec, Template):
        template = from_pluie_template(spec)
    elif isinstance(spec, dict):
        template = judge_template_from_mapping(spec) if "kind" in spec else from_pluie_template(_pluie_template(spec))
    elif isinstance(spec, (str, Path)):
        key = str(spec).strip().lower().replace("_", "-")
        if key in BUILTIN_JUDGE_TEMPLATES:
            template = BUILTIN_JUDGE_TEMPLATES[key]
        elif key in BUILTIN_TEMPLATES:
            template = from_pluie_template(BUILTIN_TEMPLATES[key])
        elif Path(spec).is_file():
            data = _read_mapping(Path(spec))
            template = (
                judge_template_from_mapping(data, Path(spec).stem)
                if isinstance(data, dict) and "kind" in data
                else from_pluie_template(_pluie_template(spec))
            )
        else:
            raise JudgeError(
                f"Unknown judge template {str(spec)!r}; use one of {', '.join(BUILTIN_JUDGE_TEMPLATES)}, a PLUIE "
                "template name (for yes-no) or a path to a YAML / JSON file."
            )
    else:
        raise JudgeError(f"A judge template cannot be built from {type(spec).__name__}.")
    if kind is not None and template.kind != kind:
        raise JudgeError(f"The template {template.name!r} is a {template.kind} prompt, not a {kind} one.")
    return template


def _read_mapping(path: Path):
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise JudgeError(f"Template file {path} is not valid YAML / JSON: {exc}") from None


def _pluie_template(spec) -> Template:
    try:
        return get_template(spec)
    except TemplateError as exc:
        raise JudgeError(str(exc)) from None


# --------------------------------------------------------------------------- parsing


def _strip_leading(text: str) -> str:
    return text.lstrip(_LEADING_MARKUP)


_NEGATION = re.compile(
    r"(?<!\w)(?:not|never|neither|nor|hardly|cannot|can't|won't|isn't|aren't|don't|doesn't)(?!\w)"
    r"|n't(?!\w)",
    re.IGNORECASE,
)
_ECHO = r"\s*(?:/|\||\bor\b)\s*"  # "Yes/No", "yes or no": the question's choice repeated


def _pick(text: str, candidates: dict[str, object], flags: int, negations: bool = False):
    """The rule of the module docstring: the answer the text starts with (not an echo of the choice),
    else the only answer that occurs as a whole word (and, for ``negations``, no negation in the text),
    else None."""
    start = _strip_leading(text)
    words = [re.escape(w) for w in candidates]
    for word, value in candidates.items():
        if re.match(rf"{re.escape(word)}(?!\w)", start, flags):
            others = [w for w in words if w != re.escape(word)]
            if any(re.match(rf"{re.escape(word)}{_ECHO}{o}(?!\w)", start, flags) for o in others):
                return None  # "Yes/No": the question's choice echoed, no answer
            return value
    found = {value for word, value in candidates.items() if re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text, flags)}
    if negations and _NEGATION.search(text):
        return None  # "Not yes", "Definitely not a yes": not that answer, and not surely the other one
    return found.pop() if len(found) == 1 else None


def parse_yes_no(text: str, answers=("Yes", "No")) -> Optional[float]:
    """1.0 for the first answer word (Yes), 0.0 for the second (No), None when unparsed (the module
    docstring's rule: the first word; a negated or echoed answer is unparsed)."""
    return _pick(text or "", {answers[0].strip(): 1.0, answers[1].strip(): 0.0}, re.IGNORECASE, negations=True)


def parse_choice(text: str, labels=("A", "B")) -> Optional[str]:
    """The label chosen ("A" or "B"), None when unparsed. Labels match case-sensitively."""
    return _pick(text or "", {labels[0].strip(): labels[0].strip(), labels[1].strip(): labels[1].strip()}, 0)


_OUT_OF = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*\(?\s*(?:/|out\s+of|of)\s*(\d+)\s*\)?", re.IGNORECASE)


def parse_likert(text: str, scale=(1, 5)) -> Optional[float]:
    """The rating, a whole number on the scale, or None when unparsed. "4/5", "4 out of 5" and
    "4 (out of 5)" are 4 on a 1-5 scale; a number out of anything else ("2/10", "3 out of 10") is a
    rating on another scale: unparsed."""
    low, high = scale
    text = text or ""
    for match in _OUT_OF.finditer(text):
        if int(match.group(2)) != high:
            return None  # a rating on another scale is not a rating on this one
    text = _OUT_OF.sub(lambda m: m.group(1), text)  # "4/5", "4 (out of 5)" -> "4"
    start = _strip_leading(text)
    first = re.match(r"(\d+(?:\.\d+)?)(?![\w.]*\d)", start)
    if first is not None and _on_scale(first.group(1), low, high) is not None:
        return _on_scale(first.group(1), low, high)
    numbers = re.findall(r"(?<![\w.])(\d+(?:\.\d+)?)(?!\w)", text)
    valid = {v for v in (_on_scale(n, low, high) for n in numbers) if v is not None}
    return valid.pop() if len(valid) == 1 else None


def _on_scale(number: str, low: int, high: int) -> Optional[float]:
    value = float(number)
    return value if value.is_integer() and low <= value <= high else None


# --------------------------------------------------------------------------- the judge


@dataclass
class JudgeResult:
    """Per item, in input order: the value (NaN when the answer could not be parsed), the parsed
    answer ("Yes", "4", "A"; None when unparsed) and the raw generated text."""

    values: np.ndarray
    answers: list[Optional[str]]
    texts: list[str]

    @property
    def unparsed(self) -> int:
        return sum(a is None for a in self.answers)

    def details(self) -> list[dict]:
        """What the store keeps per score: the raw text, and whether it could be parsed."""
        return [{"answer": text, "parsed": answer is not None} for text, answer in zip(self.texts, self.answers)]


class LLMJudge:
    """An output-based LLM judge.

    model: a Hugging Face id, a local directory, an already-loaded causal LM (pass ``tokenizer=``)
        or a ``(model, tokenizer)`` tuple — loaded exactly as PluieScorer loads it.
    kind: "yes-no", "likert" or "choice" (the kind of the template when one is given).
    template: a built-in judge template name, a PLUIE template (yes-no only), a mapping or a file;
        default: the kind's own (``yes-no``, ``likert``, ``choice``).
    max_new_tokens: length bound of the generated answer (default: the template's).
    render_seconds: render the model's chat template in a child process, each prompt within this many
        seconds (pluie_core.chat_render, as PluieScorer); None renders it here, unbounded.
    """

    def __init__(
        self,
        model,
        kind: Optional[str] = None,
        template=None,
        device=None,
        dtype=None,
        batch_size=None,
        tokenizer=None,
        max_new_tokens: Optional[int] = None,
        device_map=None,
        quantization: Optional[str] = None,
        render_seconds: Optional[float] = None,
    ):
        import torch

        if kind is None and template is None:
            raise JudgeError(f"Say which judge: kind one of {', '.join(JUDGES)}, or a judge template.")
        self.template = get_judge_template(template, kind)
        self.kind = self.template.kind
        try:  # loaded and placed exactly as PluieScorer loads and places it
            self.model, self.tokenizer, self.device, self.dtype, self.model_name = load_or_adopt(
                model, tokenizer, device, dtype, device_map, quantization, owner="LLMJudge"
            )
        except PluieError as exc:
            raise JudgeError(str(exc)) from None
        self.model.eval()
        self._auto_batch = 64 if self.device.type == "cuda" else 16
        self._oom = getattr(torch, "OutOfMemoryError", RuntimeError)
        self._set_prompting(
            max_new_tokens, batch_size, render_seconds, getattr(self.model.generation_config, "eos_token_id", None)
        )

    @classmethod
    def _without_weights(
        cls,
        tokenizer,
        kind: Optional[str],
        template,
        model_name: str,
        max_new_tokens: Optional[int] = None,
        render_seconds: Optional[float] = None,
        eos_token_id=None,
    ) -> "LLMJudge":
        """The prompt half of a judge (template, chat template, end-of-sequence tokens, parsing) on a tokenizer
        alone: what a judge served elsewhere needs (pluie_core.endpoint.EndpointJudge gives it ``generate``)."""
        if kind is None and template is None:
            raise JudgeError(f"Say which judge: kind one of {', '.join(JUDGES)}, or a judge template.")
        judge = cls.__new__(cls)
        judge.template = get_judge_template(template, kind)
        judge.kind = judge.template.kind
        judge.model, judge.tokenizer, judge.device, judge.dtype, judge.model_name = (
            None,
            tokenizer,
            None,
            None,
            model_name,
        )
        judge._auto_batch = 16
        judge._set_prompting(max_new_tokens, None, render_seconds, eos_token_id)
        return judge

    def _set_prompting(self, max_new_tokens, batch_size, render_seconds, model_eos) -> None:
        if not getattr(self.tokenizer, "chat_template", None):
            raise JudgeError(
                f"The tokenizer of {self.model_name} has no chat template, so the prompt cannot be "
                "built; use the chat / instruct version of the model."
            )
        self.pad_id = next((i for i in (self.tokenizer.pad_token_id, self.tokenizer.eos_token_id) if i is not None), 0)
        self.max_new_tokens = max_new_tokens or self.template.max_new_tokens
        self.batch_size = batch_size
        self.last_run: dict = {}  # prompts and tokens generated by the last call
        eos = [self.tokenizer.eos_token_id, model_eos]
        self.eos_ids = sorted(
            {i for e in eos for i in (e if isinstance(e, (list, tuple)) else [e]) if isinstance(i, int)}
        )
        self.render_seconds = render_seconds
        # the chat template takes the template's turns (and, bounded, in time): said now, not at the first pair
        self.prompt_text(
            self.template.messages(*("Xq zv",) * len(_TEXTS[self.kind]), **{f: "Xq zv" for f in self.template.fields})
        )

    # ------------------------------------------------------------------ prompts and generation
    def prompt_text(self, messages) -> str:
        return self.prompt_texts([messages])[0]

    def prompt_texts(self, conversations) -> list[str]:
        """Each conversation through the model's chat template, then the template's answer prefix: here,
        or with render_seconds in a child process, each within that bound (pluie_core.chat_render)."""
        try:
            if self.render_seconds is None:
                chats = [
                    self.tokenizer.apply_chat_template(c, tokenize=False, add_generation_prompt=True)
                    for c in conversations
                ]
            else:
                chats = chat_render.render(self.tokenizer, conversations, True, self.model_name, self.render_seconds)
        except chat_render.ChatTemplateError as exc:  # ran past its bound: already a sentence
            raise JudgeError(str(exc)) from None
        except Exception as exc:  # jinja2 errors from the model's own template
            raise JudgeError(
                f"The chat template of {self.model_name} refuses the {self.template.name!r} template's "
                f"turns: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}."
            ) from None
        return [chat + self.template.answer_prefix for chat in chats]

    def _encode(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def generate(self, prompts: list[list[int]], on_batch: Callable[[int], None] = lambda n: None) -> list[str]:
        """Greedy answers to token-id prompts, in input order: length-sorted, left-padded batches."""
        import torch

        texts = [""] * len(prompts)
        self.last_run = {"prompts": len(prompts), "generated_tokens": 0}
        order = sorted(range(len(prompts)), key=lambda i: -len(prompts[i]))  # longest first: OOM shows early
        start = 0
        while start < len(order):
            size = self.batch_size or self._auto_batch
            chunk = order[start : start + size]
            width = max(len(prompts[i]) for i in chunk)
            try:
                out = greedy_generate(
                    self.model,
                    [prompts[i] for i in chunk],
                    self.pad_id,
                    self.eos_ids or (),
                    self.max_new_tokens,
                    self.device,
                )
            except self._oom:
                if self.device.type == "cuda":
                    torch.cuda.empty_cache()
                if size == 1:
                    raise JudgeError(
                        f"Not enough memory to generate an answer for one prompt of {width} tokens; "
                        "use a smaller model, bfloat16, or shorter texts."
                    ) from None
                if self.batch_size:
                    self.batch_size = max(1, size // 2)
                else:
                    self._auto_batch = max(1, size // 2)
                continue
            for row, i in enumerate(chunk):
                texts[i], used = self._answer_text(out[row, width:].tolist())
                self.last_run["generated_tokens"] += used
            start += len(chunk)
            on_batch(len(chunk))
        return texts

    def _answer_text(self, tokens: list[int]) -> tuple[str, int]:
        """The generated text up to the first end-of-sequence token, and how many tokens it took."""
        end = next((k for k, t in enumerate(tokens) if t in self.eos_ids), len(tokens))
        return self.tokenizer.decode(tokens[:end], skip_special_tokens=True).strip(), min(end + 1, len(tokens))

    def _answers(self, rows: list[tuple], fields: dict, progress) -> list[str]:
        prompts = [
            self._encode(text)
            for text in self.prompt_texts(
                [self.template.messages(*row, **PluieScorer._row(fields, i)) for i, row in enumerate(rows)]
            )
        ]
        bar = PluieScorer._progress(progress, len(prompts), self.template.name)
        texts = self.generate(prompts, bar)
        bar(0, close=True)
        return texts

    def prompts(self, *columns, fields=None) -> list[str]:
        """The exact prompt texts the model answers (for inspection)."""
        rows, fields = self._check(columns, fields)
        return self.prompt_texts(
            [self.template.messages(*row, **PluieScorer._row(fields, i)) for i, row in enumerate(rows)]
        )

    # ------------------------------------------------------------------ public API
    def parse(self, text: str):
        """(value, parsed answer) of one generated text; (NaN, None) when it cannot be parsed."""
        if self.kind == "yes-no":
            value = parse_yes_no(text, self.template.answers)
            answer = None if value is None else self.template.answers[0 if value == 1.0 else 1]
        elif self.kind == "likert":
            value = parse_likert(text, self.template.scale)
            answer = None if value is None else str(int(value))
        else:
            answer = parse_choice(text, self.template.answers)
            value = None if answer is None else (1.0 if answer == self.template.answers[0].strip() else 0.0)
        return (math.nan if value is None else value), answer

    def _result(self, texts: list[str]) -> JudgeResult:
        parsed = [self.parse(t) for t in texts]
        return JudgeResult(np.array([v for v, _ in parsed], dtype=float), [a for _, a in parsed], texts)

    def score(self, sources, hypotheses, fields=None, progress=False) -> JudgeResult:
        """Judge each (source, hypothesis) pair (yes-no, likert), in input order."""
        if self.kind == "choice":
            raise JudgeError(
                "A choice judge compares two candidates: call choose(sources, candidates_a, candidates_b)."
            )
        rows, fields = self._check((sources, hypotheses), fields)
        return self._result(self._answers(rows, fields, progress))

    __call__ = score

    def choose(
        self, sources, candidates_a, candidates_b, fields=None, swap: bool = False, progress=False
    ) -> JudgeResult:
        """Which candidate is better per source: values 1.0 (A), 0.0 (B), NaN unparsed; answers "A" / "B".
        ``swap``: ask again with the candidates in the other order; when the two answers disagree the
        value is 0.5 and the answer "tie" (position bias shows as ties), and NaN when either is unparsed."""
        if self.kind != "choice":
            raise JudgeError(
                f"choose() needs a choice judge; this one is {self.kind}: call score(sources, hypotheses)."
            )
        rows, fields = self._check((sources, candidates_a, candidates_b), fields)
        if not swap:
            return self._result(self._answers(rows, fields, progress))
        both = rows + [(s, b, a) for s, a, b in rows]
        texts = self._answers(both, {k: v * 2 for k, v in fields.items()}, progress)
        first, second = self._result(texts[: len(rows)]), self._result(texts[len(rows) :])
        values = np.where(
            np.isnan(first.values) | np.isnan(second.values),
            np.nan,
            np.where(first.values == 1 - second.values, first.values, 0.5),
        )
        label = {1.0: self.template.answers[0].strip(), 0.0: self.template.answers[1].strip(), 0.5: "tie"}
        answers = [None if np.isnan(v) else label[float(v)] for v in values]
        return JudgeResult(values, answers, [f"{a} | swapped: {b}" for a, b in zip(first.texts, second.texts)])

    def prefer_first(self, sources, candidates, partners, progress=False) -> JudgeResult:
        """For each (source, candidate) and its partners (the other candidates of its preference
        items): asked "candidate (A) or partner (B)?" once per partner. Value: the share of those
        answers that choose the candidate (1 or 0 with one partner), NaN when any answer cannot be
        parsed; answer: "A" / "B" (or "2/3 A" with several partners); text: the raw answers, " | "
        between partners. The item's other pair, asked the same way, puts the candidates the other
        way round: together they are ``choose(..., swap=True)``'s two orders."""
        if self.kind != "choice":
            raise JudgeError(f"prefer_first() needs a choice judge; this one is {self.kind}.")
        partners = [[str(p) for p in group] for group in partners]
        if len(partners) != len(list(candidates)):
            raise JudgeError(f"{len(partners)} partner lists for {len(list(candidates))} candidates.")
        if any(not group for group in partners):
            raise JudgeError("Every candidate needs at least one partner to be compared with.")
        rows = [(s, c, p) for s, c, group in zip(sources, candidates, partners) for p in group]
        flat = self.choose([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows], progress=progress)
        values, texts, at = [], [], 0
        answers: list[Optional[str]] = []
        first = self.template.answers[0].strip()
        for group in partners:
            part = slice(at, at + len(group))
            at += len(group)
            chosen = flat.values[part]
            if np.isnan(chosen).any():
                values.append(math.nan)
                answers.append(None)
            else:
                values.append(float(chosen.mean()))
                wins = int(chosen.sum())
                answers.append(flat.answers[part.start] if len(group) == 1 else f"{wins}/{len(group)} {first}")
            texts.append(" | ".join(flat.texts[part]))
        return JudgeResult(np.array(values, dtype=float), answers, texts)

    def _check(self, columns, fields):
        texts = [list(c) for c in columns]
        if len(texts) == 2:
            texts = list(sentence_pairs(texts[0], texts[1], JudgeError))
        else:
            for other in texts[1:]:
                sentence_pairs(texts[0], other, JudgeError)
        fields = {k: list(v) for k, v in (fields or {}).items()}
        for key, values in fields.items():
            if len(values) != len(texts[0]):
                raise JudgeError(f"Field {key!r} has {len(values)} values for {len(texts[0])} rows.")
        missing = [f for f in self.template.fields if f not in fields and not self.template._optional(f)]
        if missing:
            raise JudgeError(f"Judge template {self.template.name!r} needs the per-row field(s) {sorted(missing)}.")
        return list(zip(*texts)), fields
