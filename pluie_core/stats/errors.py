"""The statistics' two signals to the user: ``StatsError`` (a statistic cannot be computed on this
data; the message says why) and ``StatsWarning`` (computed, but not quite as asked; the message says how)."""

from __future__ import annotations


class StatsError(ValueError):
    """A statistic cannot be computed on this data; the message says why, for the user."""


class StatsWarning(UserWarning):
    """A statistic was computed, but not quite as asked (e.g. fewer pairs drawn); the message says how."""
