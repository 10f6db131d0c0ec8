"""The labelling guidelines of the protocol (ParaPLUIE, appendix A.3) and the order in which a
campaign serves its pairs.

The default guidelines are the paper's explanation and its five worked examples; a campaign
stores its own copy, which the admin may edit (Markdown). The serving order is computed once,
when the campaign is created, by `serving_order`: a pure function so the order can be
reproduced outside the app.
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass
from typing import Iterable, Mapping, Optional, Sequence

from pluie_core.diff import MARK_STYLE
from pluie_core.labels import LEVELS

PAIR_ORDERS: dict[str, str] = {
    "random": "Random (seeded)",
    "least_labelled": "Least-labelled first",
    "informative": "Most informative first (PLUIE score near 0, or model and labels disagree)",
}


# how a campaign's queue is shared among its annotators (db.serving serves by it)
DISTRIBUTIONS: dict[str, str] = {
    "share": "Share the work: every pair gets its first annotator before any pair gets a second, so annotators "
    "get different pairs while the queue has enough; pairs get their further annotators after that",
    "overlap": "Overlap first: each pair gets all its annotators before the next pair is served, so annotators "
    "label the same pairs, in the same order",
}


# the most characters a campaign's guidelines hold: about 40 printed pages, far past any protocol's, and short
# of what would slow every annotator's page (the guidelines are drawn with each pair)
MAX_GUIDELINES = 100_000


class GuidelinesError(ValueError):
    """Guidelines the store cannot keep; the message says why, in a sentence."""


def check_guidelines(text: str) -> str:
    """``text`` as a campaign's guidelines, or GuidelinesError with a sentence: at most MAX_GUIDELINES
    characters, and no NUL (PostgreSQL keeps none in a text; SQLite would, and the store would then
    differ by backend). Line breaks, tabs and any other character stay as typed: they are Markdown."""
    text = str(text)
    if len(text) > MAX_GUIDELINES:
        raise GuidelinesError(f"The guidelines have {len(text):,} characters; the limit is {MAX_GUIDELINES:,}.")
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise GuidelinesError(
            f"The guidelines contain a NUL character (U+0000) on line {line:,}, which the store "
            "cannot keep; remove it (it often comes with text pasted from a binary file)."
        )
    return text


def guidelines_change(before: str, after: str) -> str:
    """What changed from one version of the guidelines to the next, in a few words: "now 1,204 characters,
    was 1,180; 2 lines changed, 1 added" (difflib over the lines)."""
    import difflib

    old, new = (before or "").splitlines(), (after or "").splitlines()
    changed = added = removed = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag != "equal":
            common = min(i2 - i1, j2 - j1)
            changed, added, removed = changed + common, added + (j2 - j1 - common), removed + (i2 - i1 - common)
    counts = [f"{n:,} {what}" for n, what in ((changed, "changed"), (added, "added"), (removed, "removed")) if n]
    if counts:  # "1 line changed, 2 added"
        first = counts[0].split(" ", 1)
        counts[0] = f"{first[0]} line{'' if first[0] == '1' else 's'} {first[1]}"
    return f"now {_characters(len(after or ''))}, was {len(before or ''):,}" + (
        f"; {', '.join(counts)}" if counts else ""
    )


def _characters(n: int) -> str:
    return f"{n:,} character{'' if n == 1 else 's'}"


@dataclass(frozen=True)
class WorkedExample:
    first: str
    second: str
    level: int  # index in pluie_core.labels.LEVELS
    explanation: str
    # the words that differ, highlighted in the guidelines as the labelling view does
    first_marked: str
    second_marked: str


WORKED_EXAMPLES: tuple[WorkedExample, ...] = (
    WorkedExample(
        "The cat drinks water.",
        "The cat eats kibble.",
        0,
        "The associated actions have nothing in common even though the two sentences have the same subject.",
        "The cat :yellow-background[drinks water].",
        "The cat :yellow-background[eats kibble].",
    ),
    WorkedExample(
        "The cat drinks milk.",
        "The cat drinks water.",
        1,
        "The subjects and actions are similar, but water is not milk.",
        "The cat drinks :yellow-background[milk].",
        "The cat drinks :yellow-background[water].",
    ),
    WorkedExample(
        "The cat drinks water.",
        "The cat quenches its thirst.",
        2,
        "The only difference is that the first sentence specifies the type of liquid that is being drunk.",
        "The cat :yellow-background[drinks water].",
        "The cat :yellow-background[quenches its thirst].",
    ),
    WorkedExample(
        "The cat eats the mouse.",
        "The mouse is eaten by the cat.",
        3,
        "Differences linked to context interpretation in these two sentences are too small to say that "
        "their meaning is different.",
        ":yellow-background[The cat eats] the mouse.",
        "The mouse :yellow-background[is eaten by the cat].",
    ),
    WorkedExample(
        "The cat drinks tomato soup.",
        "Cat tomato soup.",
        4,
        "The second sentence doesn't make any sense. We can't draw any conclusions from it.",
        ":yellow-background[The] cat :yellow-background[drinks] tomato soup.",
        ":yellow-background[Cat] tomato soup.",
    ),
)

INTRODUCTION = (
    "You are going to see two sentences. You are asked to estimate the extent to which the two "
    "sentences share a common meaning. To help you, the differences between the sentences are "
    "highlighted in yellow, of which several examples are shown below."
)


def default_guidelines() -> str:
    """The paper's explanation and worked examples, as Markdown."""
    parts = [INTRODUCTION, "", "Answer with one of: " + " · ".join(f"**{name}**" for name in LEVELS) + ".", ""]
    for example in WORKED_EXAMPLES:
        parts += [
            f"- {example.first_marked}  ",
            f"  {example.second_marked}  ",
            f"  → **{LEVELS[example.level]}**: {example.explanation}",
            "",
        ]
    return "\n".join(parts)


_MARKED = re.compile(r":yellow-background\[([^\]\n]*)\]")


def guidelines_markdown(text: str) -> str:
    """Guidelines (Markdown) as the pages draw them, with ``st.markdown(..., unsafe_allow_html=True)``:
    each ``:yellow-background[words]`` becomes the labelling view's own highlight (the same
    <mark> and yellow as pluie_core.diff, with nothing around it, so "water</mark>." keeps its full
    stop against the word). Any other HTML in the text is shown as text, never run."""
    safe = (text or "").replace("<", "&lt;")
    return _MARKED.sub(lambda m: f'<mark class="pluie-diff" style="{MARK_STYLE}">{m.group(1)}</mark>', safe)


def pick_training_pairs(pair_ids: Sequence[int], n: int, seed: int) -> list[int]:
    """The training trial: n pairs drawn with the campaign's seed, the same for everyone."""
    ordered = sorted(pair_ids)
    return random.Random(f"training-{seed}").sample(ordered, min(n, len(ordered)))


def serving_order(
    pair_ids: Iterable[int],
    order: str,
    seed: int,
    *,
    label_counts: Optional[Mapping[int, int]] = None,
    scores: Optional[Mapping[int, float]] = None,
    human_binary: Optional[Mapping[int, int]] = None,
) -> list[int]:
    """The campaign's pairs, first to serve first.

    - "random": a shuffle seeded by the campaign's seed.
    - "least_labelled": fewest existing labels first (ties in the seeded random order).

    This is the order of the queue; how the queue is shared among annotators is the campaign's
    distribution (DISTRIBUTIONS): with "share", a pair assigned fewer times in the campaign comes
    before this order; with "overlap", this order alone decides.
    - "informative": pairs where the model's side of 0 disagrees with the existing human (or
      binary gold) label first, then by |PLUIE score| ascending (closest to the natural
      threshold 0); pairs without a score last.
    """
    if order not in PAIR_ORDERS:
        raise ValueError(f"unknown pair order {order!r}; choose one of {', '.join(PAIR_ORDERS)}")
    shuffled = sorted(pair_ids)
    random.Random(f"order-{seed}").shuffle(shuffled)
    if order == "random":
        return shuffled
    tie = {pid: i for i, pid in enumerate(shuffled)}
    if order == "least_labelled":
        counts = label_counts or {}
        return sorted(shuffled, key=lambda pid: (counts.get(pid, 0), tie[pid]))
    scores = scores or {}
    human = human_binary or {}

    def informative_key(pid: int) -> tuple:
        score = scores.get(pid)
        if score is None:
            return (2, math.inf, tie[pid])
        disagrees = pid in human and int(score > 0) != human[pid]
        return (0 if disagrees else 1, abs(score), tie[pid])

    return sorted(shuffled, key=informative_key)
