"""Why this score: how much each word of a pair moves its PLUIE score.

    >>> from pluie_core.explain import word_contributions
    >>> explanation = word_contributions(scorer, "The cat drinks water.", "The cat drinks milk.")
    >>> explanation.score, [(w.word, w.contribution) for w in explanation.hypothesis_words]

A word's contribution is the pair's score minus the score of the same pair with that word left out
(leave-one-out occlusion), so it is in the score's own unit, log p(answer₁) − log p(answer₂):
positive, the word pushes towards answer₁ ("Yes": same meaning) and leaving it out lowers the
score; negative, it pushes towards answer₂ ("No").

Words are the tokens of pluie_core.diff (the word diff's own), so the spans fall on the diff's
tokens; its punctuation tokens are listed but not left out. The pair and every variant with one word
left out go through one call of the scorer (``scorer.score``), so they share its batches and its
cached prompt prefix: n_words + 1 pairs cost what a batch of that many pairs costs.

An explanation records the precision its scores were computed in (the scorer's dtype): in bfloat16 or
float16 the same pair rounds differently in another batch, so a contribution agrees with re-scoring its
variant alone only to a few tenths, and ``precision_note`` says so in a sentence for the page.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

from pluie_core.diff import tokenize, word_diff
from pluie_core.scorer import PluieError
from pluie_core.visible import visible_html

__all__ = [
    "MAX_WORDS",
    "Explanation",
    "TokenContribution",
    "word_contributions",
    "without_word",
    "sentence_tokens",
    "directed_contributions",
    "explanation_to_json",
    "explanation_from_json",
    "explanation_html",
    "precision_note",
]

MAX_WORDS = 200  # per sentence: each word is one more pair to score
_WORDLIKE = re.compile(r"\w")


@dataclass(frozen=True)
class TokenContribution:
    """One token of a sentence: its text, its span ``sentence[start:end]``, whether it is a word, and
    its contribution (None for punctuation, and for the only word of a one-word sentence)."""

    token: str
    start: int
    end: int
    is_word: bool
    contribution: float | None


@dataclass(frozen=True)
class Explanation:
    """The pair's score and, for each sentence, its tokens in order (one per pluie_core.diff.tokenize
    token, so they line up with pluie_core.diff.word_diff's lists)."""

    source: str
    hypothesis: str
    score: float
    source_tokens: tuple[TokenContribution, ...]
    hypothesis_tokens: tuple[TokenContribution, ...]
    precision: str | None = None  # the scorer's dtype ("float32", "bfloat16"...), None when it has none

    @property
    def source_words(self) -> list[TokenContribution]:
        return [t for t in self.source_tokens if t.is_word]

    @property
    def hypothesis_words(self) -> list[TokenContribution]:
        return [t for t in self.hypothesis_tokens if t.is_word]


def sentence_tokens(sentence: str) -> list[tuple[str, int, int, bool]]:
    """(token, start, end, is_word) of each pluie_core.diff token of a sentence. A word holds a letter
    or a digit ("don't", "3.5"); a token without one is punctuation."""
    tokens, end = [], 0
    for space, token in tokenize(sentence):
        start = end + len(space)
        end = start + len(token)
        tokens.append((token, start, end, bool(_WORDLIKE.search(token))))
    return tokens


def without_word(sentence: str, start: int, end: int) -> str:
    """The sentence with ``sentence[start:end]`` left out, as a person would delete it: the
    whitespace on both sides of it becomes the whitespace that was before it, or none where the word
    touched its neighbour ("world." -> ".", "(hello" -> "("), began the sentence or ended it. So no
    double space, and no space left dangling before punctuation that followed the word directly;
    a space that was before punctuation in the sentence itself ("word ," tokenised text) stays.
    Nothing else changes (no re-capitalisation)."""
    left, right = sentence[:start], sentence[end:]
    left_core, right_core = left.rstrip(), right.lstrip()
    space_before, space_after = left[len(left_core) :], right[: len(right) - len(right_core)]
    joint = space_before if (left_core and right_core and space_before and space_after) else ""
    return left_core + joint + right_core


def _checked(name: str, sentence) -> list[tuple[str, int, int, bool]]:
    if not isinstance(sentence, str):
        raise PluieError(f"The {name} is not a text (got {sentence!r}); give both sentences of the pair.")
    tokens = sentence_tokens(sentence)
    words = sum(is_word for *_, is_word in tokens)
    if words > MAX_WORDS:
        raise PluieError(
            f"The {name} has {words:,} words; word contributions are computed for sentences of "
            f"at most {MAX_WORDS} words."
        )
    return tokens


def word_contributions(
    scorer, source: str, hypothesis: str, symmetric: bool = False, fields: dict | None = None
) -> Explanation:
    """The PLUIE score of (source, hypothesis) and how much each word of either sentence moves it.

    scorer: a pluie_core.scorer.PluieScorer (the pair's run's model, template and answers).
    contribution = score(pair) − score(pair with that word left out, see ``without_word``), in the
    score's unit: > 0 the word pushes towards answer₁ ("Yes"), < 0 towards answer₂ ("No"). Each
    contribution is what ``scorer.score`` gives the variant on its own, up to the float rounding
    that batching changes (tests/test_explain.py).
    Punctuation tokens are not left out (contribution None). The only word of a one-word sentence
    is not left out either (None): without it the sentence has no word left to mean anything.
    symmetric, fields: as for ``scorer.score`` (fields: one value per name, used for every variant).
    Raises PluieError when a sentence has more than MAX_WORDS words (or the scorer refuses the pair).
    One call of ``scorer.score`` on the pair and its variants (INDIRECT-like templates generate an
    explanation for each of them).
    """
    sides = {
        "source": (source, _checked("source", source)),
        "hypothesis": (hypothesis, _checked("hypothesis", hypothesis)),
    }
    sources, hypotheses, slots = [source], [hypothesis], {}
    for name, (sentence, tokens) in sides.items():
        if sum(is_word for *_, is_word in tokens) < 2:
            continue
        for i, (_token, start, end, is_word) in enumerate(tokens):
            if is_word:
                ablated = without_word(sentence, start, end)
                slots[name, i] = len(sources)
                sources.append(ablated if name == "source" else source)
                hypotheses.append(ablated if name == "hypothesis" else hypothesis)
    repeated = {key: [value] * len(sources) for key, value in (fields or {}).items()}
    scores = scorer.score(sources, hypotheses, symmetric=symmetric, fields=repeated or None)
    full = float(scores[0])

    def listed(name: str) -> tuple[TokenContribution, ...]:
        return tuple(
            TokenContribution(
                token, start, end, is_word, full - float(scores[slots[name, i]]) if (name, i) in slots else None
            )
            for i, (token, start, end, is_word) in enumerate(sides[name][1])
        )

    return Explanation(source, hypothesis, full, listed("source"), listed("hypothesis"), _precision(scorer))


def _precision(scorer) -> str | None:
    """The name of the dtype the scorer computes in ("bfloat16"), None for a scorer without one."""
    dtype = getattr(scorer, "dtype", None)
    return None if dtype is None else str(dtype).removeprefix("torch.")


# ---------------------------------------------------------------- a run's direction, storage, drawing
def directed_contributions(scorer, source: str, hypothesis: str, direction: str = "forward") -> Explanation:
    """word_contributions as a PLUIE run of that ``direction`` scores the pair (worker.load_metric):
    "forward" scores (source, hypothesis), "backward" (hypothesis, source), "symmetric" the mean of both.
    The result's source and hypothesis are the pair's own, whatever the direction."""
    if direction == "backward":
        turned = word_contributions(scorer, hypothesis, source)
        return Explanation(
            source, hypothesis, turned.score, turned.hypothesis_tokens, turned.source_tokens, turned.precision
        )
    return word_contributions(scorer, source, hypothesis, symmetric=direction == "symmetric")


def explanation_to_json(explanation: Explanation) -> dict:
    """A plain dict for a JSON column: the sentences, the score and each token as
    [token, start, end, is_word, contribution]."""

    def rows(tokens):
        return [[t.token, t.start, t.end, t.is_word, t.contribution] for t in tokens]

    return {
        "source": explanation.source,
        "hypothesis": explanation.hypothesis,
        "score": explanation.score,
        "source_tokens": rows(explanation.source_tokens),
        "hypothesis_tokens": rows(explanation.hypothesis_tokens),
        "precision": explanation.precision,
    }


def explanation_from_json(data: dict) -> Explanation:
    """The Explanation that explanation_to_json stored."""

    def tokens(rows):
        return tuple(
            TokenContribution(str(t), int(s), int(e), bool(w), None if c is None else float(c))
            for t, s, e, w, c in rows
        )

    precision = data.get("precision")  # absent from explanations stored before it was recorded
    return Explanation(
        data["source"],
        data["hypothesis"],
        float(data["score"]),
        tokens(data["source_tokens"]),
        tokens(data["hypothesis_tokens"]),
        None if precision is None else str(precision),
    )


def precision_note(explanation: Explanation) -> str | None:
    """A sentence for the reader when the explanation was computed in half precision, None otherwise.
    bfloat16 keeps 8 bits of mantissa, float16 11: a pair and its variants are rounded differently in
    another batch, so a contribution agrees with re-scoring the variant alone only that far (measured
    with a 7B model on an H100: bfloat16 0.22 in the median pair, 0.41 at most; float16 0.032 and 0.046;
    float32 1.7e-4: bench/explain.py, bench/results/2026-11-26-gpu-h100.md)."""
    how_far = {"bfloat16": ("a few tenths", "0.4", "0.3"), "float16": ("a few hundredths", "0.05", "0.05")}.get(
        explanation.precision or ""
    )
    if how_far is None:
        return None
    amount, largest, below = how_far
    return (
        f"Computed in {explanation.precision}, whose rounding changes with the batch: a word's number can differ "
        f"from re-scoring the sentence without that word by {amount} (up to {largest} measured on a 7B model), "
        f"so read contributions under about {below} as no push at all. The score can differ from the run's "
        "stored one as much. A float32 run agrees to about 0.0002."
    )


# a diverging scale, translucent so the text stays readable on either theme: blue pushes towards answer₁
# ("Yes", same meaning), red towards answer₂; light-dark() picks the theme's shade (as pluie_core.diff).
# (light, dark) colours and each theme's opacity range, from the smallest push to the largest: the faintest
# tint still tells red from blue at a glance (CIE ΔE ≥ 25 between them over the box; 0.12 read ~10 in
# light mode, the same grey-pink and grey-blue), the strongest keeps the text at a contrast of 4.5 or more
_TOWARDS_FIRST = ("37,99,235", "96,165,250")
_TOWARDS_SECOND = ("220,38,38", "248,113,113")
_OPACITY = {"light": (0.28, 0.58), "dark": (0.25, 0.55)}
# the word diff's changed tokens, underlined (the colour is the contribution's)
_CHANGED = "text-decoration:underline 2px;text-decoration-color:light-dark(#b08800,#e3c000);text-underline-offset:4px"


def _shade(contribution: float, largest: float) -> str:
    share = min(abs(contribution) / largest, 1.0) if largest > 0 else None
    light, dark = _TOWARDS_FIRST if contribution >= 0 else _TOWARDS_SECOND
    (low, high), (dark_low, dark_high) = _OPACITY["light"], _OPACITY["dark"]
    alpha = 0.0 if share is None else low + (high - low) * share
    dark_alpha = 0.0 if share is None else dark_low + (dark_high - dark_low) * share
    return (
        f"background:rgba({light},{alpha:.2f});"
        f"background:light-dark(rgba({light},{alpha:.2f}),rgba({dark},{dark_alpha:.2f}));"
        "border-radius:3px;padding:0 1px"
    )


def explanation_html(explanation: Explanation, answers: tuple[str, str] = ("Yes", "No")) -> tuple[str, str]:
    """The two sentences as HTML, each word coloured by its contribution (``<span class="pluie-why
    pluie-why-first|second" title="+0.412 ..." style=...>``): blue pushes the score towards answers[0],
    red towards answers[1], the stronger the colour the larger the share of the largest contribution of
    the pair; the number on hover. The word diff's changed words are underlined. All text is escaped and
    hidden characters show as marks (pluie_core.visible.visible_html), as in pluie_core.diff."""
    tags = [[tag for _, tag in side] for side in word_diff(explanation.source, explanation.hypothesis)]
    contributions = [
        t.contribution for t in explanation.source_tokens + explanation.hypothesis_tokens if t.contribution is not None
    ]
    largest = max((abs(c) for c in contributions), default=0.0)

    def render(sentence: str, tokens, changed: list[str]) -> str:
        parts, end = [], 0
        for k, token in enumerate(tokens):
            parts.append(visible_html(sentence[end : token.start]))
            text = visible_html(sentence[token.start : token.end])
            underline = _CHANGED if k < len(changed) and changed[k] != "equal" else ""
            if token.contribution is None:
                parts.append(f'<span style="{underline}">{text}</span>' if underline else text)
            else:
                c = token.contribution
                towards = answers[0] if c >= 0 else answers[1]
                title = (
                    f"{c:+.3f}: pushes the score towards “{towards}”; leaving this word out moves the score "
                    f"by {-c:+.3f}"
                )
                side = "first" if c >= 0 else "second"
                parts.append(
                    f'<span class="pluie-why pluie-why-{side}" data-contribution="{c:.6g}" '
                    f'title="{html.escape(title, quote=True)}" style="{_shade(c, largest)};{underline}">'
                    f"{text}</span>"
                )
            end = token.end
        parts.append(visible_html(sentence[end:]))
        return "".join(parts)

    return (
        render(explanation.source, explanation.source_tokens, tags[0]),
        render(explanation.hypothesis, explanation.hypothesis_tokens, tags[1]),
    )
