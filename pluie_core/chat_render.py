"""A model's chat template rendered in a child process, each render bounded in time.

A chat template is code that comes with a model: Jinja in transformers' sandbox, which caps each
``range()`` at 100,000 but not the work of nested loops, so a template with two nested
``range(99999)`` loops kept the server's process at 100% of a core for hours. ``render`` sends the
turns to a child process (``python -m pluie_core.chat_render``: jinja and transformers' chat-template
module alone, no torch and not the rest of transformers; about 0.3 s to start, against 0.9 s with the
whole package), waits at most ``RENDER_SECONDS`` for each conversation, and kills the child when one
runs over: ChatTemplateError then says so in one sentence. A child also ends itself when a render runs
past its bound and a few seconds more, or when this process goes away (its input closes). Idle children
are kept for the next call, so a render costs a pipe's round trip, not a process start.

The text is transformers' own: ``render_jinja_template`` with the tokenizer's special tokens, as
``tokenizer.apply_chat_template(turns, tokenize=False)`` renders it. POSIX only (it waits on pipes
with ``select``).
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

RENDER_SECONDS = 10.0  # the most one conversation may take to render (a chat template takes milliseconds)
START_SECONDS = 120.0  # the most a child may take to start (its imports, on a busy machine): not the template's time
CHILD_GRACE_SECONDS = 5.0  # a child still rendering this long after its bound ends itself (its parent is gone)
IDLE_KEPT = 2  # idle children kept per process for the next render


class ChatTemplateError(ValueError):
    """The chat template ran past its time, or the process rendering it stopped: one sentence."""


class TemplateRefused(Exception):
    """The chat template raised an error (e.g. a role it refuses): its first line, for the caller to word."""


def render(tokenizer, conversations, add_generation_prompt: bool, name: str, seconds: float | None = None) -> list[str]:
    """Each conversation (a list of ``{"role", "content"}`` turns) rendered with ``tokenizer``'s chat
    template in a child process, as ``apply_chat_template(tokenize=False)`` renders it; each within
    ``seconds`` (default RENDER_SECONDS). ChatTemplateError when one runs over or the child stops
    (``name``, the model's, is in the sentence), TemplateRefused when the template raises."""
    if not conversations:
        return []
    seconds = RENDER_SECONDS if seconds is None else seconds
    request = {
        "template": tokenizer.get_chat_template(),
        "kwargs": dict(tokenizer.special_tokens_map),
        # as apply_chat_template: a key whose value is None is dropped
        "conversations": [
            [{k: v for k, v in turn.items() if v is not None} for turn in chat] for chat in conversations
        ],
        "add_generation_prompt": bool(add_generation_prompt),
        "seconds": seconds,
    }
    child = _take()
    try:
        texts = child.render(request, seconds, name)
    except ChatTemplateError:
        child.close()
        raise
    except TemplateRefused:
        _give_back(child)  # it said so and waits for the next request
        raise
    except BaseException:  # interrupted mid-request: its state is unknown
        child.close()
        raise
    _give_back(child)
    return texts


def warm() -> None:
    """Start a child now (its imports run while the caller does other work, e.g. loads a tokenizer)."""
    with _LOCK:
        if not any(c.alive() for c in _IDLE):
            _IDLE.append(_Child())


_IDLE: list["_Child"] = []
_LOCK = threading.Lock()


def _take() -> "_Child":
    with _LOCK:
        while _IDLE:
            child = _IDLE.pop()
            if child.alive():
                return child
            child.close()
    return _Child()


def _give_back(child: "_Child") -> None:
    with _LOCK:
        if child.alive() and len(_IDLE) < IDLE_KEPT:
            _IDLE.append(child)
            return
    child.close()


class _Child:
    """One rendering process and its pipes; used by one thread at a time."""

    def __init__(self):
        root = str(Path(__file__).resolve().parents[1])  # where pluie_core is importable from
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "pluie_core.chat_render"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
        )
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None  # both piped
        self._stdin, self._stdout = stdin, stdout
        self._buffer = b""
        self._ready = False

    def alive(self) -> bool:
        return self.process.poll() is None

    def render(self, request: dict, seconds: float, name: str) -> list[str]:
        if not self._ready:
            started = self._reply(START_SECONDS)
            if not started or "ready" not in started:
                why = started["stopped"] if started else f"not ready after {START_SECONDS:g} s"
                raise ChatTemplateError(
                    f"The process that renders chat templates did not start ({why}); "
                    "its error, if any, is in this program's log."
                )
            self._ready = True
        try:
            self._stdin.write(json.dumps(request, default=str).encode("ascii") + b"\n")
            self._stdin.flush()
        except BrokenPipeError:  # it ended while idle (e.g. killed for memory): said as below
            pass
        texts = []
        for _ in request["conversations"]:
            reply = self._reply(seconds)
            if reply is None:
                raise ChatTemplateError(
                    f"The chat template of {name} took more than {seconds:g} s to render one "
                    "prompt, so it cannot be used (a chat template renders in milliseconds)."
                )
            if "stopped" in reply:
                raise ChatTemplateError(
                    f"The chat template of {name} could not be rendered: the process rendering "
                    f"it stopped ({reply['stopped']})."
                )
            if "refused" in reply:
                raise TemplateRefused(reply["refused"])
            texts.append(reply["text"])
        return texts

    def _reply(self, seconds: float):
        """The child's next reply; None when none came within ``seconds``, ``{"stopped": why}`` when it ended."""
        deadline = time.monotonic() + seconds
        out = self._stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([out], [], [], left)[0]:
                return None
            chunk = os.read(out, 1 << 16)
            if not chunk:
                code = self.process.wait()
                return {"stopped": f"killed by signal {-code}" if code < 0 else f"exit code {code}"}
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return json.loads(line)

    def close(self) -> None:
        if self.alive():
            self.process.kill()
        self.process.wait()
        for pipe in (self._stdin, self._stdout):
            pipe.close()


# ---------------------------------------------------------------------------- the child


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0].rstrip(". ") if text else exc.__class__.__name__


def _transformers_renderer():
    """transformers' own ``render_jinja_template``, imported without running ``transformers/__init__.py``
    (its lazy table of every model and the check of its dependencies' versions: 0.6 of the 0.9 s this
    import takes on an idle core, for nothing a render uses): the two packages' folders are put in place
    as bare packages, so only ``utils/chat_template_utils.py`` and the modules it imports itself run.
    If that does not import (another transformers' layout), the package is dropped and imported as usual."""
    import importlib.util
    import types

    spec = importlib.util.find_spec("transformers")
    if spec is not None and spec.submodule_search_locations and "transformers" not in sys.modules:
        folder = Path(list(spec.submodule_search_locations)[0])
        for name, path in (("transformers", folder), ("transformers.utils", folder / "utils")):
            package = types.ModuleType(name)
            package.__path__ = [str(path)]
            package.__package__ = name
            package.__file__ = str(path / "__init__.py")
            sys.modules[name] = package
        try:
            from transformers.utils.chat_template_utils import render_jinja_template

            return render_jinja_template
        except Exception:
            for name in [name for name in sys.modules if name.split(".")[0] == "transformers"]:
                del sys.modules[name]
    from transformers.utils.chat_template_utils import render_jinja_template

    return render_jinja_template


def _serve() -> None:
    """The child: render each request's conversations, one reply line each, until the input closes."""
    import signal

    replies = os.fdopen(os.dup(1), "w", encoding="ascii")
    os.dup2(2, 1)  # whatever else writes to standard output goes to standard error
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the parent, whose exit ends this process
    render_jinja_template = _transformers_renderer()

    def reply(message: dict) -> None:
        replies.write(json.dumps(message) + "\n")
        replies.flush()

    reply({"ready": True})
    for line in sys.stdin:
        request = json.loads(line)
        for chat in request["conversations"]:
            # SIGALRM's default action ends the process: a render its parent gave up on does not spin on
            signal.setitimer(signal.ITIMER_REAL, request["seconds"] + CHILD_GRACE_SECONDS)
            try:
                rendered, _ = render_jinja_template(  # (the texts, the generation indices)
                    conversations=[chat],
                    chat_template=request["template"],
                    add_generation_prompt=request["add_generation_prompt"],
                    **request["kwargs"],
                )
            except Exception as exc:  # jinja errors, the template's raise_exception(...)
                reply({"refused": _first_line(exc)})
                break
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            reply({"text": rendered[0]})


if __name__ == "__main__":
    _serve()
