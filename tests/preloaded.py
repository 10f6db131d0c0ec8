"""Scripts started as processes of their own from a parent that has imported their libraries already.

A test that starts worker.py seven times (tests/test_worker.py kills it at random moments) spent most of
each start importing torch and transformers (5-6 s of a 10 s start on two cores), the same imports every
time. Here one parent per test process, started once, imports those libraries and then forks a child for
each script a test starts: the child is a process of its own (its own pid, signals, exit status, log), runs
the script from its first line as `python script.py args` would (``runpy``, as ``__main__``, the script's
folder first on its path, the test's environment and working folder), and only finds the libraries'
modules loaded already. The project's own modules (db, pluie_core, worker...) are never preloaded: each
child imports them itself, so the code under test is what a fresh process loads.

    launcher = preloaded(("torch", "transformers"))
    process = launcher.start(["worker.py", "--db", url], cwd=REPO, env=env, log=path)  # or ["-m", "module", ...]
    process.send_signal(signal.SIGKILL); process.wait(timeout=30)   # as subprocess.Popen's

Tests of how a process starts (`make run`, scripts/serve.py's warm-up, the worker's first import) start
it with subprocess, as a person does.
"""

from __future__ import annotations

import atexit
import importlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path


class PreloadedProcess:
    """A child of the preloaded parent, with the part of subprocess.Popen's interface the tests use."""

    def __init__(self, launcher: "Launcher", pid: int, args: list[str]):
        self._launcher, self.pid, self.args, self.returncode = launcher, pid, args, None

    def poll(self):
        if self.returncode is None:
            self.returncode = self._launcher.exit_code(self.pid, 0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.returncode = self._launcher.exit_code(self.pid, timeout)
            if self.returncode is None:
                raise subprocess.TimeoutExpired(self.args, timeout)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class Launcher:
    """The client side of one preloaded parent (a subprocess of this test process)."""

    def __init__(self, modules: tuple[str, ...]):
        self.parent = subprocess.Popen(
            [sys.executable, __file__, *modules], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )
        self._exits: dict[int, int] = {}
        self._started: dict[int, int] = {}
        self._changed = threading.Condition()
        self._next = 0
        self._lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True, name="preloaded-reader").start()
        atexit.register(self.close)

    def _read(self) -> None:
        for line in self.parent.stdout:
            message = json.loads(line)
            with self._changed:
                if "exit" in message:
                    self._exits[message["exit"]] = message["code"]
                else:
                    self._started[message["request"]] = message["pid"]
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def start(self, args: list[str], *, cwd: Path, env: dict, log: Path, timeout: float = 120) -> PreloadedProcess:
        """Run the script ``args[0]`` with its arguments ``args[1:]`` in a child, its output appended to ``log``."""
        with self._lock:
            self._next += 1
            request = self._next
            self.parent.stdin.write(
                json.dumps(
                    {
                        "request": request,
                        "argv": [str(a) for a in args],
                        "cwd": str(cwd),
                        "env": dict(env),
                        "log": str(log),
                    }
                )
                + "\n"
            )
            self.parent.stdin.flush()
        deadline = time.monotonic() + timeout
        with self._changed:
            while request not in self._started:
                if self.parent.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the preloaded parent did not start {args[0]} (its exit: {self.parent.poll()})")
                self._changed.wait(0.5)
            return PreloadedProcess(self, self._started.pop(request), list(args))

    def exit_code(self, pid: int, timeout: float | None):
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._changed:
            while pid not in self._exits:
                left = None if deadline is None else deadline - time.monotonic()
                if (left is not None and left <= 0) or self.parent.poll() is not None:
                    return self._exits.get(pid)
                self._changed.wait(left if left is not None else 0.5)
            return self._exits[pid]

    def close(self) -> None:
        """End the parent: it kills the children still running and exits."""
        if self.parent.poll() is None:
            try:
                self.parent.stdin.close()
                self.parent.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.parent.kill()


_LAUNCHERS: dict[tuple[str, ...], Launcher] = {}


def preloaded(modules: tuple[str, ...]) -> Launcher:
    """This test process's preloaded parent for these libraries, started at the first call."""
    launcher = _LAUNCHERS.get(modules)
    if launcher is None or launcher.parent.poll() is not None:
        launcher = _LAUNCHERS[modules] = Launcher(modules)
    return launcher


# ---------------------------------------------------------------------------------- the parent's side


def _run_child(request: dict) -> None:
    """In the forked child: become `python script args` in the request's folder and environment."""
    import runpy

    code = 1
    try:
        # the signals as a fresh interpreter has them
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        os.chdir(request["cwd"])
        log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        sys.stdin = open(0, closefd=False)
        os.environ.clear()
        os.environ.update(request["env"])
        argv = request["argv"]
        if argv[0] == "-m":  # python -m module args: the working folder first on the path
            sys.argv = [argv[1], *argv[2:]]
            sys.path.insert(0, os.getcwd())
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            script = str(Path(request["cwd"], argv[0]).resolve())
            sys.argv = [script, *argv[1:]]
            sys.path.insert(0, str(Path(script).parent))
            runpy.run_path(script, run_name="__main__")
        code = 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        if not isinstance(stop.code, (int, type(None))):
            print(stop.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - the child's traceback goes to its log, as Python's would
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _serve(modules: list[str]) -> None:
    for name in modules:
        importlib.import_module(name)
    children: set[int] = set()
    out = sys.stdout
    pending = b""

    def report(message: dict) -> None:
        out.write(json.dumps(message) + "\n")
        out.flush()

    while True:
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            children.discard(pid)
            report({"exit": pid, "code": os.waitstatus_to_exitcode(status)})
        if b"\n" not in pending:
            ready, _, _ = select.select([0], [], [], 0.02)
            if not ready:
                continue
            chunk = os.read(0, 1 << 16)
            if not chunk:  # the test process has gone: so do its children
                for pid in children:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                return
            pending += chunk
            continue
        line, pending = pending.split(b"\n", 1)
        request = json.loads(line)
        out.flush()
        pid = os.fork()
        if pid == 0:
            _run_child(request)
        children.add(pid)
        report({"request": request["request"], "pid": pid})


if __name__ == "__main__":
    sys.path.pop(0)  # tests/: the children's paths start with their scripts' folders
    _serve(sys.argv[1:])
