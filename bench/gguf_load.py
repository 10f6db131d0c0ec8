"""How long loading a GGUF judge takes: the worker's load (pluie_core.scorer.load_model_and_tokenizer:
the file parsed once, gguf_files.one_reader) against transformers' own load of the same file (AutoTokenizer
and AutoModelForCausalLM with ``gguf_file``, which parse it three times for a llama model), side by side.

    python bench/gguf_load.py                   # the demo judge (SmolLM2-135M, Q4_1), 3 rounds
    python bench/gguf_load.py --model path/to/model.gguf --rounds 5

Each load runs in a fresh Python process (imports done before the clock starts, as in a worker that
has started), the two ways alternating, so both see the same machine. It prints each load's seconds,
the median of each way and their ratio, and checks that both loads give the same weights.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

ONE_LOAD = """
import hashlib, json, sys, time
sys.path.insert(0, {repo!r})
import torch, transformers, gguf  # imported before the clock, as in a running worker
from pluie_core import scorer
way, path = sys.argv[1], sys.argv[2]
start = time.perf_counter()
if way == "pluie":
    model, tokenizer = scorer.load_model_and_tokenizer(path, torch.device("cpu"), torch.float32)
else:
    from pathlib import Path
    folder, name = str(Path(path).parent), Path(path).name
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
seconds = time.perf_counter() - start
digest = hashlib.sha256()
for key, tensor in sorted(model.state_dict().items()):
    digest.update(key.encode()); digest.update(tensor.detach().float().numpy().tobytes())
print(json.dumps({{"seconds": seconds, "weights": digest.hexdigest(), "vocabulary": len(tokenizer)}}))
"""


def load(way: str, path: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", ONE_LOAD.format(repo=str(REPO)), way, path], capture_output=True, text=True, timeout=900
    )
    if done.returncode != 0:
        raise SystemExit(f"the {way} load failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="demo", help="a .gguf file, or 'demo' (the demo judge)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    path = args.model
    if path == "demo":
        sys.path.insert(0, str(REPO))
        from pluie_core.gguf_files import demo_model_path

        found = demo_model_path()
        if found is None:
            raise SystemExit("The demo judge is not installed: make install.")
        path = str(found)
    times: dict[str, list[float]] = {"transformers": [], "pluie": []}
    seen = {}
    for round_ in range(1, args.rounds + 1):
        for way in ("transformers", "pluie"):
            result = load(way, path)
            times[way].append(result["seconds"])
            seen.setdefault(way, (result["weights"], result["vocabulary"]))
            print(f"round {round_}: {way:<12} {result['seconds']:6.2f} s")
    same = seen["transformers"] == seen["pluie"]
    plain, ours = statistics.median(times["transformers"]), statistics.median(times["pluie"])
    print(
        f"{Path(path).name}: transformers' own load {plain:.2f} s, the worker's {ours:.2f} s (medians of "
        f"{args.rounds}): {plain / ours:.2f}x; same weights and vocabulary: {same}"
    )
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
