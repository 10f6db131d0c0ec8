"""The test suite in N pytest processes against M, one run after the other on the same commit: wall seconds, the
CPU the machine spent (every process, from /proc/stat), the share of the run the cores stood idle, and the ratio.

    python bench/suite.py                       # the whole suite, -n 2 then -n 3 (about 25 minutes on 2 cores)
    python bench/suite.py --processes 3,2 -- tests/test_browser_review.py tests/test_worker.py

Run it as `make test` runs the suite (PYTHONDONTWRITEBYTECODE emptied; PLUIE_TEST_POSTGRES_URL and
PLUIE_VLLM_VENV from the environment), on a machine doing nothing else. Linux only (/proc/stat).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def cpu_times() -> list[int]:
    """/proc/stat's first line: user, nice, system, idle, iowait, irq, softirq, steal (clock ticks)."""
    with open("/proc/stat") as stat:
        return [int(value) for value in stat.readline().split()[1:9]]


def run(processes: int, pytest_args: list[str]) -> dict:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": ""}
    before, started = cpu_times(), time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", str(processes), "-q", "-p", "no:cacheprovider", *pytest_args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    wall, after = time.monotonic() - started, cpu_times()
    user, nice, system, idle, iowait, irq, softirq, steal = (b - a for a, b in zip(before, after))
    tick = os.sysconf("SC_CLK_TCK")
    busy = user + nice + system + irq + softirq
    total = busy + idle + iowait + steal
    summary = [line for line in done.stdout.splitlines() if re.search(r"\d+ (passed|failed)", line)]
    return {
        "processes": processes,
        "wall": wall,
        "busy": busy / tick,
        "idle": (idle + iowait) / total,
        "steal": steal / total,
        "summary": summary[-1].strip("= ") if summary else f"exit {done.returncode}",
        "ok": done.returncode == 0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", default="2,3", help="the counts of pytest processes to compare, in order")
    parser.add_argument("pytest_args", nargs="*", help="after --: what to run (default: the whole suite)")
    args = parser.parse_args()
    counts = [int(n) for n in args.processes.split(",")]
    print(f"the suite on {os.cpu_count()} CPUs, {', '.join(f'-n {n}' for n in counts)}, one after the other\n")
    results = [run(n, args.pytest_args) for n in counts]
    print("| processes | wall (s) | CPU busy (CPU-s) | idle | steal | pytest |")
    print("|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r['processes']} | {r['wall']:.0f} | {r['busy']:,.0f} | {r['idle']:.1%} | {r['steal']:.1%} "
            f"| {r['summary']} |"
        )
    first = results[0]
    for r in results[1:]:
        print(
            f"\n-n {first['processes']} / -n {r['processes']}: {first['wall'] / r['wall']:.2f}x wall, "
            f"{first['busy'] / r['busy']:.2f}x CPU"
        )
    if not all(r["ok"] for r in results):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
