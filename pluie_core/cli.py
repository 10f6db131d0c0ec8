"""Command line: ``python -m pluie_core score INPUT --model M --template T -o OUTPUT``.

Reads any pair file ``pluie_core.io.load_pairs`` reads, scores every pair with PLUIE (and the
baselines with ``--baselines``), and writes the input columns plus one column per score, as CSV,
TSV, JSON Lines or JSON according to the output's extension. A mistake the user can fix (missing
file, unknown model, multi-token answer, ...) prints one line to stderr and exits with status 1.

``python -m pluie_core paraphrasus DIR --metric NAME -o OUT.csv``: the PARAPHRASUS scorecard of a
metric (pluie_core.evaluation.paraphrasus_cli).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

WRITERS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".json": "json"}


def build_parser() -> argparse.ArgumentParser:
    from pluie_core.baselines import BASELINES  # light: the metrics' own libraries load when they run

    parser = argparse.ArgumentParser(prog="python -m pluie_core", description="PLUIE scoring of sentence pairs.")
    commands = parser.add_subparsers(dest="command", required=True)
    score = commands.add_parser("score", help="score a pair file and write it back with score columns")
    score.add_argument("input", help="pair file (CSV, TSV, JSONL, ... anything load_pairs reads)")
    score.add_argument("--model", "-m", required=True, help="Hugging Face model id or local model directory")
    score.add_argument("--template", "-t", default="fs-direct",
                       help="built-in template (fs-direct, direct, indirect, fs-direct-fr, net, rev) or a YAML/JSON file")
    score.add_argument("--answers", nargs=2, metavar=("YES", "NO"),
                       help="the two opposed answer words (default: the template's, e.g. Yes No)")
    score.add_argument("--symmetric", action="store_true",
                       help="also score (hypothesis, source); 'pluie' is then the mean of both directions")
    score.add_argument("--baselines", nargs="*", metavar="NAME",
                       help="add one column per baseline: the names given (" + ", ".join(BASELINES) + "), or with "
                       "no name every baseline that needs no model (" +
                       ", ".join(n for n, b in BASELINES.items() if b.default_run) + ")")
    score.add_argument("--baseline-model", action="append", default=[], metavar="NAME=MODEL",
                       help="the model of a baseline, e.g. bertscore=roberta-large or nmt_cross=facebook/m2m100_418M "
                       "(repeatable; adds that baseline)")
    score.add_argument("--baseline-option", action="append", default=[], metavar="NAME.OPTION=VALUE",
                       help="another option of a baseline, e.g. bert_ibleu.beta=4 or nmt_pivot.lang=de (repeatable)")
    score.add_argument("--format", default="auto", help="input format for load_pairs (default: auto)")
    score.add_argument("--keep-duplicates", action="store_true",
                       help="keep every row of the input, exact repeats of a pair included (as benchmarks count "
                            "them); by default a repeat is skipped and only the first is scored")
    score.add_argument("--device", help="cuda, cuda:1, cpu, ... (default: cuda when available)")
    score.add_argument("--dtype", help="bfloat16, float16 or float32 (default: bfloat16 on GPU, float32 on CPU)")
    score.add_argument("--batch-size", type=int, help="pairs per forward pass (default: automatic)")
    score.add_argument("--device-map", help="let accelerate place the model instead of --device: auto (GPUs, then CPU), "
                       "cpu, balanced or sequential (shard across the GPUs)")
    score.add_argument("--quantize", choices=["8bit", "4bit"], help="load the PLUIE model in 8 or 4 bits "
                       "(bitsandbytes, CUDA GPU only)")
    score.add_argument("--no-progress", action="store_true", help="no progress bar")
    score.add_argument("--output", "-o", required=True, help="output file: .csv, .tsv, .jsonl or .json")
    from pluie_core.evaluation import paraphrasus_cli

    paraphrasus_cli.add_parser(commands)
    return parser


def _write(frame, path: Path) -> None:
    kind = WRITERS[path.suffix.lower()]
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind in ("csv", "tsv"):
        frame.to_csv(path, sep="," if kind == "csv" else "\t", index=False)
    else:
        frame.to_json(path, orient="records", lines=kind == "jsonl", force_ascii=False, indent=None)


def _texts(column) -> list:
    """Cells as text; empty cells stay None so the scorer names the pair that lacks a sentence."""
    import pandas as pd

    return [None if pd.isna(v) else v if isinstance(v, str) else str(v) for v in column]


def baseline_requests(args) -> tuple[list[str], dict[str, dict]]:
    """The baselines to compute and their options, from --baselines / --baseline-model / --baseline-option,
    checked against the registry (ValueError with one sentence)."""
    from pluie_core.baselines import BASELINES

    options: dict[str, dict] = {}
    for text in args.baseline_model:
        name, sep, model = text.partition("=")
        if not sep or not name.strip() or not model.strip():
            raise ValueError(f"--baseline-model takes NAME=MODEL (e.g. bertscore=roberta-large), not {text!r}.")
        options.setdefault(name.strip(), {})["model"] = model.strip()
    for text in args.baseline_option:
        key, sep, value = text.partition("=")
        name, dot, option = key.partition(".")
        if not sep or not dot or not name.strip() or not option.strip():
            raise ValueError(f"--baseline-option takes NAME.OPTION=VALUE (e.g. bert_ibleu.beta=4), not {text!r}.")
        options.setdefault(name.strip(), {})[option.strip()] = value.strip()
    if args.baselines is None:
        names = []
    elif args.baselines:
        names = list(args.baselines)
    else:
        names = [n for n, b in BASELINES.items() if b.default_run]
    names += [n for n in options if n not in names]
    unknown = [n for n in names if n not in BASELINES]
    if unknown:
        raise ValueError(f"Unknown baseline {unknown[0]!r}; choose from {', '.join(BASELINES)}.")
    checked = {n: BASELINES[n].check_options(options.get(n)) for n in names}
    return names, checked


def score_file(args) -> Path:
    from pluie_core.io import load_pairs
    from pluie_core.scorer import PluieScorer

    source_path, output = Path(args.input), Path(args.output)
    if not source_path.is_file():
        raise FileNotFoundError(f"Input file {source_path} does not exist.")
    if output.suffix.lower() not in WRITERS:
        raise ValueError(f"Cannot write {output.name}: give the output a .csv, .tsv, .jsonl or .json extension.")
    baselines, baseline_options = baseline_requests(args)  # mistakes show before any model loads
    frame = load_pairs(source_path, format=args.format, keep_duplicates=args.keep_duplicates)
    for note in frame.attrs.get("notes", []):
        print(f"note: {note}", file=sys.stderr)
    for warning in frame.attrs.get("warnings", []):  # duplicates skipped or kept, NUL removed, ...
        print(f"warning: {warning}", file=sys.stderr)
    if len(frame) == 0:
        raise ValueError(f"{source_path} contains no sentence pairs.")
    scorer = PluieScorer(args.model, template=args.template, answers=args.answers, device=args.device,
                         dtype=args.dtype, batch_size=args.batch_size, device_map=args.device_map,
                         quantization=args.quantize)
    sources, hypotheses = _texts(frame["source"]), _texts(frame["hypothesis"])
    missing = [f for f in scorer.template.fields if f not in frame.columns and not scorer.template._optional(f)]
    if missing:
        raise ValueError(f"Template {scorer.template.name!r} needs column(s) {missing} in {source_path.name}.")
    fields = {f: frame[f].tolist() for f in scorer.template.fields if f in frame.columns}
    progress = not args.no_progress
    out = frame.copy()
    forward = scorer.score(sources, hypotheses, fields=fields, progress=progress)
    if args.symmetric:
        backward = scorer.score(hypotheses, sources, fields=fields, progress=progress)
        out["pluie_forward"], out["pluie_backward"] = forward, backward
        out["pluie"] = (forward + backward) / 2
    else:
        out["pluie"] = forward
    if baselines:
        from pluie_core.baselines import compute_baselines

        for name, values in compute_baselines(sources, hypotheses, baselines, baseline_options).items():
            out[name] = values
    _write(out, output)
    return output


def main(argv=None) -> int:
    from pluie_core.io import PairFileError
    from pluie_core.scorer import PluieError
    from pluie_core.templates import TemplateError

    args = build_parser().parse_args(argv)
    try:
        if args.command == "score":
            written = score_file(args)
            print(f"wrote {written}", file=sys.stderr)
        elif args.command == "paraphrasus":
            from pluie_core.evaluation import paraphrasus_cli

            print(f"wrote {paraphrasus_cli.run(args)}", file=sys.stderr)
    except (PluieError, TemplateError, PairFileError, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    return 0
