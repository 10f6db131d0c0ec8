"""Where a model is, found in seconds, with or without internet; and transformers imported safely.

    >>> find_model("mistralai/Mistral-7B-Instruct-v0.2").where   # "directory", "cache" or "hub"

``find_model`` looks in this order: a local directory (it must hold a config.json), the local
Hugging Face cache, then the hub, but the hub only when it may be used (no ``HF_HUB_OFFLINE``) and
answers: whether it answers is probed once (a few seconds at most) and remembered for a while, so
an unknown id on a machine without internet is refused in seconds instead of after the hub
client's minute of retries. Whether the weights load is not checked here.

``from_transformers`` imports transformers under one process-wide lock: its lazy top-level module
is not thread-safe while it first loads, and two Streamlit script runs checking a model at once
got ``ImportError: cannot import name 'AutoTokenizer' from 'transformers'``.
"""

from __future__ import annotations

import os
import pickle
import re
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

# a hub id: "org/name", or a bare name such as roberta-large
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
PROBE_SECONDS = 3.0  # how long the hub may take to answer the reachability probe
PROBE_MEMORY_SECONDS = 600.0  # how long a probe's answer is trusted before the hub is asked again

_IMPORT_LOCK = threading.RLock()
_PROBE_LOCK = threading.Lock()
_probe: dict = {}  # endpoint -> (reachable, monotonic time of the probe)


class ModelNotFound(ValueError):
    """The model is neither a model directory, nor in the local cache, nor reachable on the hub."""


def from_transformers(*names: str):
    """transformers' objects by name (one object for one name, else a tuple), imported under a
    process-wide lock so that threads importing it for the first time at once do not race."""
    with _IMPORT_LOCK:
        import transformers

        found = tuple(getattr(transformers, name) for name in names)  # lazy attributes load here, locked too
    return found[0] if len(found) == 1 else found


def import_locked(module: str):
    """A module that imports transformers (sentence_transformers, bert_score), imported under the same lock."""
    import importlib

    with _IMPORT_LOCK:
        return importlib.import_module(module)


def hub_offline() -> bool:
    """Whether the Hugging Face hub may not be used (HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE)."""
    return any(
        os.environ.get(v, "").strip().lower() in ("1", "true", "yes", "on")
        for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


def hub_endpoint() -> str:
    from huggingface_hub import constants

    return constants.ENDPOINT


def hub_reachable(timeout: float = PROBE_SECONDS) -> bool:
    """Whether the hub's endpoint answers an HTTP request within ``timeout`` seconds (any status:
    an answer is enough). Probed once and remembered for PROBE_MEMORY_SECONDS; callers at the same
    time wait for that one probe. A name lookup that hangs counts as no answer."""
    endpoint = hub_endpoint()
    with _PROBE_LOCK:
        known = _probe.get(endpoint)
        if known is not None and time.monotonic() - known[1] < PROBE_MEMORY_SECONDS:
            return known[0]
        answer: list[bool] = []

        def probe() -> None:
            try:
                urllib.request.urlopen(urllib.request.Request(endpoint, method="HEAD"), timeout=timeout).close()
                answer.append(True)
            except urllib.error.HTTPError:
                answer.append(True)  # the hub answered, with an error status: it is reachable
            except Exception:  # no route, refused, name lookup failed, timeout
                answer.append(False)

        # in a thread: a name lookup has no timeout of its own
        thread = threading.Thread(target=probe, name="hub-probe", daemon=True)
        thread.start()
        thread.join(timeout + 1.0)
        reachable = bool(answer and answer[0])
        _probe[endpoint] = (reachable, time.monotonic())
        return reachable


def forget_hub_probe() -> None:
    """Forget what the last probe said (the next find_model asks the hub again)."""
    with _PROBE_LOCK:
        _probe.clear()


def hub_usable() -> bool:
    """Whether the hub may be used and answers (see hub_reachable)."""
    return not hub_offline() and hub_reachable()


@dataclass(frozen=True)
class ModelLocation:
    source: str  # what from_pretrained is given: the directory or the hub id
    where: str  # "directory", "cache" or "hub"
    config_path: str  # the model's config.json on this machine

    def described(self) -> str:
        return {
            "directory": "the directory holds a config.json",
            "cache": "found in the local Hugging Face cache",
            "hub": "found on the Hugging Face hub",
        }[self.where]


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0].rstrip(". ") if text else exc.__class__.__name__


def find_model(name: str) -> ModelLocation:
    """Where the model ``name`` (a local directory or a Hugging Face id) is; ModelNotFound with one
    sentence when it is nowhere this machine can reach. In seconds without internet: the local
    cache is looked at first, and the hub only when it answers a short probe."""
    name = str(name or "").strip()
    path = Path(os.path.expanduser(name))
    if name and path.exists():
        if not path.is_dir() or not (path / "config.json").is_file():
            raise ModelNotFound(
                f"{name} is not a model directory (no config.json in it); give a directory saved "
                "with save_pretrained or a Hugging Face model id."
            )
        return ModelLocation(str(path), "directory", str(path / "config.json"))
    if not _HUB_ID.match(name):
        raise ModelNotFound(
            f"No model found at {name}: that directory does not exist. Give a local model "
            "directory or a Hugging Face model id such as mistralai/Mistral-7B-Instruct-v0.2."
        )
    from huggingface_hub import try_to_load_from_cache

    try:
        cached = try_to_load_from_cache(name, "config.json")
    except ValueError as exc:  # huggingface_hub's own id rules (e.g. "a..b", a name too long)
        raise ModelNotFound(
            f"{name} is not a valid Hugging Face model id ({_first_line(exc)}); give an id such as "
            "mistralai/Mistral-7B-Instruct-v0.2, or a local model directory."
        ) from None
    if isinstance(cached, str):
        return ModelLocation(name, "cache", cached)
    if hub_offline():
        raise ModelNotFound(
            f"The model {name} is not in the local Hugging Face cache, and the hub is offline "
            "(HF_HUB_OFFLINE): download it first, or give a local model directory."
        )
    if not hub_reachable():
        raise ModelNotFound(
            f"The model {name} is not in the local Hugging Face cache, and the Hugging Face hub "
            f"({hub_endpoint()}) does not answer from this machine: download the model where "
            "there is internet access, or give a local model directory."
        )
    from huggingface_hub import hf_hub_download

    try:
        config = hf_hub_download(name, "config.json", etag_timeout=PROBE_SECONDS * 2)
    except Exception as exc:  # no such repository, gated, no config.json, the network went away
        raise ModelNotFound(
            f"The model {name} could not be found on the Hugging Face hub: {_first_line(exc)}. "
            "Check the model id, or give a local model directory."
        ) from None
    return ModelLocation(name, "hub", config)


# the files of a model's weights, one of which a model in the local cache has (a sharded one: its index)
WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)


def on_this_machine(name: str) -> bool:
    """Whether the model ``name`` loads here without internet: a local model directory (a config.json),
    or a hub id whose config.json and weights are in the local Hugging Face cache. Never asks the hub."""
    name = str(name or "").strip()
    path = Path(os.path.expanduser(name))
    if name and path.is_dir():
        return (path / "config.json").is_file()
    if not _HUB_ID.match(name):
        return False
    from huggingface_hub import try_to_load_from_cache

    try:
        return isinstance(try_to_load_from_cache(name, "config.json"), str) and any(
            isinstance(try_to_load_from_cache(name, f), str) for f in WEIGHT_FILES
        )
    except ValueError:  # not a valid hub id after all
        return False


def pickle_refusal(name: str, exc: BaseException, folder=None) -> str | None:
    """One sentence for torch's refusal to unpickle weights that hold more than tensors (its weights-only
    loader, which transformers uses for .bin weights), in place of torch's message, which advises turning
    that safety off; None when ``exc`` (or what it was raised from) is anything else. ``folder``: where
    the model's files are, to name the file."""
    for _ in range(8):  # the exception, and what it was raised from
        if exc is None or (isinstance(exc, pickle.UnpicklingError) and str(exc).startswith("Weights only load failed")):
            break
        exc = exc.__cause__ or exc.__context__
    if exc is None or not isinstance(exc, pickle.UnpicklingError):
        return None
    files = sorted(p.name for p in Path(folder).glob("*.bin")) if folder and Path(folder).is_dir() else []
    named = files[0] if len(files) == 1 else f"{files[0]} and {len(files) - 1} more" if files else "a .bin file"
    return (
        f"The weights of {name} are a pickle file ({named}) that holds more than tensors; PLUIE Lab does not "
        "load such a file, since unpickling it can run code. If you trust its source, convert the weights to "
        "safetensors; otherwise choose another model."
    )
