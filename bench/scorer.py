"""Throughput of PluieScorer against the papers' method and the output-based LLM judges, on MRPC
pairs and a random-weight model or real weights.

    python bench/scorer.py                       # CPU: 6 layers, hidden 512, 32k vocab, 64 pairs
    python bench/scorer.py --model demo --no-judges   # real weights: the demo judge (SmolLM2-135M GGUF)
    python bench/scorer.py --model demo --profile     # and where the time goes (torch profiler)
    python bench/scorer.py --size mistral-7b --device cuda --pairs 2000 --baseline-pairs 100

Besides pairs/s, it prints the useful work per second: the FLOPs of the forward pass PLUIE needs
(per pair, every token after the cached prefix through every layer, attention to the whole context
included, and the output layer at the last position only; the prefix once), against the machine's
float matrix-multiply rate measured in the same run (large square matmuls, same threads and dtype):
the fraction says how close the scorer runs to what this machine can do. The papers' method's FLOPs
(two full passes, logits everywhere) are printed beside it.

Then LLM-Yes/No and LLM-Likert (pluie_core.judges) on the same model and pairs: batched greedy
generation of at most ``--max-new-tokens`` tokens (default: the templates' 10). A random model
rarely emits its end-of-sequence token, so it generates the full budget; a real instruct model
stops after "Yes" or "4" plus its end-of-turn token when it answers tersely, so the judges' figures
here are the cost of a 10-token answer (the script prints the tokens generated per pair).

The papers' method is the reference implementation's: two forward passes per pair (prompt∘Yes
and prompt∘No), one pair at a time, full-vocabulary logits at every position, score =
(T+1)·(loss(No) − loss(Yes)). Ours: one pass per pair, length-sorted batches, the FS-DIRECT
few-shot block's KV cache reused, last-position logits only. Both run in the same process on the
same model and pairs; the script prints pairs/second for each, their ratio, and the largest
difference between the two methods' scores (they compute the same number).

The model is random (no download possible here) with the sizes of the chosen preset; the
tokenizer is trained on the fly on the template wording and the MRPC sentences, so prompt
lengths are realistic. MRPC is read from ../shared/datasets (tab-separated, UTF-8 BOM, no quoting).
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pluie_core.judges import LLMJudge
from pluie_core.scorer import PluieScorer
from tests.paths import DATASETS
from tests.tiny_models import build_tiny_tokenizer

SIZES = {
    # name: (layers, hidden, heads, kv heads, intermediate, vocab)
    "cpu-small": (6, 512, 8, 4, 1408, 32000),
    "mistral-7b": (32, 4096, 32, 8, 14336, 32000),
}


def read_mrpc(count: int) -> tuple[list[str], list[str]]:
    """The first ``count`` pairs of MRPC test (then train, if more are asked for)."""
    sources, hypotheses = [], []
    for name in ("msr_paraphrase_test.txt", "msr_paraphrase_train.txt"):
        with open(DATASETS / "mrpc" / name, encoding="utf-8-sig", newline="") as handle:
            rows = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
            header = next(rows)
            if header[:5] != ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"]:
                raise SystemExit(f"unexpected MRPC header in {name}: {header}")
            for row in rows:
                if len(row) == 5:
                    sources.append(row[3])
                    hypotheses.append(row[4])
                if len(sources) == count:
                    return sources, hypotheses
    return sources, hypotheses


def build_model(size: str, device: torch.device, dtype: torch.dtype, tokenizer, seed: int):
    from transformers import AutoModelForCausalLM, MistralConfig

    layers, hidden, heads, kv_heads, intermediate, vocab = SIZES[size]
    config = MistralConfig(
        vocab_size=max(vocab, len(tokenizer)),
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        intermediate_size=intermediate,
        max_position_embeddings=32768,
        sliding_window=None,
        tie_word_embeddings=False,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    torch.manual_seed(seed)
    with torch.device(device):  # build the weights where they run (a 7B model is 14 GB in bf16)
        model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    return model.eval()


def papers_method(model, tokenizer, template, sources, hypotheses, answers=("Yes", "No")) -> np.ndarray:
    """Two full forward passes per pair, one pair at a time, full-vocabulary logits and loss."""
    scores = []
    for source, hypothesis in zip(sources, hypotheses):
        messages = template.messages(source, hypothesis)
        losses = []
        for word in answers:
            full = tokenizer.apply_chat_template(messages + [{"role": "assistant", "content": word}], tokenize=False)
            text = full[: full.rindex(word) + len(word)]  # drop the end-of-turn tokens after the answer
            ids = torch.tensor([tokenizer(text, add_special_tokens=False)["input_ids"]], device=model.device)
            with torch.inference_mode():
                losses.append((model(input_ids=ids, labels=ids).loss.float().item(), ids.shape[1] - 1))
        (yes, count), (no, _) = losses
        scores.append(count * (no - yes))
    return np.array(scores)


def forward_flops(config, new_tokens: int, context_before: int, logits_positions: int) -> float:
    """FLOPs of a decoder forward pass over ``new_tokens`` tokens that follow ``context_before`` tokens
    (cached keys / values): the linear layers (2 per weight per token), attention scores and values
    over each token's whole context (4 · heads · head_dim per context token per layer), and the
    output layer at ``logits_positions`` positions. Norms, activations and softmax are left out."""
    config = config.get_text_config() if hasattr(config, "get_text_config") else config
    hidden, layers, heads = config.hidden_size, config.num_hidden_layers, config.num_attention_heads
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    head_dim = getattr(config, "head_dim", None) or hidden // heads
    inter = config.intermediate_size
    per_layer = hidden * heads * head_dim * 2 + hidden * kv_heads * head_dim * 2 + 3 * hidden * inter
    linear = 2 * layers * per_layer * new_tokens
    # token k (0-based among the new ones) attends to context_before + k + 1 positions
    contexts = new_tokens * context_before + new_tokens * (new_tokens + 1) / 2
    attention = 4 * layers * heads * head_dim * contexts
    return linear + attention + 2 * hidden * config.vocab_size * logits_positions


MATMUL_BEST: dict = {}  # library -> the best rate it reached in this run (printed in the report)


def matmul_kernels(device: torch.device, dtype: torch.dtype) -> dict:
    """The matrix multiplies the machine's rate is the best of: torch.matmul (MKL on an x86 CPU) and, on
    CPU where torch has it, oneDNN's linear kernel, which the packed pass multiplies with (on this
    project's 2-core AMD EPYC it runs 2048³ about 15% faster than MKL): the fraction is against the
    fastest matrix multiply this machine has, not against the library the scorer does not use."""
    kernels = {"torch.matmul": torch.matmul}
    if device.type == "cpu":
        from pluie_core.packed import onednn_works

        if onednn_works(torch, dtype):
            kernels["oneDNN"] = lambda a, b: torch.ops.mkldnn._linear_pointwise(a, b, None, "none", [], "")
    return kernels


def matmul_rate(
    device: torch.device, dtype: torch.dtype, size: int = 2048, seconds: float = 3.0
) -> tuple[float, float]:
    """The machine's matrix-multiply rate: (FLOP per second of the best of repeated size³ matmuls,
    each library's in turn, FLOP per CPU-second of this process over all of them), with as many threads
    as the scorer."""
    a = torch.randn(size, size, device=device, dtype=dtype)
    b = torch.randn(size, size, device=device, dtype=dtype)
    kernels = matmul_kernels(device, dtype)
    for kernel in kernels.values():
        kernel(a, b)  # warm-up
    best, count = {name: math.inf for name in kernels}, 0
    cpu_started = time.process_time()
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        for name, kernel in kernels.items():
            synchronise(device)
            started = time.perf_counter()
            kernel(a, b)
            synchronise(device)
            best[name] = min(best[name], time.perf_counter() - started)
            count += 1
    for name, seconds_taken in best.items():
        MATMUL_BEST[name] = max(MATMUL_BEST.get(name, 0.0), 2 * size**3 / seconds_taken)
    return 2 * size**3 / min(best.values()), 2 * size**3 * count / (time.process_time() - cpu_started)


def synchronise(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="cpu-small")
    parser.add_argument(
        "--model",
        help="real weights instead of a random model: a hub id, a directory, a .gguf file, "
        "or 'demo' (the demo judge, SmolLM2-135M-Instruct Q4_1)",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="profile one PluieScorer.score call (torch profiler) and print where the time goes",
    )
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument(
        "--dtype", choices=["float32", "bfloat16", "float16"], help="default: bfloat16 on cuda, float32 on cpu"
    )
    parser.add_argument("--pairs", type=int, default=64, help="MRPC pairs scored by PluieScorer")
    parser.add_argument(
        "--baseline-pairs",
        type=int,
        default=16,
        help="how many of the pairs the (slow, one-at-a-time) papers' method scores to measure its "
        "rate (default 16; its cost is linear in pairs)",
    )
    parser.add_argument("--template", default="fs-direct")
    parser.add_argument("--batch-size", type=int, help="PluieScorer batch size (default: automatic)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--judge-pairs",
        type=int,
        help="how many of the pairs the LLM judges answer (default: all; their cost is linear in pairs)",
    )
    parser.add_argument("--max-new-tokens", type=int, help="the judges' answer length bound (default: the templates')")
    parser.add_argument("--no-judges", action="store_true", help="skip the LLM-Yes/No and LLM-Likert comparison")
    parser.add_argument(
        "--rounds", type=int, default=3, help="interleaved timing rounds of PLUIE and the judges (best kept)"
    )
    parser.add_argument(
        "--pluie-rounds",
        type=int,
        default=3,
        help="interleaved timing rounds of PluieScorer (and of its generic path where the packed "
        "CPU pass applies), best kept (default 3)",
    )
    args = parser.parse_args(argv)

    device = torch.device(args.device)
    dtype = getattr(torch, args.dtype) if args.dtype else (torch.bfloat16 if device.type == "cuda" else torch.float32)
    sources, hypotheses = read_mrpc(args.pairs)
    baseline_count = min(args.baseline_pairs, len(sources))

    if args.threads:
        torch.set_num_threads(args.threads)
    started = time.perf_counter()
    if args.model:
        from pluie_core.gguf_files import demo_model_path

        name = str(demo_model_path() or "demo") if args.model == "demo" else args.model
        loaded = PluieScorer(name, template=args.template, device=device, dtype=dtype)
        model, tokenizer = loaded.model, loaded.tokenizer
        params = sum(p.numel() for p in model.parameters())
        print(
            f"model: {name} ({params / 1e6:.0f}M parameters, {dtype}, {device}); set-up "
            f"{time.perf_counter() - started:.1f}s; {torch.get_num_threads()} torch threads"
        )
    else:
        tokenizer = build_tiny_tokenizer("bpe", vocab_size=SIZES[args.size][5], extra_text=sources + hypotheses)
        model = build_model(args.size, device, dtype, tokenizer, args.seed)
        params = sum(p.numel() for p in model.parameters())
        print(
            f"model: random {args.size} ({params / 1e6:.0f}M parameters, {dtype}, {device}); tokenizer: "
            f"{len(tokenizer)} trained tokens; set-up {time.perf_counter() - started:.1f}s"
        )

    scorer = PluieScorer((model, tokenizer), template=args.template, batch_size=args.batch_size)
    prompt_lengths = [len(scorer._encode(p)) for p in scorer.prompts(sources, hypotheses)]
    print(
        f"{len(sources)} MRPC pairs, template {scorer.template.name}: prompts of {np.mean(prompt_lengths):.0f} "
        f"tokens on average ({min(prompt_lengths)}-{max(prompt_lengths)})"
    )

    # Warm-up on one pair each (allocator, kernels); the prefix cache is then rebuilt inside the timing.
    scorer.score(sources[:1], hypotheses[:1])
    papers_method(model, tokenizer, scorer.template, sources[:1], hypotheses[:1])
    scorers = {"PluieScorer": scorer}
    if scorer.last_run.get("packed"):  # the packed CPU pass ran: time the model's own forward beside it
        generic = PluieScorer((model, tokenizer), template=args.template, batch_size=args.batch_size, packed=False)
        generic.score(sources[:1], hypotheses[:1])
        scorers["model's forward"] = generic

    # Interleaved rounds, best kept (the machine's matmul rate is the best of repeated matmuls too; on a
    # shared machine a neighbour's load slows whichever method runs at that moment). Each timing follows
    # a one-second burst of matmuls, so each round also has its own fraction of the machine at that moment.
    best, outputs, rounds = {}, {}, {name: [] for name in scorers}
    for _ in range(args.pluie_rounds):
        for name, each in scorers.items():
            each._prefix = None
            burst, _ = matmul_rate(device, dtype, seconds=1.0)
            synchronise(device)
            started, cpu_started = time.perf_counter(), time.process_time()
            outputs[name] = each.score(sources, hypotheses)
            synchronise(device)
            timing = (time.perf_counter() - started, time.process_time() - cpu_started)
            best[name] = min(best.get(name, (math.inf, math.inf)), timing)
            rounds[name].append((timing[0], burst))
    ours, ours_seconds = outputs["PluieScorer"], best["PluieScorer"][0]
    ours_rate = len(sources) / ours_seconds
    path = "packed CPU pass" if scorer.last_run.get("packed") == len(sources) else "the model's own forward"
    print(
        f"PluieScorer:    {len(sources):5d} pairs in {ours_seconds:8.2f}s = {ours_rate:9.2f} pairs/s "
        f"(best of {args.pluie_rounds}; shared prefix {scorer.last_run['prefix_tokens']} tokens, "
        f"{scorer.last_run['cached']} pairs cached, batch {scorer.batch_size or scorer._auto_batch}, {path})"
    )
    if "model's forward" in best:
        seconds, generic_scores = best["model's forward"][0], outputs["model's forward"]
        print(
            f"  its generic path (the model's own forward with the prefix as a cache, packed=False): "
            f"{len(sources) / seconds:.2f} pairs/s; packed / generic = {seconds / ours_seconds:.2f}x; largest "
            f"|score difference| {np.abs(generic_scores - ours).max():.1e}"
        )

    synchronise(device)
    started, cpu_started = time.perf_counter(), time.process_time()
    reference = papers_method(model, tokenizer, scorer.template, sources[:baseline_count], hypotheses[:baseline_count])
    synchronise(device)
    papers_seconds, papers_cpu = time.perf_counter() - started, time.process_time() - cpu_started
    papers_rate = baseline_count / papers_seconds
    print(
        f"papers' method: {baseline_count:5d} pairs in {papers_seconds:8.2f}s = {papers_rate:9.2f} pairs/s "
        "(2 full passes per pair, one pair at a time)"
    )
    print(f"speed-up: {ours_rate / papers_rate:.1f}x")
    report_flops(
        model, scorer, sources, hypotheses, best, (papers_seconds, papers_cpu), baseline_count, device, dtype, rounds
    )
    difference = np.abs(ours[:baseline_count] - reference)
    print(
        f"largest |score difference| between the methods: {difference.max():.2e} "
        f"(scores span {ours.min():.2f} .. {ours.max():.2f})"
    )
    if args.profile:
        profile(scorer, sources, hypotheses)
    if not args.no_judges:
        compare_judges(args, model, tokenizer, scorer, sources, hypotheses, ours_rate, device)


def report_flops(
    model, scorer, sources, hypotheses, ours_times: dict, papers_time, baseline_count, device, dtype, rounds: dict
):
    """Useful GFLOP/s of both methods and their fraction of this machine's matmul rate: per second of
    wall time, and (on CPU) per CPU-second of this process, which a neighbour's load on a shared machine
    changes far less (it takes the cores from the scorer and the matmuls alike). Then each round of
    PluieScorer against the matmul burst timed just before it (``rounds``: name -> [(seconds, rate)])."""
    prefix = scorer.last_run["prefix_tokens"] if scorer.last_run.get("cached") == len(sources) else 0
    lengths = [len(scorer._encode(p)) for p in scorer.prompts(sources, hypotheses)]
    ours = forward_flops(model.config, prefix, 0, 0) + sum(
        forward_flops(model.config, n - prefix, prefix, 1) for n in lengths
    )
    # the papers' method: prompt∘answer (one token more) twice, logits at every position
    papers = sum(2 * forward_flops(model.config, n + 1, 0, n + 1) for n in lengths[:baseline_count])
    rate, cpu_rate = matmul_rate(device, dtype)
    rate = max([rate] + [burst for timings in rounds.values() for _, burst in timings])  # the best seen in the run
    new = np.mean([n - prefix for n in lengths])
    print(
        f"useful work: PluieScorer {ours / len(sources) / 1e9:.2f} GFLOP per pair ({prefix} prefix tokens once, "
        f"{new:.0f} new tokens per pair), the papers' method {papers / baseline_count / 1e9:.1f} "
        f"({papers / baseline_count / (ours / len(sources)):.0f}x)"
    )
    libraries = ", ".join(f"{name} {value / 1e9:.0f}" for name, value in MATMUL_BEST.items())
    print(
        f"machine: {rate / 1e9:.0f} GFLOP/s ({dtype} matmul, 2048³, {torch.get_num_threads()} threads, the best of "
        f"this run's measurements: {libraries}; "
        f"{cpu_rate / 1e9:.0f} GFLOP per CPU-second)"
    )
    timed = [(name, ours, times) for name, times in ours_times.items()] + [("papers' method", papers, papers_time)]
    for name, flops, (seconds, cpu) in timed:
        line = f"{name + ':':16s} {flops / seconds / 1e9:6.1f} GFLOP/s = {flops / seconds / rate:5.1%} of the machine"
        if len(MATMUL_BEST) > 1:  # and against each library's own best, the slower one's included
            line += (
                " ("
                + ", ".join(f"{flops / seconds / value:.1%} of {library}'s" for library, value in MATMUL_BEST.items())
                + ")"
            )
        if device.type == "cpu":
            line += (
                f"; {flops / cpu / 1e9:6.1f} GFLOP per CPU-second = {flops / cpu / cpu_rate:5.1%} of the "
                "matmuls' (load-independent)"
            )
        print(line)
    for name, timings in rounds.items():
        fractions = [ours / seconds / burst for seconds, burst in timings]
        print(
            f"{name}, each round against a 1 s matmul burst just before it: "
            + ", ".join(f"{f:.1%} ({burst / 1e9:.0f} GFLOP/s)" for f, (_, burst) in zip(fractions, timings))
            + f"; median {np.median(fractions):.1%}"
        )


def profile(scorer, sources, hypotheses) -> None:
    """Where one score call spends its time: the torch operators by their own CPU time."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    scorer.score(sources[:1], hypotheses[:1])  # the prefix cache is built outside the profile
    with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
        scorer.score(sources, hypotheses)
    print("\n" + prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=18))


def compare_judges(args, model, tokenizer, scorer, sources, hypotheses, pluie_rate: float, device) -> None:
    """LLM-Yes/No and LLM-Likert on the same weights and pairs: pairs/s and PLUIE's speed-up over each.

    PLUIE and the judges are timed in turn, ``--rounds`` times, and each keeps its best round: on a
    shared machine a neighbour's load slows whichever method runs at that moment, and the best of a
    few interleaved rounds is the figure least affected. PLUIE is timed here in its steady state
    (prefix cache built, as in a worker that keeps its scorer)."""
    count = min(args.judge_pairs or len(sources), len(sources))
    pairs = sources[:count], hypotheses[:count]
    methods = {"PLUIE": (scorer.template.name, len(pairs[0]), lambda: scorer.score(*pairs))}
    # each judge with its own prompt (as in the paper's table 3), then LLM-Yes/No asked PLUIE's own prompt
    for kind, template in (("yes-no", None), ("likert", None), ("yes-no", scorer.template)):
        judge = LLMJudge(
            (model, tokenizer),
            kind=kind,
            template=template,
            batch_size=args.batch_size,
            max_new_tokens=args.max_new_tokens,
        )
        judge.score(sources[:1], hypotheses[:1])  # warm-up
        name = f"LLM-{kind}" + ("" if template is None else f" ({template.name} prompt)")
        methods[name] = (judge, None, judge.score)
    best: dict[str, float] = {}
    results = {}
    for _ in range(args.rounds):
        for name, (what, _, run) in methods.items():
            synchronise(device)
            started = time.perf_counter()
            results[name] = run() if name == "PLUIE" else run(*pairs)
            synchronise(device)
            best[name] = min(best.get(name, math.inf), time.perf_counter() - started)
    print(
        f"\nPLUIE against the output-based judges on the same model and {count} pairs "
        f"(best of {args.rounds} interleaved rounds):"
    )
    for name, seconds in best.items():
        what = methods[name][0]
        if name == "PLUIE":
            detail = f"template {what}, one forward pass per pair, shared prefix cached"
        else:
            lengths = [len(what._encode(p)) for p in what.prompts(*pairs)]
            detail = (
                f"template {what.template.name}, prompts of {np.mean(lengths):.0f} tokens; "
                f"{what.last_run['generated_tokens'] / count:.1f} tokens generated per pair, at most "
                f"{what.max_new_tokens}; {results[name].unparsed} of {count} answers unparsed"
            )
        print(f"{name}: {count / seconds:.2f} pairs/s ({seconds:.2f}s; {detail})")
    print(
        "ratios (pairs/s of PLUIE / of the judge): "
        + ", ".join(f"PLUIE / {name} = {best[name] / best['PLUIE']:.1f}x" for name in best if name != "PLUIE")
    )


if __name__ == "__main__":
    main()
