"""The check every metric makes on its input: two equally long lists of sentences."""

from __future__ import annotations


def sentence_pairs(sources, hypotheses, error: type[Exception] = ValueError) -> tuple[list[str], list[str]]:
    """sources and hypotheses as lists, or `error` with a sentence saying which pair is wrong."""
    sources, hypotheses = list(sources), list(hypotheses)
    if len(sources) != len(hypotheses):
        raise error(f"Got {len(sources)} sources but {len(hypotheses)} hypotheses; give one of each per pair.")
    for name, texts in (("source", sources), ("hypothesis", hypotheses)):
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise error(f"Pair {i + 1} has no {name} text (got {text!r}); every pair needs both sentences.")
    return sources, hypotheses
