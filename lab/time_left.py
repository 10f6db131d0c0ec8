"""How long a score run has left, from the run's own pieces rather than from the wall clock.

A worker takes the active runs in turn (worker.py: a claim of each, each about the same seconds of work), so a
run's scores arrive in bursts while the other runs are scored. A rate read off the wall clock (the run's scores
of the last minute over that minute) swings with the turns: the Scoring page read 2 min 45 s and then 17 min 18 s
within a minute, and a first estimate a third of the truth (issue 56, item 6). Here:

- **The run's own rate**: the pairs its pieces scored over the seconds the metric spent on them (the worker times
  each piece and adds it to ``ScoreRun.compute_seconds`` / ``timed_pairs``): the other runs' turns, the store and
  the model's loading are not in it, and, summed over every piece so far, it moves a little with each piece
  instead of jumping with each turn. ``seconds_per_pair``.
- **The time left, as a range**: the run's own work left is ``c = pairs left × seconds per pair``. The workers
  share their time among the runs with work, each run its turn of about the same seconds, so until this run is
  done each other run ``j`` takes ``min(c_j, c)`` of the workers' time (it finishes first, or shares every turn):
  ``(c + Σ min(c_j, c)) / workers`` (processor sharing). A run whose rate is not measured yet may take anything
  from nothing to every turn: it adds 0 to the range's low end and ``c`` to its high end. With every rate
  measured the two ends meet.
- **Rough** while the run's rate rests on few pairs (fewer than ``ROUGH_PAIRS``): its first pieces hold the
  model's warm-up and the claim's longest pairs (a claim is scored longest first).

Pure functions: the store gives the figures (db.runs.runs_progress), the Scoring page draws what comes out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Optional, Sequence

ROUGH_PAIRS = 100  # an estimate from fewer timed pairs is marked rough


@dataclass(frozen=True)
class RunWork:
    """One active run as the estimate reads it: ``key`` (its id), ``left`` pairs still to score,
    ``seconds_per_pair`` of its own (None: not measured yet), ``timed_pairs`` the rate rests on."""

    key: Hashable
    left: int
    seconds_per_pair: Optional[float]
    timed_pairs: int = 0


@dataclass(frozen=True)
class TimeLeft:
    """A run's estimate: its own rate (pairs per second while it is scored, on one worker), and the seconds
    left as a range (``low`` == ``high`` when every run's rate is known); ``rough``: from few pairs."""

    pairs_per_second: float
    low: float
    high: float
    rough: bool

    @property
    def is_range(self) -> bool:
        return is_range(self.low, self.high)


def is_range(low: float, high: float) -> bool:
    """Whether an estimate's two ends are worth showing apart: ends within 5% (and a second) read as one."""
    return high > low * 1.05 + 1.0


def seconds_per_pair(compute_seconds: float, timed_pairs: int) -> Optional[float]:
    """The run's own seconds per pair over every piece timed so far; None before its first piece."""
    if not timed_pairs or not compute_seconds or compute_seconds <= 0:
        return None
    return float(compute_seconds) / int(timed_pairs)


def time_left(runs: Sequence[RunWork], workers: int = 1) -> dict[Hashable, TimeLeft]:
    """The estimate of each run of ``runs`` (the active runs with pairs left, which the workers take in turn)
    whose own rate is measured, by its key; ``workers``: the live workers sharing them (at least one is
    assumed). See the module's text for the arithmetic."""
    share = float(max(1, int(workers)))
    own = {
        r.key: r.left * r.seconds_per_pair
        for r in runs
        if r.left > 0 and r.seconds_per_pair is not None and r.seconds_per_pair > 0
    }
    unmeasured = sum(1 for r in runs if r.left > 0 and r.key not in own)
    estimates = {}
    for run in runs:
        if run.key not in own:
            continue
        mine = own[run.key]
        others = sum(min(theirs, mine) for key, theirs in own.items() if key != run.key)
        low = (mine + others) / share
        high = (mine + others + unmeasured * mine) / share
        estimates[run.key] = TimeLeft(1.0 / run.seconds_per_pair, low, high, run.timed_pairs < ROUGH_PAIRS)
    return estimates
