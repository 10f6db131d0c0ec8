"""The run kinds: one record per kind of score run (``ScoreRun.kind``), which every layer reads.

A run's kind says what it compares, what it takes (a model, a template, answer words), how the worker
builds its metric and how its scores are read. The store (``db.runs.create_run``, ``db.queue``), the
worker (``worker.load_metric``), the analysis views (``pluie_core.analysis``), the judges' registry
(``pluie_core.judges``) and the Scoring page's forms read these records instead of naming kinds.
Pure facts: no database, no Streamlit, nothing heavy to import.

    >>> RUN_KINDS["llm-likert"].natural_threshold
    4.0
    >>> [k.name for k in RUN_KINDS.values() if k.compares == PREFERENCE_ITEMS]
    ['llm-choice']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

# The kinds' names (ScoreRun.kind), for the code that means one kind: the rest reads the records below.
PLUIE = "pluie"
BASELINE = "baseline"
LLM_YES_NO = "llm-yes-no"
LLM_LIKERT = "llm-likert"
LLM_CHOICE = "llm-choice"

PAIRS = "pairs"
PREFERENCE_ITEMS = "preference items"
DIRECTIONS = ("forward", "backward", "symmetric")


@dataclass(frozen=True)
class RunKind:
    """What every layer needs to know about a kind of run, without naming it."""

    name: str  # the ScoreRun.kind of its runs
    title: str  # shown: in a run's default name ("PLUIE Qwen2.5-7B · fs-direct · ...") and the Scoring page's forms
    # PAIRS: every pair in the run's scope; PREFERENCE_ITEMS: each candidate of a preference item against its
    # partner (queued only for the pairs a preference links, asked forward, on datasets of preference data)
    compares: str
    # which worker function builds its metric (worker.LOADERS): "pluie" (pluie_core.scorer.PluieScorer),
    # "baseline" (a metric of pluie_core.baselines.BASELINES), "judge" (pluie_core.judges.LLMJudge)
    loader: str
    needs_model: bool  # the worker loads a model for every run of it (a baseline only when its options name one)
    baseline: bool = False  # ScoreRun.model is a key of pluie_core.baselines.BASELINES, its options that entry's
    template: bool = True  # takes a prompt template (a baseline stores none)
    default_template: Optional[str] = None  # the template of a run that names none
    answers: bool = False  # takes two answer words ('paraphrase' first): PLUIE's log-probability ratio
    judge: Optional[str] = None  # the pluie_core.judges kind when it generates an answer that is parsed
    # score >= this: paraphrase (PLUIE: log p(yes) = log p(no); a judge's registry value); None: no natural one
    natural_threshold: Optional[float] = None

    @property
    def directions(self) -> tuple[str, ...]:
        """The directions a run of this kind may ask: a preference item's candidate is asked first against
        its partner (the item's other pair the other way round), so forward only."""
        return ("forward",) if self.compares == PREFERENCE_ITEMS else DIRECTIONS


# In declaration order: the order of the store's error message and of the Scoring page's choices.
RUN_KINDS: dict[str, RunKind] = {
    k.name: k
    for k in (
        RunKind(
            PLUIE,
            "PLUIE",
            PAIRS,
            "pluie",
            needs_model=True,
            default_template="fs-direct",
            answers=True,
            natural_threshold=0.0,
        ),
        RunKind(BASELINE, "Baseline", PAIRS, "baseline", needs_model=False, baseline=True, template=False),
        RunKind(
            LLM_YES_NO,
            "LLM-Yes/No",
            PAIRS,
            "judge",
            needs_model=True,
            default_template="yes-no",
            judge="yes-no",
            natural_threshold=0.5,
        ),
        RunKind(
            LLM_LIKERT,
            "LLM-Likert",
            PAIRS,
            "judge",
            needs_model=True,
            default_template="likert",
            judge="likert",
            natural_threshold=4.0,
        ),
        RunKind(
            LLM_CHOICE,
            "LLM-choice",
            PREFERENCE_ITEMS,
            "judge",
            needs_model=True,
            default_template="choice",
            judge="choice",
        ),
    )
}


def run_kind(name: str) -> Optional[RunKind]:
    """The record of a ScoreRun.kind, or None for a kind this code does not know."""
    return RUN_KINDS.get(name)


def preference_item_kinds() -> tuple[str, ...]:
    """The kinds whose runs compare the candidates of preference items (LLM-choice): their scores only
    mean something within an item."""
    return tuple(k.name for k in RUN_KINDS.values() if k.compares == PREFERENCE_ITEMS)


def judge_kinds() -> tuple[str, ...]:
    """The kinds of the output-based LLM judges (a generated answer, parsed; some may be unparsed)."""
    return tuple(k.name for k in RUN_KINDS.values() if k.judge is not None)
