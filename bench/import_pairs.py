"""Time the import of a real dataset file into a fresh SQLite store (read + validate + store).

python bench/import_pairs.py [FILE]   (default: ../shared/datasets/paws_wiki_final/dev.tsv)
"""

import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from db import access, init_db
from db.datasets import import_pairs
from pluie_core.io import load_pairs

access.install_operator()  # a bench writes as the store's operator, as the worker and the command line do

path = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO.parent / "shared/datasets/paws_wiki_final/dev.tsv"
with tempfile.TemporaryDirectory() as tmp:
    engine = init_db(f"sqlite:///{tmp}/bench.db")
    start = time.perf_counter()
    pairs = load_pairs(path)
    read = time.perf_counter()
    result = import_pairs(engine, path.stem, pairs)
    done = time.perf_counter()
    print(
        f"{path.name}: {pairs.attrs['n_rows_read']} rows read, {result.n_pairs} pairs stored "
        f"({len(pairs.attrs['duplicates'])} duplicates skipped)"
    )
    print(f"read + validate: {read - start:.3f} s   store: {done - read:.3f} s   total: {done - start:.3f} s")
