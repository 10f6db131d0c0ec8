"""How well a PLUIE judge separates paraphrases, on MRPC test: ROC AUC and accuracy at the natural
threshold 0 against MRPC's gold labels, per template (and Levenshtein beside it, for scale).

    python bench/judge_quality.py --model demo --pairs 300 --template fs-direct --template direct

The pairs are MRPC test's first N (file order); the demo judge (SmolLM2-135M) is near chance here,
as docs/operations.md says: it shows the path working, not the metric's quality.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.paths import DATASETS


def read_mrpc_test(count: int):
    sources, hypotheses, labels = [], [], []
    with open(DATASETS / "mrpc" / "msr_paraphrase_test.txt", encoding="utf-8-sig", newline="") as handle:
        rows = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        next(rows)
        for row in rows:
            if len(row) == 5:
                labels.append(int(row[0]))
                sources.append(row[3])
                hypotheses.append(row[4])
            if len(sources) == count:
                break
    return sources, hypotheses, np.array(labels)


def main(argv=None) -> None:
    from sklearn.metrics import roc_auc_score

    from pluie_core.baselines import levenshtein
    from pluie_core.gguf_files import demo_model_path
    from pluie_core.scorer import PluieScorer

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="demo", help="hub id, directory, .gguf file, or 'demo'")
    parser.add_argument("--pairs", type=int, default=300)
    parser.add_argument("--template", action="append", help="default: fs-direct and direct")
    args = parser.parse_args(argv)
    sources, hypotheses, labels = read_mrpc_test(args.pairs)
    name = str(demo_model_path()) if args.model == "demo" else args.model
    print(f"MRPC test, first {len(labels)} pairs ({labels.mean():.0%} paraphrases); model {name}")
    distance = np.asarray(levenshtein(sources, hypotheses))
    print(f"Levenshtein (lower = similar): ROC AUC {roc_auc_score(labels, -distance):.3f}")
    loaded = None
    for template in args.template or ["fs-direct", "direct"]:
        scorer = PluieScorer(loaded or name, template=template)
        loaded = (scorer.model, scorer.tokenizer)
        started = time.perf_counter()
        scores = scorer.score(sources, hypotheses)
        seconds = time.perf_counter() - started
        accuracy = ((scores > 0) == (labels == 1)).mean()
        print(
            f"PLUIE {template}: ROC AUC {roc_auc_score(labels, scores):.3f}, accuracy at 0 {accuracy:.1%} "
            f"({(scores > 0).mean():.0%} predicted paraphrase); {len(labels) / seconds:.1f} pairs/s"
        )


if __name__ == "__main__":
    main()
