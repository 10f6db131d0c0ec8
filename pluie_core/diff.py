"""Word-level differences between two sentences, highlighted in yellow as in the labelling protocol
(ParaPLUIE, appendix A.3), for the labelling view and the disagreement browser.

Tokens are words (letters/digits, with inner apostrophes or hyphens: "don't", "well-known"),
numbers with decimal parts ("3.5", "1,000") and single punctuation marks. Comparison is
case-sensitive. The rendered HTML keeps each sentence's original spacing.

The diff is of the text as stored; bidi controls and invisible characters (pluie_core.visible) are
then drawn in place as visible marks, never applied: a right-to-left override cannot make a sentence
read otherwise than the model reads it, nor move the highlight onto another word.
"""

from __future__ import annotations

import difflib
import re

from pluie_core.visible import visible_html

__all__ = ["word_diff", "diff_html", "tokenize", "MARK_STYLE"]

# a word may carry combining accents (decomposed "é"), which \w alone does not match
_WORD = r"(?:\w|[\u0300-\u036f])+"
_TOKEN = re.compile(rf"\d+(?:[.,]\d+)+|{_WORD}(?:['’\-]{_WORD})*|[^\w\s]")
# inline, so the highlight shows without any stylesheet; light-dark() picks the colours of the theme the page
# is in (its CSS color-scheme, which Streamlit sets), the plain yellow first for a browser without it
MARK_STYLE = "background:#fff176;background:light-dark(#fff176,#5e5300);color:light-dark(#000,#f5f0c8)"

# difflib opcode -> tag on (sentence a, sentence b)
_TAGS = {
    "equal": ("equal", "equal"),
    "replace": ("replace", "replace"),
    "delete": ("delete", None),
    "insert": (None, "insert"),
}


def tokenize(sentence: str) -> list[tuple[str, str]]:
    """Tokens of a sentence with the whitespace before each: [(leading_space, token), ...]."""
    tokens, end = [], 0
    for match in _TOKEN.finditer(sentence):
        tokens.append((sentence[end : match.start()], match.group()))
        end = match.end()
    return tokens


def _diff_tokens(a: str, b: str):
    """(tokens_a, tags_a, tokens_b, tags_b, trailing_a, trailing_b)."""
    tokens_a, tokens_b = tokenize(a), tokenize(b)
    words_a, words_b = [t for _, t in tokens_a], [t for _, t in tokens_b]
    tags_a, tags_b = [""] * len(words_a), [""] * len(words_b)
    # autojunk off: on short sentences frequent words ("the") must still be matched
    matcher = difflib.SequenceMatcher(None, words_a, words_b, autojunk=False)
    for opcode, a0, a1, b0, b1 in matcher.get_opcodes():
        tag_a, tag_b = _TAGS[opcode]
        if tag_a:
            tags_a[a0:a1] = [tag_a] * (a1 - a0)
        if tag_b:
            tags_b[b0:b1] = [tag_b] * (b1 - b0)
    trailing_a = a[len("".join(s + t for s, t in tokens_a)) :]
    trailing_b = b[len("".join(s + t for s, t in tokens_b)) :]
    return tokens_a, tags_a, tokens_b, tags_b, trailing_a, trailing_b


def word_diff(a: str, b: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Word differences of two sentences: (ops_a, ops_b), each a list of (token, tag) with tag one of
    "equal", "replace" (on both sides), "delete" (only in a) or "insert" (only in b)."""
    tokens_a, tags_a, tokens_b, tags_b, _, _ = _diff_tokens(a, b)
    return (
        [(token, tag) for (_, token), tag in zip(tokens_a, tags_a)],
        [(token, tag) for (_, token), tag in zip(tokens_b, tags_b)],
    )


def _render(tokens: list[tuple[str, str]], tags: list[str], trailing: str) -> str:
    """HTML of one sentence: every piece escaped (hidden characters shown as marks), each run of differing tokens with the same tag in
    one <mark> (the spaces inside the run included, the space before it not)."""
    parts, open_tag = [], None
    for (space, token), tag in zip(tokens, tags):
        if open_tag and tag != open_tag:
            parts.append("</mark>")
            open_tag = None
        parts.append(visible_html(space))
        if tag != "equal" and tag != open_tag:
            parts.append(f'<mark class="pluie-diff pluie-diff-{tag}" style="{MARK_STYLE}">')
            open_tag = tag
        parts.append(visible_html(token))
    if open_tag:
        parts.append("</mark>")
    parts.append(visible_html(trailing))
    return "".join(parts)


def diff_html(a: str, b: str) -> tuple[str, str]:
    """The two sentences as HTML with their differing words highlighted in yellow:
    ``<mark class="pluie-diff pluie-diff-{tag}" style="{MARK_STYLE}">``. All text is escaped,
    so markup in a sentence is shown as text, never run; bidi controls and invisible characters
    show as marks (``<span class="pluie-hidden-char">⟨U+202E⟩</span>``), in place, never applied."""
    tokens_a, tags_a, tokens_b, tags_b, trailing_a, trailing_b = _diff_tokens(a, b)
    return _render(tokens_a, tags_a, trailing_a), _render(tokens_b, tags_b, trailing_b)
