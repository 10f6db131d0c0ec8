"""How long the chat-template render child takes to start (pluie_core.chat_render): its import of transformers'
chat-template module alone (``_transformers_renderer``) against importing it through the whole transformers
package, as the child did before, side by side.

    python bench/render_child.py              # 10 starts each way, alternating
    python bench/render_child.py --rounds 20

Each start is a fresh Python process that imports the renderer and renders one conversation with a ChatML
template, as a child does before its first reply. It prints each way's median wall seconds and CPU seconds
(the process's own, from wait4), their ratio, and checks that both ways render the same text.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
START = {
    "module alone": "from pluie_core.chat_render import _transformers_renderer\nrender = _transformers_renderer()\n",
    "whole package": "from transformers.utils.chat_template_utils import render_jinja_template as render\n",
}
RENDER = """import json
texts, _ = render(conversations=[[{"role": "user", "content": "Same meaning?"}]], chat_template=%r,
                  add_generation_prompt=True)
print(json.dumps(texts[0]))
"""


def one_start(way: str) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds, rendered text) of one fresh process importing the renderer ``way``."""
    code = START[way] + RENDER % TEMPLATE
    read, write = os.pipe()
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, stdout=write)
    os.close(write)
    with os.fdopen(read) as out:
        text = out.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"the {way} start failed (exit {process.returncode})")
    return wall, usage.ru_utime + usage.ru_stime, json.loads(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    results: dict[str, list[tuple[float, float, str]]] = {way: [] for way in START}
    one_start("module alone")  # the first start reads the files from disk: not counted
    for _ in range(args.rounds):
        for way in START:
            results[way].append(one_start(way))
    texts = {text for runs in results.values() for _, _, text in runs}
    print(f"render child start, {args.rounds} starts each way, alternating ({os.cpu_count()} CPUs)\n")
    print("| import | median wall (s) | median CPU (s) |")
    print("|---|---|---|")
    medians = {}
    for way, runs in results.items():
        medians[way] = (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs))
        print(f"| {way} | {medians[way][0]:.3f} | {medians[way][1]:.3f} |")
    whole, alone = medians["whole package"], medians["module alone"]
    print(f"\nwhole package / module alone: {whole[0] / alone[0]:.2f}x wall, {whole[1] / alone[1]:.2f}x CPU")
    print(f"same rendered text both ways: {'yes' if len(texts) == 1 else 'NO: ' + repr(texts)}")
    if len(texts) != 1:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
