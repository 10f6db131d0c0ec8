"""The library's use of third-party private APIs, all in this module: one function per coupling, each
returning the private (fast) path, or None when this version of the library lacks it, and recording
which path it took.

    kendall_discordant()            # scipy.stats._stats._kendall_dis, or None (τ-b through scipy.stats.kendalltau)
    flash_attention_for_cpu()       # torch's CPU flash attention with its log-sum-exp, or None (pluie_core.packed)
    mkldnn_linear_pointwise()       # oneDNN's linear kernel (and its residual-add form), or None (pluie_core.packed)
    mkldnn_reorder_linear_weight()  # oneDNN's blocked weight layout, or None (pluie_core.packed)
    tensor_version()                # a tensor's in-place change count, Tensor._version, or None (pluie_core.packed)
    crowdkit_mace()                 # crowd-kit's MACE, checked to have the _initialize and _e_step that
                                    # pluie_core.aggregation's CanonicalMACE overrides, or None (no fallback)

Each coupling is a ``Coupling``: what it reaches, the version it was checked on (the pinned one, in
requirements.txt), and what its fallback does and costs. A fallback keeps the results the same and says
so in the log, once, as a warning; ``tests/test_private_api.py`` asserts that the private path is the one
taken on the pinned versions, so an upgrade that removes one fails there, naming the coupling and the
cost of its fallback, instead of slowing the app down unseen. One coupling has no fallback that keeps the
results: crowd-kit's MACE without the private methods pluie_core.aggregation mends is refused, with an
error that names them (CROWDKIT_MACE), rather than run as something else.

This module holds the library's couplings only: ``pluie_core`` may not import Streamlit
(``tests/test_layers.py``), so the app's couplings to Streamlit's internals are in ``ui/base/private_api.py``,
one module per layer; that one uses ``Coupling`` from here.
"""

from __future__ import annotations

import inspect
import logging
import operator
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

__all__ = [
    "PRIVATE",
    "FALLBACK",
    "Coupling",
    "KENDALL_DIS",
    "FLASH_ATTENTION",
    "MKLDNN_LINEAR",
    "MKLDNN_REORDER",
    "TENSOR_VERSION",
    "CROWDKIT_MACE",
    "COUPLINGS",
    "kendall_discordant",
    "flash_attention_for_cpu",
    "mkldnn_linear_pointwise",
    "mkldnn_reorder_linear_weight",
    "tensor_version",
    "crowdkit_mace",
]

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
    reason: Optional[str] = None  # why the last use fell back (None when it took the private path)
    _warned: bool = field(default=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def private(self, value: Any) -> Any:
        """Record that the private path is taken; return ``value`` (the private object)."""
        self.taken, self.reason = PRIVATE, None
        return value

    def fall_back(self, reason: object, value: Any = None) -> Any:
        """Record that the fallback is taken and, the first time, log a warning that names the coupling,
        why it is not available and what the fallback costs; return ``value`` (None by default)."""
        self.taken, self.reason = FALLBACK, str(reason)
        with self._lock:
            first, self._warned = not self._warned, True
        if first:
            LOG.warning(
                "%s is not available (%s; checked on %s): %s", self.name, reason, self.checked_on, self.fallback
            )
        return value

    def message(self) -> str:
        """The sentence a test fails with when the fallback is taken."""
        return (
            f"The private API {self.name} (checked on {self.checked_on}) is gone from this version: "
            f"its fallback is taken, and {self.fallback}"
        )


KENDALL_DIS = Coupling(
    "scipy.stats._stats._kendall_dis",
    "scipy 1.17.1",
    "the bootstrap's Kendall τ-b (pluie_core.evaluation.correlation) goes through the public "
    "scipy.stats.kendalltau, one resample at a time: the same values, slower (measured on 2 cores: "
    "0.4 ms a resample of 1,000 pairs, the default max_resample, against 0.2 ms; 0.23 ms against 0.03 ms at "
    "200 pairs), about 0.2 s more for each metric's 1,000 resamples.",
)
TORCH = "torch 2.13.0"
CROWDKIT = "crowd-kit 1.4.2"
# the packed pass's figures: bench/results/2026-11-24-scorer-demo-amd-epyc.md and -intel-xeon.md (the demo
# judge, bench/scorer.py --model demo --no-judges) and pluie_core/packed.py's docstring (oneDNN against MKL)
_WITHOUT_ONEDNN = (
    "the packed CPU pass (pluie_core.packed) multiplies through torch.nn.functional.linear and torch.addmm "
    "(MKL's sgemm) and makes no blocked copies of the weights: the same scores to float rounding, slower: "
    "oneDNN ran at 1.1-1.2x MKL's rate on these shapes on 2 AMD EPYC cores, and the blocked copies gave "
    "another 4-5% of the whole pass (on 2 Intel Xeon cores the two libraries are within 5%)."
)
FLASH_ATTENTION = Coupling(
    "torch.ops.aten._scaled_dot_product_flash_attention_for_cpu",
    TORCH,
    "the scorer takes its generic path, the model's own forward with the shared prefix as a cache "
    "(pluie_core.packed.packed_forward gives None): the same scores to float rounding (2e-5 on the demo "
    "judge), slower: packed / generic was 1.49x on 2 AMD EPYC cores (8.6 against 5.8 pairs/s, the demo "
    "judge on FS-DIRECT), 1.33x on 2 Intel Xeon cores (14.7 against 11.0).",
)
MKLDNN_LINEAR = Coupling("torch.ops.mkldnn._linear_pointwise (and its .binary overload)", TORCH, _WITHOUT_ONEDNN)
MKLDNN_REORDER = Coupling("torch.ops.mkldnn._reorder_linear_weight", TORCH, _WITHOUT_ONEDNN)
TENSOR_VERSION = Coupling(
    "torch.Tensor._version",
    TORCH,
    "the packed CPU pass (pluie_core.packed) cannot tell when a weight was changed in place, so it makes no "
    "blocked oneDNN copies of the weights (one could go stale) and multiplies by the model's own: the same "
    "scores to float rounding, 4-5% slower on the whole pass for a model of up to 1 GiB of layer weights "
    "(the demo judge; 2 AMD EPYC cores).",
)
CROWDKIT_MACE = Coupling(
    "crowdkit.aggregation.MACE._initialize and MACE._e_step",
    CROWDKIT,
    "there is none that keeps the results: pluie_core.aggregation's MACE (CanonicalMACE) overrides those two "
    "methods to mend crowd-kit 1.4.2's MACE, and on a crowd-kit that lacks them, calls them otherwise or no "
    "longer calls them from fit it could compute something else, so aggregation by MACE stops with an error "
    "that says so (majority, Dawid–Skene and GLAD are not affected).",
)
COUPLINGS: dict[str, Coupling] = {
    c.name: c for c in (KENDALL_DIS, FLASH_ATTENTION, MKLDNN_LINEAR, MKLDNN_REORDER, TENSOR_VERSION, CROWDKIT_MACE)
}


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


def flash_attention_for_cpu() -> Optional[Callable[..., Any]]:
    """torch's CPU flash-attention kernel, ``torch.ops.aten._scaled_dot_product_flash_attention_for_cpu``,
    which returns the log-sum-exp of each query's scores beside its output (the packed pass merges the
    prefix's and the pair's own attention by it). None when this torch has no such op: the scorer then
    takes its generic path (FLASH_ATTENTION.fallback)."""
    import torch

    try:
        op = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
    except AttributeError as exc:
        return FLASH_ATTENTION.fall_back(exc)
    return FLASH_ATTENTION.private(op)


def mkldnn_linear_pointwise() -> Optional[Callable[..., Any]]:
    """oneDNN's linear kernel, ``torch.ops.mkldnn._linear_pointwise`` (``(x, weight, bias, "none", [], "")``),
    whose ``.binary`` overload (``(x, residual, weight, bias, "add")``) adds the residual inside the kernel.
    None when this torch is built without oneDNN or has no such op (or overload): the packed pass then
    multiplies through torch's own kernels (MKLDNN_LINEAR.fallback). Whether it computes F.linear's result
    for a dtype on this CPU is pluie_core.packed.onednn_works's check."""
    op = _onednn_op(MKLDNN_LINEAR, "_linear_pointwise")
    if op is None:
        return None
    if not hasattr(op, "binary"):  # the residual-add form the packed pass calls
        return MKLDNN_LINEAR.fall_back("_linear_pointwise has no .binary overload")
    return MKLDNN_LINEAR.private(op)


def mkldnn_reorder_linear_weight() -> Optional[Callable[..., Any]]:
    """oneDNN's copy of a weight in its blocked layout, ``torch.ops.mkldnn._reorder_linear_weight(weight,
    batch_size)``, which its linear kernel reads faster. None when this torch is built without oneDNN or has
    no such op: the packed pass then does without oneDNN (MKLDNN_REORDER.fallback)."""
    op = _onednn_op(MKLDNN_REORDER, "_reorder_linear_weight")
    return None if op is None else MKLDNN_REORDER.private(op)


def _onednn_op(coupling: Coupling, name: str) -> Optional[Callable[..., Any]]:
    """``torch.ops.mkldnn.<name>``, or None (the coupling's fallback taken and said) when this torch is built
    without oneDNN or lacks the op."""
    import torch

    if not torch.backends.mkldnn.is_available():
        return coupling.fall_back("this torch is built without oneDNN")
    try:
        return getattr(torch.ops.mkldnn, name)
    except AttributeError as exc:
        return coupling.fall_back(exc)


def tensor_version() -> Optional[Callable[[Any], int]]:
    """A function giving a tensor's count of in-place changes, ``tensor._version`` (checked to count one
    ``add_``), or None when this torch has no such count: the packed pass then makes no blocked copies of
    the weights, which it could not tell are stale (TENSOR_VERSION.fallback)."""
    import torch

    try:
        with torch.inference_mode(False):  # an inference tensor keeps no count
            probe = torch.zeros(1)
            before = probe._version
            probe.add_(1)
            counts = probe._version == before + 1
    except (AttributeError, RuntimeError) as exc:
        return TENSOR_VERSION.fall_back(exc)
    if not counts:
        return TENSOR_VERSION.fall_back("an in-place add_ does not change Tensor._version by one")
    return TENSOR_VERSION.private(operator.attrgetter("_version"))


# what pluie_core.aggregation's CanonicalMACE calls: crowd-kit's methods with these parameters, fit calling
# them, and the constructor's parameters its _initialize reads
MACE_METHODS = {
    "_initialize": ("self", "n_workers", "n_labels"),
    "_e_step": ("self", "annotation", "task_names", "worker_names", "label_names", "tasks", "workers", "labels"),
}
MACE_PARAMETERS = ("default_noise", "random_state")


def crowdkit_mace() -> Optional[type]:
    """crowd-kit's ``MACE``, checked to be the one pluie_core.aggregation's CanonicalMACE was written
    against: ``_initialize`` and ``_e_step`` with the parameters it passes (``MACE_METHODS``, by
    ``inspect.signature``), called by ``fit`` (where its source can be read), and the constructor
    parameters it reads (``MACE_PARAMETERS``). None when one is not (CROWDKIT_MACE.reason says which): the
    caller refuses MACE rather than compute something else (CROWDKIT_MACE.fallback)."""
    try:
        from crowdkit.aggregation import MACE
    except ImportError as exc:
        return CROWDKIT_MACE.fall_back(exc)
    problems = []
    for name, parameters in MACE_METHODS.items():
        method = getattr(MACE, name, None)
        if not callable(method):
            problems.append(f"MACE has no {name}")
            continue
        found = tuple(inspect.signature(method).parameters)
        if found != parameters:
            problems.append(f"MACE.{name} takes ({', '.join(found)}), not ({', '.join(parameters)})")
    try:
        fit = inspect.getsource(MACE.fit)
    except (OSError, TypeError):  # no source to read: the signatures are all that is checked
        fit = None
    if fit is not None:
        problems += [f"MACE.fit does not call self.{name}" for name in MACE_METHODS if f"self.{name}(" not in fit]
    missing = [name for name in MACE_PARAMETERS if name not in inspect.signature(MACE).parameters]
    if missing:
        problems.append(f"MACE takes no {', '.join(missing)}")
    if problems:
        return CROWDKIT_MACE.fall_back("; ".join(problems))
    return CROWDKIT_MACE.private(MACE)
