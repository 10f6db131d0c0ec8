"""PLUIE prompt templates as data: chat turns with ``{source}`` / ``{hypothesis}`` placeholders.

A template is a list of chat turns (``role`` + ``content``) that the scorer renders through the
model's own chat template with ``add_generation_prompt=True``, so the prompt ends exactly where
the assistant's one-word answer begins. Built-in templates live as YAML files beside this module
(``pluie_core/templates/*.yaml``):

- ``direct``, ``indirect``, ``fs-direct``: the three templates of Lemesle et al. (COLING 2025),
  wording of section 3.1 and appendix A.4 verbatim;
- ``fs-direct-fr``, ``net``, ``rev``: task-specific *-PLUIE variants in the spirit of
  star-pluie 2026 (French paraphrase, network policy, instruction-following revision).

Placeholders: ``{source}``, ``{hypothesis}``, ``{generated}`` (INDIRECT: the explanation the model
generates first, in an assistant turn) and any other ``{name}`` given per pair as an extra field
(``rev`` uses ``{instruction}`` and the optional ``{reference}``). A turn with ``when: name`` is kept
only for pairs whose field ``name`` is non-empty. Only these placeholders are substituted, so other
braces in a prompt (JSON, code) stay as written.

A user template is a YAML / JSON file or mapping::

    name: my-template
    answers: ['Yes', 'No']          # quote them: YAML reads a bare Yes / No as true / false
    turns:
      - {role: user, content: 'Do "{source}" and "{hypothesis}" mean the same thing?'}

or simply a list of such turns.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

TEMPLATE_DIR = Path(__file__).with_name("templates")
ROLES = ("system", "user", "assistant")
GENERATED = "generated"
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


class TemplateError(ValueError):
    """A template that cannot be used; the message says what to change."""


@dataclass(frozen=True)
class Template:
    """A PLUIE prompt: chat turns with placeholders, and the two answers it opposes."""

    name: str
    turns: tuple[dict, ...]
    answers: tuple[str, str] = ("Yes", "No")
    answer_prefix: str = ""
    description: str = ""
    max_new_tokens: int = 128
    fields: frozenset = field(init=False)

    def __post_init__(self):
        _validate(self)
        names = {m.group(1) for t in self.turns for m in _PLACEHOLDER.finditer(t["content"])}
        names |= {t["when"] for t in self.turns if t.get("when")}
        object.__setattr__(self, "fields", frozenset(names - {"source", "hypothesis", GENERATED}))

    @property
    def needs_generation(self) -> bool:
        """True for INDIRECT-like templates: the model writes the ``{generated}`` turn first."""
        return any(f"{{{GENERATED}}}" in t["content"] for t in self.turns)

    def messages(self, source: str, hypothesis: str, generated: str | None = None, **fields) -> list[dict]:
        """The chat turns for one pair, placeholders filled.

        For a template that needs generation, without ``generated`` this returns the turns that
        come *before* the generated one (the prompt for the generation step)."""
        values = {"source": source, "hypothesis": hypothesis, **{k: v for k, v in fields.items()}}
        missing = [f for f in self.fields if f not in values and not self._optional(f)]
        if missing:
            raise TemplateError(
                f"Template {self.name!r} needs the per-pair field(s) {sorted(missing)}; pass them as "
                f"extra columns / fields (e.g. fields={{{missing[0]!r}: [...]}})."
            )
        out: list[dict] = []
        for turn in self.turns:
            when = turn.get("when")
            if when and not _present(values.get(when)):
                continue
            if f"{{{GENERATED}}}" in turn["content"]:
                if generated is None:
                    return out
                values[GENERATED] = generated
            content = _PLACEHOLDER.sub(lambda m: _fill(m, values), turn["content"])
            out.append({"role": turn["role"], "content": content})
        return out

    def _optional(self, name: str) -> bool:
        """A field is optional when every turn that uses it is conditional on it."""
        users = [t for t in self.turns if f"{{{name}}}" in t["content"] or t.get("when") == name]
        return all(t.get("when") == name for t in users)

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "description": self.description,
            "answers": list(self.answers),
            "answer_prefix": self.answer_prefix,
            "max_new_tokens": self.max_new_tokens,
            "turns": [dict(t) for t in self.turns],
        }


def _present(value) -> bool:
    return value is not None and not (isinstance(value, float) and value != value) and str(value).strip() != ""


def _fill(match: re.Match, values: dict) -> str:
    name = match.group(1)
    if name not in values:
        return match.group(0)  # not a placeholder we know: leave the braces as written
    value = values[name]
    return "" if value is None else str(value)


def _validate(template: Template) -> None:
    where = f"Template {template.name!r}"
    if not template.turns:
        raise TemplateError(f"{where} has no turns; give a list of {{role, content}} chat turns.")
    for i, turn in enumerate(template.turns, 1):
        if not isinstance(turn, dict) or "role" not in turn or "content" not in turn:
            raise TemplateError(f"{where}: turn {i} must be a mapping with 'role' and 'content'.")
        if turn["role"] not in ROLES:
            raise TemplateError(f"{where}: turn {i} has role {turn['role']!r}; use one of {', '.join(ROLES)}.")
        if not isinstance(turn["content"], str):
            raise TemplateError(
                f"{where}: turn {i} content {turn['content']!r} is not text; in YAML quote it "
                "(a bare Yes / No is read as true / false)."
            )
    text = "".join(t["content"] for t in template.turns)
    for needed in ("{source}", "{hypothesis}"):
        if needed not in text:
            raise TemplateError(f"{where} never uses {needed}; put it in one of the turns.")
    if template.turns[-1]["role"] == "assistant":
        raise TemplateError(
            f"{where} ends with an assistant turn; end with the user's question (the model's answer is what is scored)."
        )
    gen = [i for i, t in enumerate(template.turns) if f"{{{GENERATED}}}" in t["content"]]
    if len(gen) > 1 or (gen and template.turns[gen[0]]["role"] != "assistant"):
        raise TemplateError(f"{where}: {{{GENERATED}}} must appear once, in an assistant turn.")
    if len(template.answers) != 2 or not all(isinstance(a, str) and a.strip() for a in template.answers):
        raise TemplateError(
            f"{where}: answers must be two non-empty words, e.g. ['Yes', 'No'] (quoted in YAML), not {template.answers!r}."
        )
    if template.answers[0] == template.answers[1]:
        raise TemplateError(f"{where}: the two answers are the same word {template.answers[0]!r}.")


def template_from_mapping(data, name: str = "custom") -> Template:
    """A Template from a mapping (as in the YAML files) or from a plain list of turns."""
    if isinstance(data, list):
        data = {"turns": data}
    if not isinstance(data, dict) or "turns" not in data:
        raise TemplateError("A template must be a list of chat turns or a mapping with a 'turns' list.")
    unknown = set(data) - {"name", "description", "answers", "answer_prefix", "max_new_tokens", "turns"}
    if unknown:
        raise TemplateError(f"Unknown template key(s) {sorted(unknown)}.")
    answers = data.get("answers", ("Yes", "No"))
    if not isinstance(answers, (list, tuple)):
        raise TemplateError(f"answers must be a list of two words, not {answers!r}.")
    return Template(
        name=str(data.get("name", name)),
        turns=tuple(dict(t) if isinstance(t, dict) else t for t in data["turns"]),
        answers=tuple(answers),
        answer_prefix=str(data.get("answer_prefix", "") or ""),
        description=str(data.get("description", "") or ""),
        max_new_tokens=int(data.get("max_new_tokens", 128)),
    )


def load_template_file(path) -> Template:
    """Read a user template from a .yaml / .yml / .json file."""
    path = Path(path)
    if not path.is_file():
        raise TemplateError(f"Template file {path} does not exist.")
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise TemplateError(f"Template file {path} is not valid {path.suffix.lstrip('.').upper()}: {exc}") from None
    return template_from_mapping(data, name=path.stem)


def _load_builtins() -> dict[str, Template]:
    return {p.stem: load_template_file(p) for p in sorted(TEMPLATE_DIR.glob("*.yaml"))}


BUILTIN_TEMPLATES: dict[str, Template] = _load_builtins()


def get_template(spec) -> Template:
    """Resolve a template: a Template, a built-in name (case-insensitive, e.g. "FS-DIRECT"),
    a path to a YAML / JSON file, a mapping, or a list of turns."""
    if isinstance(spec, Template):
        return spec
    if isinstance(spec, (dict, list)):
        return template_from_mapping(spec)
    if isinstance(spec, (str, Path)):
        key = str(spec).strip().lower().replace("_", "-")
        if key in BUILTIN_TEMPLATES:
            return BUILTIN_TEMPLATES[key]
        if Path(spec).suffix.lower() in (".yaml", ".yml", ".json") or Path(spec).exists():
            return load_template_file(spec)
        raise TemplateError(
            f"Unknown template {str(spec)!r}; use one of {', '.join(BUILTIN_TEMPLATES)} or a path to a YAML / JSON file."
        )
    raise TemplateError(f"A template cannot be built from {type(spec).__name__}.")
