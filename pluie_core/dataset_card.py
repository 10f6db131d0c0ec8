"""The dataset card (README.md with a Hugging Face YAML header) of a published PLUIE Lab dataset,
and the agreement figures it reports, from plain facts: no database here (db.publish gathers the
facts from the store while it streams the rows out).

Text a user typed or imported (title, dataset names and descriptions, campaign and run names, models,
templates, English levels) goes into the card's Markdown through _text (pluie_core.visible.document_text,
the escaping every page uses, with addresses and names holding "@" as inline code instead of an invisible
joiner): it reads and copies as typed on the Hub, and no HTML, link, image or math is made of it.
The YAML header is written by yaml.safe_dump, which quotes whatever needs quoting.

Agreement is pluie_core.agreement's, the one computation of α every page uses: from per-pair counts
of each level (count_patterns), gathered chunk by chunk.
"""

from __future__ import annotations

import re
from typing import Optional

import yaml

from pluie_core.aggregation import DEFAULT_CONFIDENCE, DEFAULT_MIN_LABELS, MODEL_METHODS, final_rule_text
from pluie_core.agreement import agreement_figures, count_patterns  # noqa: F401 (the card's figures, re-exported)
from pluie_core.labels import LEVELS
from pluie_core.quality import served_checks_text
from pluie_core.run_kinds import PLUIE
from pluie_core.visible import document_text
from pluie_core.wording import counted

__all__ = ["LICENCE_PATTERN", "check_licence", "count_patterns", "agreement_figures", "dataset_card", "size_category"]

LICENCE_PATTERN = re.compile(r"^[a-z0-9][a-z0-9.+\-]*$")


def check_licence(licence: Optional[str]) -> str:
    """The licence as a Hugging Face licence identifier (cc-by-4.0, mit, other...), lower-cased."""
    value = (licence or "").strip().lower()
    if not value:
        raise ValueError(
            "Choose the licence of the dataset (e.g. cc-by-4.0): a published dataset says how it may be used."
        )
    if not LICENCE_PATTERN.match(value):
        raise ValueError(
            f"“{licence}” is not a licence identifier: write it like cc-by-4.0, cc-by-sa-4.0, mit or other."
        )
    return value


def size_category(n: int) -> str:
    """The Hub's size_categories value for n rows."""
    for limit, name in (
        (1_000, "n<1K"),
        (10_000, "1K<n<10K"),
        (100_000, "10K<n<100K"),
        (1_000_000, "100K<n<1M"),
        (10_000_000, "1M<n<10M"),
    ):
        if n < limit:
            return name
    return "10M<n<100M"


_LINE_BREAK = re.compile(r"[ \t]*(?:\r\n?|\n)[ \t]*")


def _text(value) -> str:
    """User text in the card's Markdown, on one line (a heading, a list item, a table cell): escaped as the
    pages escape it, so it reads as typed and makes no markup; its line breaks become spaces."""
    return document_text(_LINE_BREAK.sub(" ", "" if value is None else str(value)))


def _heading(value) -> str:
    """User text as an ATX heading's text: _text, and a closing run of # kept as text."""
    return re.sub(r"#+$", lambda found: "\\#" * len(found.group(0)), _text(value))


def _alpha_text(figure: dict) -> str:
    if figure.get("alpha") is None:
        return f"not defined ({figure.get('why', 'too few labels')})"
    return (
        f"{figure['alpha']:.3f} (95% CI {figure['ci_low']:.3f} – {figure['ci_high']:.3f}, "
        f"{counted(figure['n_items'], 'pair')})"
    )


def _share(value: Optional[float]) -> str:
    return "—" if value is None else f"{value:.1%}"


# a Hugging Face model id: "org/name", or a bare name such as roberta-large (pluie_core.hub's rule)
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


def model_text(model: Optional[str]) -> str:
    """How the card names a run's model: a Hugging Face id as it is; a model on the server's disk (a
    folder or a GGUF file: an absolute path, ~/..., a path of several folders) by its last name only, so
    that no path of the server's file system is published."""
    model = (model or "").strip()
    if not model or _HUB_ID.match(model):
        return model
    name = re.split(r"[\\/]+", model.rstrip("/\\"))[-1]
    return f"{name} (a local copy)" if name else "a local model"


def _paragraphs(text: str) -> list[str]:
    """The paragraphs of a dataset's description (the organiser's text, then the note each import added
    below it), each on one line."""
    blocks = re.split(r"\n\s*\n", (text or "").strip())
    return [p for p in (" ".join(line.strip() for line in b.splitlines() if line.strip()) for b in blocks) if p]


COLUMN_HELP = [
    ("dataset", "the PLUIE Lab dataset the pair comes from"),
    ("pair_id", "the pair's id in PLUIE Lab (as its Review, Disagreements, Pairs and gold-check views name it)"),
    ("external_id", "the pair's id in its source file"),
    ("source, hypothesis", "the two sentences"),
    ("label", "the gold label imported with the pair (empty when none)"),
    (
        "annotator:<name>",
        "one column per annotator: their level 0–4 (4 = Don't know), or a value imported on its own scale",
    ),
    ("n_labels", "labels the pair received"),
    ("majority_level, majority_label", "the majority rule (below)"),
    ("binary_label", "the majority of the binarised labels (a tie gives none)"),
    ("final_level, final_label, final_binary", "the pair's final level, its name, and its binarisation"),
    (
        "final_source",
        "which rule set the final level: adjudicated (a reviewer), gold (a campaign's gold key: the "
        "organiser's known answer), dawid_skene, glad or mace (the "
        "aggregation method's level, where its posterior reached the confidence: see How the final "
        "labels were reached), majority (the majority rule) or none (no rule gave a level)",
    ),
    ("adjudicated_by, adjudicated_at, adjudication_note", "who settled the pair, when (UTC), and why"),
    ("n_flags, flagged_by", "how many annotators flagged the pair for review, and who"),
    ("comments", "the annotators' comments on the pair, one “name: comment” per line"),
    ("score:<run>", "one column per score run (below)"),
]


PAIRS_TEXT = {
    "labelled": "only the pairs with at least one label (unlabelled pairs are left out)",
    "adjudicated": "only the pairs whose final level a reviewer set (the others are left out)",
}


def _scope_lines(facts: dict) -> list[str]:
    campaign, pairs = facts.get("campaign"), facts.get("pairs", "all")
    parts = []
    if campaign:
        parts.append(f"the pairs and labels of the labelling campaign “{_text(campaign['name'])}” (below)")
    if pairs in PAIRS_TEXT:
        parts.append(PAIRS_TEXT[pairs])
    return [f"- Rows: {'; '.join(parts)}."] if parts else []


def _campaign_lines(campaign: Optional[dict]) -> list[str]:
    """The section on the campaign the rows come from: its selection, queue, and gold checks."""
    if not campaign:
        return []
    rate = campaign.get("gold_rate") or 0.0
    lines = [
        "",
        "## Campaign",
        "",
        f"- **{_text(campaign['name'])}**, on "
        f"{', '.join(_text(name) for name in campaign['datasets']) or 'no dataset any more'}.",
        # the selection's text names a score run
        f"- Pairs taken: {_text(campaign['selection_text'])}; of those, {campaign['n_training']:,} training pairs "
        "(the same for everyone, shown first) and "
        f"{campaign['n_queue']:,} pairs in the queue.",
        f"- {_overlap_text(campaign)}, {campaign['quota']:,} pairs per annotator, seed "
        f"{campaign['seed']} (serving order and sample).",
        f"- Gold checks: {campaign['n_gold_pairs']:,} gold pairs; share of gold checks {rate:.0%}"
        + _checks_text(rate, campaign.get("checks_per_annotator", 0), campaign.get("checks_served", []))
        + ".",
    ]
    origins = campaign.get("gold_origins") or {}
    if origins:
        lines.append(
            "- How the gold keys were made: "
            + "; ".join(f"{n:,} by {_text(rule)}" for rule, n in origins.items())
            + ". A key's level is its pair's final level "
            "where no reviewer decided (`final_source` gold)."
        )
    if campaign.get("gold_balance"):
        lines.append(f"- Gold keys' balance: {_text(campaign['gold_balance'])}")
    return lines


def _checks_text(rate: float, planned: int, served: list) -> str:
    """What was planned and what was served: checks go within the pairs each person gets, so one whose
    queue ran out before the quota got fewer than planned."""
    if not rate and not any(served):
        return " (none served)"
    plan = (
        f"{planned:,} planned per annotator besides their quota, each gold pair at most once, served within "
        "the pairs each person got (fewer where the queue ran out first)"
        if rate
        else "none planned now"
    )
    return f" ({plan}; served: {served_checks_text(served)})"


def dataset_card(facts: dict) -> str:
    """README.md of the dataset folder. ``facts``: title, licence, n_pairs, datasets (name,
    n_pairs, description, optional imported_by: the account that imported it, "" when unknown),
    annotators (count by English level: {level or "not given": n}),
    n_annotators, n_labels, labels_per_pair ({k: pairs with k labels}), final_sources ({source: n}),
    final_levels ({level: n}), agreement (agreement_figures), runs (name, kind, model, template,
    direction, answers, higher_is_similar, n_scores, optional created_by), include_training, created_at, data_file;
    optional: pairs ("all", "labelled", "adjudicated": which pairs the rows are), n_gold_answers
    (labels that answer a gold check), campaign (the campaign the rows are restricted to: name,
    datasets, selection_text, sample, seed, quota, overlap, n_training, n_queue, n_gold_pairs,
    gold_rate, checks_per_annotator: planned, checks_served: per annotator), aggregation (method, text: pluie_core.aggregation's
    Aggregation.describe, the method, its settings and the reliabilities' spread; for a model method,
    confidence and min_labels, the thresholds its level had to reach to be final, and median_labels,
    the fit's median labels per annotator)."""
    aggregation = facts.get("aggregation")
    header = {
        "license": facts["licence"],
        "pretty_name": facts["title"],
        "task_categories": ["text-classification", "sentence-similarity"],
        "tags": ["paraphrase", "semantic-similarity", "pluie-lab"],
        "size_categories": [size_category(facts["n_pairs"])],
        "configs": [{"config_name": "default", "data_files": [{"split": "train", "path": facts["data_file"]}]}],
    }
    lines = [
        "---",
        yaml.safe_dump(header, sort_keys=False, allow_unicode=True).rstrip(),
        "---",
        "",
        f"# {_heading(facts['title'])}",
        "",
        f"Sentence pairs labelled for paraphrase on the five-level scale of the ParaPLUIE protocol, exported "
        f"from PLUIE Lab on {facts['created_at']:%Y-%m-%d %H:%M} UTC. Licence: **{facts['licence']}**.",
        "",
        "```python",
        "from datasets import load_dataset, load_from_disk",
        'load_dataset("path/to/this/folder")   # the Parquet file, as the Hub reads it',
        'load_from_disk("path/to/this/folder") # the same rows as Arrow (a DatasetDict with a train split)',
        "```",
        "",
        "## Contents",
        "",
        f"- **{counted(facts['n_pairs'], 'pair')}** from {counted(len(facts['datasets']), 'dataset')}:",
    ]
    for d in facts["datasets"]:
        # the description, and the notes imports added under it, inside the dataset's list item: the
        # paragraphs after the first are indented under it (unindented, they would end the list)
        first, *rest = _paragraphs(d.get("description")) or [""]
        by = f" (imported by {_text(d['imported_by'])})" if d.get("imported_by") else ""
        lines.append(
            f"  - {_text(d['name'])}: {counted(d['n_pairs'], 'pair')}{by}" + (f" — {_text(first)}" if first else "")
        )
        for paragraph in rest:
            lines += ["", f"    {_text(paragraph)}"]
    lines += _scope_lines(facts)
    by_level = ", ".join(f"{n} {_text(level)}" for level, n in facts["annotators"].items()) or "none"
    lines += [
        f"- **{counted(facts['n_annotators'], 'annotator')}** (English level: {by_level}), "
        f"**{counted(facts['n_labels'], 'label')}**"
        + (", training-trial labels included" if facts.get("include_training") else " (training-trial labels left out)")
        + ".",
        "- Labels per pair: "
        + (
            ", ".join(
                f"{counted(k, 'label')}: {counted(n, 'pair')}" for k, n in sorted(facts["labels_per_pair"].items())
            )
            or "none"
        )
        + ".",
        f"- Answers to gold checks: {facts.get('n_gold_answers', 0):,} of these labels answer a campaign's "
        "gold check (a pair with a known answer, mixed into an annotator's pairs to check their attention); "
        "they are in the annotator columns and the counts like any label.",
    ]
    lines += _campaign_lines(facts.get("campaign"))
    lines += [
        "",
        "## Protocol and scale",
        "",
        "Annotators see one pair at a time, one sentence above the other (which one is on top is drawn at "
        "random), word differences highlighted, and answer *Do these two sentences share a common meaning?* "
        "on five levels (ParaPLUIE, appendix A.3), after a short training trial:",
        "",
    ]
    lines += [f"- {i} {name}" for i, name in enumerate(LEVELS)]
    lines += [
        "",
        "**Binarisation.** 0–1 → non-paraphrase (0), 2–3 → paraphrase (1), Don't know → no label.",
        "",
        "**Majority rule.** The most frequent level of a pair, Don't know ignored; a tie between levels on "
        "the same side of the paraphrase boundary goes to the lower median of the tied levels, a tie across "
        "the boundary gives no label.",
        "",
        "## How the final labels were reached",
        "",
        "**A reviewer's decision wins.** Where a reviewer settled a pair (PLUIE Lab's review queue: pairs whose "
        "labels disagree, across the paraphrase boundary first, then by spread of levels, and pairs an "
        "annotator flagged), their level is the pair's final level, whatever its labels and any rule say "
        "(`final_source` adjudicated; `adjudicated_by`, `adjudicated_at` and `adjudication_note` say who, when "
        "and why); the annotators' own labels are kept as given. " + _final_rule(aggregation, facts["final_sources"]),
        "",
    ]
    method = aggregation["method"] if aggregation else None
    model = method in MODEL_METHODS
    # every value final_source can take in this file, each with its count (0 included), and any other counted
    keyed = bool((facts.get("campaign") or {}).get("n_gold_pairs"))  # a campaign with keys: gold can occur
    shown = ("adjudicated", *(("gold",) if keyed else ()), *((method,) if model else ()), "majority", "none")
    shown += tuple(sorted(set(facts["final_sources"]) - set(shown)))
    lines += [
        "`final_source` takes these values in this file: " + ", ".join(shown) + ".",
        "",
        "| final_source | pairs |",
        "|---|---|",
    ]
    lines += [f"| {source} | {facts['final_sources'].get(source, 0):,} |" for source in shown]
    lines += ["", "| final level | pairs |", "|---|---|"]
    lines += [f"| {level} {LEVELS[level]} | {facts['final_levels'].get(level, 0):,} |" for level in range(4)]
    agreement = facts["agreement"]
    lines += [
        "",
        "## Agreement",
        "",
        f"Over the {counted(agreement['n_pairs'], 'pair')} with two or more labels on levels 0–3 "
        "(Don't know left out; "
        "every label except the training trial's, answers to gold checks included, as on every page of PLUIE Lab); "
        f"95% intervals from {agreement['n_boot']:,} bootstrap resamples of pairs.",
        "",
        f"- Krippendorff's α, ordinal, four levels: {_alpha_text(agreement['ordinal'])}",
        f"- Krippendorff's α, nominal, binarised labels: {_alpha_text(agreement['binary'])}",
        f"- Pairs whose labels are all the same level: {_share(agreement['unanimous_level'])}; "
        f"all on the same side of the paraphrase boundary: {_share(agreement['unanimous_side'])}",
        "",
        "## Score runs",
        "",
    ]
    if facts["runs"]:
        # who created each run, where an account did (a store without accounts names nobody)
        named = any(run.get("created_by") for run in facts["runs"])
        lines += [
            "| column | kind | model | template | direction | answers | higher is similar | pairs scored |"
            + (" created by |" if named else ""),
            "|---|---|---|---|---|---|---|---|" + ("---|" if named else ""),
        ]
        for run in facts["runs"]:
            answers = " / ".join(_text(a) for a in (run.get("answers") or [])) or "—"
            lines.append(
                f"| score:{_text(run['name'])} | {run['kind']} | {_text(model_text(run.get('model'))) or '—'} | "
                f"{_text(run.get('template')) or '—'} | "
                f"{run.get('direction') or '—'} | {answers} | {'yes' if run['higher_is_similar'] else 'no'} | "
                f"{run['n_scores']:,} |" + (f" {_text(run.get('created_by')) or '—'} |" if named else "")
            )
        if any(run["kind"] == PLUIE for run in facts["runs"]):  # said only where a PLUIE column is there
            lines += [
                "",
                "A PLUIE score is log p(answer₁) − log p(answer₂) for the template's question (> 0: paraphrase).",
            ]
    else:
        lines.append("No score run is included.")
    column_help = COLUMN_HELP + (
        [
            (
                "aggregation",
                "the aggregation method (where no reviewer decided, its level is the final one when it is "
                "sure enough: see final_source)",
            ),
            ("aggregated_level, aggregated_label", "the method's level of the pair and its name"),
            ("posterior, uncertainty", "the probability of that level, and 1 − the largest probability"),
        ]
        if aggregation
        else []
    )
    lines += ["", "## Columns", ""] + [f"- `{name}`: {text}" for name, text in column_help] + [""]
    return "\n".join(lines)


MAJORITY_ELSEWHERE = (
    "Elsewhere the majority rule sets the final level (`final_source` majority); where it gives "
    "none (no label but Don't know, or a tie across the paraphrase boundary), the pair has no "
    "final level (`final_source` none)."
)


def _gold_rule(sources: dict) -> str:
    """The sentence on pairs whose final level is a gold key's, where there are any."""
    n = int(sources.get("gold", 0))
    if not n:
        return ""
    return (
        f"{n:,} pair{'' if n == 1 else 's'} took a campaign's gold key as final level (`final_source` gold): "
        "the organiser's known answer (how the keys were made: the Campaign section), not any method's reading "
        "of the labels; a reviewer's decision wins over a key. "
    )


def _final_rule(aggregation: Optional[dict], sources: dict) -> str:
    """How a pair without a reviewer's decision got its final level: a campaign's gold key, the majority
    rule, or an aggregation method's level where it was sure enough (its thresholds, and how many pairs
    each rule decided)."""
    return _gold_rule(sources) + _rule_by_labels(aggregation, sources)


def _rule_by_labels(aggregation: Optional[dict], sources: dict) -> str:
    if not aggregation:
        return MAJORITY_ELSEWHERE
    text = (
        f"Aggregation method: {aggregation['text']} Its `posterior` is the probability of its level and "
        "`uncertainty` 1 − the largest probability (PLUIE Lab's pluie_core.aggregation, with crowd-kit 1.4.2)."
    )
    if aggregation["method"] not in MODEL_METHODS:
        return MAJORITY_ELSEWHERE + " " + text
    return (
        text
        + " "
        + final_rule_text(
            sources,
            aggregation["method"],
            aggregation.get("confidence", DEFAULT_CONFIDENCE),
            aggregation.get("min_labels", DEFAULT_MIN_LABELS),
            aggregation.get("median_labels", 0.0),
        )
    )


def _overlap_text(campaign: dict) -> str:
    if campaign.get("overlap_max") is None:
        return f"{campaign['overlap']} annotator(s) per pair"
    return (
        f"adaptive overlap: {campaign['overlap']} to {campaign['overlap_max']} annotators per pair (one more "
        f"while fewer than {campaign['confidence']:.0%} of a pair's answers agreed on the binarised label)"
    )
