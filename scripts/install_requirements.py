"""`pip install -r FILE` into the interpreter that runs this script, with progress a person can follow:
what is being installed and why it takes long, one line per package as pip collects it, and the time
taken. `make run` and `make test` install through it: a first install takes minutes (torch alone is
hundreds of MB), and a quiet pip said nothing meanwhile. pip's own output is shown in full when it fails.

    python scripts/install_requirements.py requirements.txt [what]
"""
from __future__ import annotations

import subprocess
import sys
import time


def install(requirements: str, what: str = "packages") -> int:
    started = time.monotonic()
    print(f"Installing the {what} of {requirements} into {sys.prefix} (a first install takes a few minutes: "
          "torch and transformers are large)...", flush=True)
    command = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--progress-bar", "off",
               "-r", requirements]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    lines, collected, satisfied = [], 0, 0
    for line in process.stdout:
        lines.append(line.rstrip())
        if line.startswith("Collecting "):
            collected += 1
            print(f"  [{collected}] {line.split()[1]}", flush=True)
        elif line.startswith("Requirement already satisfied"):
            satisfied += 1
        elif line.startswith("Installing collected packages"):
            print(f"  installing {collected} packages...", flush=True)
    code = process.wait()
    seconds = time.monotonic() - started
    if code != 0:
        print("\n".join(lines[-60:]), flush=True)
        print(f"pip failed (exit status {code}) after {seconds:.0f} s: its output is above.", flush=True)
        return code
    print(f"Done in {seconds:.0f} s: {collected} installed, {satisfied} already there.", flush=True)
    return 0


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        sys.exit(2)
    sys.exit(install(*sys.argv[1:]))
