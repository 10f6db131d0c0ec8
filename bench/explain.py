"""What a person waits for after asking "why this score" on a pair: pluie_core.explain.word_contributions
on MRPC pairs, one pair at a time as Review asks for it, the model already loaded (the worker's).

    python bench/explain.py                      # CPU: random cpu-small model, 12 pairs
    python bench/explain.py --model demo         # the demo judge (SmolLM2-135M GGUF), real weights
    python bench/explain.py --size mistral-7b --device cuda --pairs 40

For each pair it times, side by side in the same run:
  - the explanation: the pair and every variant with one word left out in one ``scorer.score`` call
    (shared batches, the template's cached prompt prefix);
  - the same variants re-scored one ``scorer.score`` call each (what the explanation replaces; its
    values are the reference the explanation must equal up to batching's float rounding);
  - the pair's own score alone.
It prints seconds per explanation (median, 90th percentile, largest), the ratio of one-at-a-time to the
explanation, the explanation against scoring the pair alone, and the largest difference between the two
ways' contributions. The model is random with the chosen sizes unless --model names real weights (as
bench/scorer.py).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.scorer import SIZES, build_model, read_mrpc, synchronise  # noqa: E402
from pluie_core.explain import sentence_tokens, without_word, word_contributions  # noqa: E402
from pluie_core.scorer import PluieScorer  # noqa: E402
from tests.tiny_models import build_tiny_tokenizer  # noqa: E402


def one_at_a_time(scorer, source: str, hypothesis: str) -> list[float]:
    """Each word's contribution by its own ``scorer.score`` call: score(pair) − score(pair without the
    word), in the order word_contributions lists the words (source's, then hypothesis's)."""
    full = float(scorer.score([source], [hypothesis])[0])
    contributions = []
    for side, sentence in (("source", source), ("hypothesis", hypothesis)):
        tokens = sentence_tokens(sentence)
        if sum(is_word for *_, is_word in tokens) < 2:
            continue
        for _token, start, end, is_word in tokens:
            if is_word:
                ablated = without_word(sentence, start, end)
                pair = (ablated, hypothesis) if side == "source" else (source, ablated)
                contributions.append(full - float(scorer.score([pair[0]], [pair[1]])[0]))
    return contributions


def timed(device, call):
    synchronise(device)
    started = time.perf_counter()
    result = call()
    synchronise(device)
    return time.perf_counter() - started, result


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="cpu-small")
    parser.add_argument("--model", help="real weights: a hub id, a directory, a .gguf file, or 'demo'")
    parser.add_argument("--device", default="cpu")
    parser.add_argument(
        "--dtype", choices=["float32", "bfloat16", "float16"], help="default: bfloat16 on cuda, float32 on cpu"
    )
    parser.add_argument("--pairs", type=int, default=12, help="MRPC pairs explained, one at a time")
    parser.add_argument("--template", default="fs-direct")
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    device = torch.device(args.device)
    dtype = getattr(torch, args.dtype) if args.dtype else (torch.bfloat16 if device.type == "cuda" else torch.float32)
    if args.threads:
        torch.set_num_threads(args.threads)
    sources, hypotheses = read_mrpc(args.pairs)
    started = time.perf_counter()
    if args.model:
        from pluie_core.gguf_files import demo_model_path

        name = str(demo_model_path() or "demo") if args.model == "demo" else args.model
        loaded = PluieScorer(name, template=args.template, device=device, dtype=dtype)
        model, tokenizer, label = loaded.model, loaded.tokenizer, name
    else:
        tokenizer = build_tiny_tokenizer("bpe", vocab_size=SIZES[args.size][5], extra_text=sources + hypotheses)
        model = build_model(args.size, device, dtype, tokenizer, args.seed)
        label = f"random {args.size}"
    scorer = PluieScorer((model, tokenizer), template=args.template)
    params = sum(p.numel() for p in model.parameters())
    print(
        f"model: {label} ({params / 1e6:.0f}M parameters, {dtype}, {device}); set-up "
        f"{time.perf_counter() - started:.1f}s; {torch.get_num_threads()} torch threads; template {args.template}"
    )

    scorer.score(sources[:1], hypotheses[:1])  # warm-up, and the prompt prefix cached as in a running worker
    word_contributions(scorer, sources[0], hypotheses[0])
    explain_s, alone_s, single_s, words, gaps, spread = [], [], [], [], [], []
    for source, hypothesis in zip(sources, hypotheses):
        seconds, explanation = timed(device, lambda: word_contributions(scorer, source, hypothesis))
        explain_s.append(seconds)
        alone_s.append(timed(device, lambda: scorer.score([source], [hypothesis]))[0])
        seconds, reference = timed(device, lambda: one_at_a_time(scorer, source, hypothesis))
        single_s.append(seconds)
        ours = [
            t.contribution
            for t in explanation.source_words + explanation.hypothesis_words
            if t.contribution is not None
        ]
        words.append(len(ours))
        if ours:
            gaps.append(float(np.max(np.abs(np.array(ours) - np.array(reference)))))
            spread.extend(ours)

    explain_s, alone_s, single_s = map(np.array, (explain_s, alone_s, single_s))
    print(
        f"{len(sources)} MRPC pairs, {np.mean(words):.0f} words left out per pair on average "
        f"({min(words)}-{max(words)}), so {np.mean(words) + 1:.0f} pairs scored per explanation"
    )
    for name, values in (
        ("explanation (one score call)", explain_s),
        ("one at a time (a call per variant)", single_s),
        ("the pair's score alone", alone_s),
    ):
        print(
            f"{name:36s} median {np.median(values):7.3f}s  p90 {np.percentile(values, 90):7.3f}s  "
            f"largest {values.max():7.3f}s"
        )
    print(
        f"one at a time / explanation: {np.median(single_s / explain_s):.1f}x (median of pairs); "
        f"explanation / the pair alone: {np.median(explain_s / alone_s):.1f}x"
    )
    print(
        f"largest |contribution difference| between the two ways: {max(gaps):.1e}, median of pairs "
        f"{np.median(gaps):.1e} (contributions span "
        f"{min(spread):.3f} .. {max(spread):.3f}; {dtype})"
        if gaps
        else "no pair had two words"
    )


if __name__ == "__main__":
    main()
