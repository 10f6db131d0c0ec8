"""Where the shared, human-labelled datasets live: ../shared/datasets beside the repository
(never copied into it). PLUIE_SHARED_DATASETS overrides it."""

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATASETS = Path(os.environ.get("PLUIE_SHARED_DATASETS", REPO.parent / "shared" / "datasets"))
