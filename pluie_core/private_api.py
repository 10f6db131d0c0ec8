"""The library's use of third-party private APIs, all in this module: one function per coupling, each
returning the private (fast) path, or None when this version of the library lacks it, and recording
which path it took.

    kendall_discordant()   # scipy.stats._stats._kendall_dis, or None (τ-b through scipy.stats.kendalltau)

Each coupling is a ``Coupling``: what it reaches, the version it was checked on (the pinned one, in
requirements.txt), and what its fallback does and costs. A fallback keeps the results the same and says
so in the log, once, as a warning; ``tests/test_private_api.py`` asserts that the private path is the one
taken on the pinned versions, so an upgrade that removes one fails there, naming the coupling and the
cost of its fallback, instead of slowing the app down unseen.

This module holds the library's couplings only: ``pluie_core`` may not import Streamlit
(``tests/test_layers.py``), so the app's couplings to Streamlit's internals are in ``pages/private_api.py``,
one module per layer; that one uses ``Coupling`` from here.
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

__all__ = ["PRIVATE", "FALLBACK", "Coupling", "KENDALL_DIS", "COUPLINGS", "kendall_discordant"]

LOG = logging.getLogger("pluie_lab.private_api")
PRIVATE = "private"
FALLBACK = "fallback"


@dataclass(eq=False)  # one object per coupling: compared and hashed by identity
class Coupling:
    """One use of a private API: ``name`` says what it reaches, ``checked_on`` the version it was checked
    on, ``fallback`` what the code does without it and what that costs. ``taken`` is the path the last
    use took (PRIVATE or FALLBACK; None before the first use)."""

    name: str
    checked_on: str
    fallback: str
    taken: Optional[str] = None
    _warned: bool = field(default=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def private(self, value: Any) -> Any:
        """Record that the private path is taken; return ``value`` (the private object)."""
        self.taken = PRIVATE
        return value

    def fall_back(self, reason: object, value: Any = None) -> Any:
        """Record that the fallback is taken and, the first time, log a warning that names the coupling,
        why it is not available and what the fallback costs; return ``value`` (None by default)."""
        self.taken = FALLBACK
        with self._lock:
            first, self._warned = not self._warned, True
        if first:
            LOG.warning("%s is not available (%s; checked on %s): %s", self.name, reason, self.checked_on,
                        self.fallback)
        return value

    def message(self) -> str:
        """The sentence a test fails with when the fallback is taken."""
        return (f"The private API {self.name} (checked on {self.checked_on}) is gone from this version: "
                f"its fallback is taken, and {self.fallback}")


KENDALL_DIS = Coupling(
    "scipy.stats._stats._kendall_dis", "scipy 1.17.1",
    "the bootstrap's Kendall τ-b (pluie_core.evaluation.correlation) goes through the public "
    "scipy.stats.kendalltau, one resample at a time: the same values, slower (measured on 2 cores: "
    "0.4 ms a resample of 1,000 pairs, the default max_resample, against 0.2 ms; 0.23 ms against 0.03 ms at "
    "200 pairs), about 0.2 s more for each metric's 1,000 resamples.")
COUPLINGS: dict[str, Coupling] = {c.name: c for c in (KENDALL_DIS,)}


def kendall_discordant() -> Optional[Callable[[Any, Any], int]]:
    """scipy's compiled count of discordant pairs, ``_kendall_dis(x_ranks, y_ranks)`` (two intp arrays,
    x's dense ranks sorted and y's ranks in that order, as ``scipy.stats.kendalltau`` calls it), or None
    when this scipy has no such function: the caller then computes τ-b row by row with the public
    ``scipy.stats.kendalltau`` (the same values, slower: ``KENDALL_DIS.fallback``)."""
    try:
        from scipy.stats._stats import _kendall_dis
    except ImportError as exc:
        return KENDALL_DIS.fall_back(exc)
    return KENDALL_DIS.private(_kendall_dis)
