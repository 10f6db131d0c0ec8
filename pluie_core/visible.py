"""User text shown as the store holds it: what a reader sees is what is scored and exported.

Characters that change a text unseen — bidi controls (a right-to-left override makes "ihg fed cba"
read "abc def ghi"), zero-width spaces and joiners, the word joiner, the BOM, the soft hyphen,
invisible operators, tag characters: every format character (Unicode category Cf), and the
invisible fillers — are shown as a visible mark, ⟨U+202E⟩, never applied. Only what is shown
changes: the store, the model and the export keep the text exactly as imported.

- ``visible_text``: for plain-text views (st.text, tables, selectbox options).
- ``visible_html``: escaped HTML with each mark in a styled span that names the character
  (the pair's word-difference highlight, pluie_core.diff).
- ``markdown_text``: text a user typed or imported, safe inside Markdown (ui.base.page.user_text):
  marked, then escaped so that no Markdown, HTML, LaTeX or link is made of it.
- ``document_text``: the same for a Markdown file read outside the app (the dataset card), with no
  invisible character added: an address or a name with "@" in it is inline code, not a link.
- ``count_marked`` / ``hidden_note``: how many texts hold such a character, and the import
  preview's sentence on them.
"""

from __future__ import annotations

import functools
import html
import re
import sys
import unicodedata
from typing import Iterable, Optional

from pluie_core.wording import counted

__all__ = [
    "visible_text",
    "visible_html",
    "markdown_text",
    "document_text",
    "count_marked",
    "hidden_note",
    "HIDDEN_STYLE",
]

# invisible characters outside category Cf: the combining grapheme joiner and the Hangul fillers
# (variation selectors are left alone: they choose an emoji's look, and show nothing by themselves)
_INVISIBLE_OTHERS = "\u034f\u115f\u1160\u3164\uffa0"
# amber on cream in a light theme, on dark brown in a dark one (light-dark(): the page's color-scheme)
HIDDEN_STYLE = (
    "font:0.7em/1 monospace;color:#7a4a00;background:#fff3d6;border:1px solid #d9a441;"
    "color:light-dark(#7a4a00,#ffd591);background:light-dark(#fff3d6,#3d2c0a);"
    "border-color:light-dark(#d9a441,#a57a2c);"
    "border-radius:3px;padding:0 2px;margin:0 1px;vertical-align:0.15em;white-space:nowrap"
)


@functools.cache
def _hidden() -> "re.Pattern[str]":
    """Every hidden character of this Python's Unicode tables, as one character class (built on first
    use: about 0.1 s)."""
    codes = [c for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cf"]
    codes += [ord(c) for c in _INVISIBLE_OTHERS]
    ranges: list[list[int]] = []
    codes = sorted(codes)
    for code in codes:
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1][1] = code
        else:
            ranges.append([code, code])
    return re.compile(
        "[" + "".join(re.escape(chr(a)) + (f"-{re.escape(chr(b))}" if b > a else "") for a, b in ranges) + "]"
    )


def _mark(char: str) -> str:
    return f"⟨U+{ord(char):04X}⟩"


def _title(char: str) -> str:
    name = unicodedata.name(char, f"format character U+{ord(char):04X}").lower()
    return f"{name}: shown, not applied"


def visible_text(text: Optional[str]) -> str:
    """The text with each hidden character replaced by its mark: "\\u202eabc" -> "⟨U+202E⟩abc"."""
    text = "" if text is None else str(text)
    return _hidden().sub(lambda found: _mark(found.group(0)), text)


def visible_html(text: Optional[str]) -> str:
    """The text as escaped HTML, each hidden character a ``<span class="pluie-hidden-char">`` that shows
    its mark and, on hover, its name ("right-to-left override: shown, not applied")."""
    text = "" if text is None else str(text)
    parts, end = [], 0
    for found in _hidden().finditer(text):
        char = found.group(0)
        parts.append(html.escape(text[end : found.start()], quote=True))
        parts.append(
            f'<span class="pluie-hidden-char" title="{html.escape(_title(char), quote=True)}" '
            f'style="{HIDDEN_STYLE}">{_mark(char)}</span>'
        )
        end = found.end()
    parts.append(html.escape(text[end:], quote=True))
    return "".join(parts)


def count_marked(texts: Iterable[Optional[str]]) -> int:
    """How many of the texts hold at least one hidden character (None counts as holding none)."""
    pattern = _hidden()
    return sum(1 for text in texts if text is not None and pattern.search(str(text)))


# Markdown signs that act anywhere in a line (an underscore unless between letters or digits: snake_case stays)
_INLINE_SIGNS = re.compile(r"[\\`*\[\]<$~&|]|(?<![^\W_])_|_(?![^\W_])")
# signs that act at the start of a line: headings, lists, quotes, setext underlines, ordered lists
_LINE_STARTS = re.compile(r"(?m)^([ \t]*)([#\-+=>]|\d+(?=[.)]))")
# what Markdown and Streamlit act on even when escaped: http(s)://, www., e-mail addresses (links),
# and :name: / :name[ (emoji, icons, coloured text); a word joiner after them stops that
_UNESCAPABLE = re.compile(r"(?i)(?:https?|www)(?=[:.])|@|:(?=[\w+\-/])")
_LINE_BREAKS = re.compile(r"\r\n?|\n")


def markdown_text(value) -> str:
    """Text a user typed or imported, made safe to put in Markdown: it then reads as typed, and no
    Markdown, HTML, LaTeX, link, image, emoji or Streamlit directive in it takes effect.

    How: hidden characters are marked first (visible_text), so that only characters of the input are
    marked; then the signs that make Markdown (backslash ` * [ ] < $ ~ & |, _ unless between letters
    or digits, and # - + = > or "1." at a line's start) are backslash-escaped; an invisible word joiner
    (U+2060) follows `http`, `https` and `www` before ':' / '.', every '@', and ':' before a letter,
    since Markdown makes links of addresses, and Streamlit emoji, icons and colours of :name:, even
    when escaped; line breaks stay line breaks. None gives ""."""
    text = visible_text(value)
    text = _UNESCAPABLE.sub(lambda found: found.group(0) + "\u2060", text)
    text = _INLINE_SIGNS.sub(lambda found: "\\" + found.group(0), text)
    text = _LINE_STARTS.sub(
        lambda found: found.group(1)
        + (found.group(2) + "\\" if found.group(2)[0].isdigit() else "\\" + found.group(2)),
        text,
    )
    return _LINE_BREAKS.sub("\\\\\n", text)


# what a Markdown renderer outside the app (GitHub, the Hub) makes a link, a mention or an emoji of even when
# escaped: an address (GFM's autolinks: http://, https://, ftp://, www., mailto:, xmpp:, an e-mail address), an
# @name, a :name: (GitHub's emoji)
_LINKED_WORD = re.compile(r"(?i)(?:https?|ftp)://|www\.|mailto:|xmpp:|@|:[\w+\-]+:")
# a word's punctuation around it, left outside its code span: "(alice@example.org)." reads as typed
_WORD_EDGES = re.compile(r"^([(\[{<\"'“‘«]*)(.*?)([)\]}>\"'”’».,;:!?]*)$", re.S)


def document_text(value) -> str:
    """Text a user typed or imported, safe in a Markdown file read outside the app (the dataset card on the
    Hub or GitHub), with nothing invisible added: markdown_text's escaping, except that a word a renderer
    would link, mention or make an emoji of (_LINKED_WORD) is written as inline code instead of holding a
    word joiner (U+2060), so that an address or a name such as alice@example.org copied from the page is the
    one typed. A word holding a backtick, a dollar sign or a pipe (which a code span cannot hold in every
    place: a table cell, the Hub's math) keeps markdown_text's joiner."""
    parts = []
    for word in re.split(r"(\s+)", visible_text(value)):
        if not _LINKED_WORD.search(word):
            parts.append(_escaped(word, joiners=False))  # nothing a renderer acts on: no joiner needed
        elif re.search(r"[`$|]", word):
            parts.append(_escaped(word))
        else:
            edges = _WORD_EDGES.match(word)
            assert edges is not None  # every part of the pattern may be empty: it matches any word
            before, core, after = edges.groups()
            if not _LINKED_WORD.search(core):  # ":tada:" lost its closing colon to the edge: the word whole
                before, core, after = "", word, ""
            parts.append(_escaped(before, joiners=False) + f"`{core}`" + _escaped(after, joiners=False))
    text = _LINE_STARTS.sub(
        lambda found: found.group(1)
        + (found.group(2) + "\\" if found.group(2)[0].isdigit() else "\\" + found.group(2)),
        "".join(parts),
    )
    return _LINE_BREAKS.sub("\\\\\n", text)


def _escaped(text: str, joiners: bool = True) -> str:
    """markdown_text's inline escaping of already-marked text: its joiners (unless ``joiners`` is False),
    then the Markdown signs."""
    if joiners:
        text = _UNESCAPABLE.sub(lambda found: found.group(0) + "\u2060", text)
    return _INLINE_SIGNS.sub(lambda found: "\\" + found.group(0), text)


def hidden_note(texts: Iterable[Optional[str]]) -> Optional[str]:
    """The import preview's sentence on the texts (a file's sentences) that hold hidden characters,
    None when none does: they are imported as they are, and every view shows them marked."""
    n = count_marked(texts)
    if not n:
        return None
    they, are = ("it", "is") if n == 1 else ("they", "are")
    return (
        f"{counted(n, 'sentence')} {'holds' if n == 1 else 'hold'} invisible or direction-changing characters "
        f"(zero-width spaces, bidi controls): {they} {are} imported as {they} {are}, and shown with marks such "
        "as ⟨U+202E⟩ in their place, never applied."
    )


def visible_frame(frame):
    """A copy of a pandas frame for a table on screen: every text cell (and column name) with its hidden
    characters marked (visible_text); numbers and missing cells as they are. The data itself is untouched."""
    from pandas.api.types import is_numeric_dtype

    shown = frame.copy()
    shown.columns = [visible_text(c) if isinstance(c, str) else c for c in shown.columns]
    for position in range(shown.shape[1]):
        values = shown.iloc[:, position]
        if not is_numeric_dtype(values):  # object or pandas' string dtype
            shown.isetitem(position, values.map(lambda v: visible_text(v) if isinstance(v, str) else v))
    return shown
