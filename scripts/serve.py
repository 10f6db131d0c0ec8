"""Start PLUIE Lab as `make run` does: the scoring worker first, then the Streamlit server of app.py
in this same process, so the worker scores from the start (no browser needed) and stops with it.

    python scripts/serve.py [streamlit options, e.g. --server.port 8501]

The worker is the one ensure_worker_running starts (none with PLUIE_NO_WORKER=1, none when one is
alive on the store); app.py's own call then finds it and starts no second one. Its parent is this
process, the server: when the server stops, the worker finishes its batch and exits.
`streamlit run app.py` still works; the worker then starts with the first page a browser opens.

On a fresh store, the first start also creates a PLUIE run on the demonstration judge (SmolLM2-135M,
installed by `make run`; db.runs.ensure_first_start_runs), so PLUIE scores appear beside the
baselines with nobody typing a model id; PLUIE_DEMO_RUN=0 leaves it out (the tests do).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def demo_run_wanted() -> bool:
    return os.environ.get("PLUIE_DEMO_RUN", "").strip().lower() not in ("0", "false", "no")


def main(argv: list[str]) -> int:
    from worker import ensure_worker_running

    try:
        ensure_worker_running(demo_run=demo_run_wanted())  # the first start's runs, then the worker
    except Exception as exc:  # the store cannot be opened: say so; the app shows the same on its pages
        print(f"serve: no scoring worker started: {str(exc).strip().splitlines()[0]}", file=sys.stderr)
    from streamlit.web import cli as streamlit_cli  # after the worker's start: it loads while this does

    sys.argv = ["streamlit", "run", str(REPO / "app.py"), *argv]
    return streamlit_cli.main(prog_name="streamlit")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
