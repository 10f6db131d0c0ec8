"""A Python client for a PLUIE Lab server's HTTP API (/api/v1), for notebooks and pipelines.

    from pluie_core.client import Lab

    lab = Lab("http://lab.example.org:8501", token="pluie_…")       # or PLUIE_LAB_URL / PLUIE_LAB_TOKEN
    dataset = lab.import_pairs(frame, name="candidates-2026-12")     # a DataFrame with source, hypothesis
    run = lab.runs.create(model="/models/judge", dataset_ids=[dataset["dataset_id"]])
    lab.runs.wait(run["id"])                                         # until every pair is scored
    scores = lab.runs.scores(run["id"])                              # a DataFrame, every page read for you
    campaign = lab.campaigns.create("round 1", [dataset["dataset_id"]], quota=50, annotators=["ana", "ben"])
    lab.campaign(campaign["id"]).progress()
    final = lab.final_labels(campaign=campaign["id"], as_="pandas")  # final_level, final_source...

Every refusal raises LabError with the server's own sentence and its status (400, 401, 403, 404, 409, 413,
429, 503). HTTP through httpx; a list that pages (pairs, scores) is read page after page with its cursor.
"""

from __future__ import annotations

import io
import os
import time
from typing import Any, Iterator, Literal, Optional, Sequence

import httpx
import pandas as pd

from pluie_core.run_kinds import PLUIE

API = "/api/v1"
FINAL_COLUMNS = [
    "dataset",
    "pair_id",
    "external_id",
    "source",
    "hypothesis",
    "final_level",
    "final_label",
    "final_binary",
    "final_source",
]


class LabError(RuntimeError):
    """A request the server refused or could not answer: ``status`` (0 when it could not be reached) and the
    server's sentence."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message

    def __str__(self) -> str:
        return f"{self.message} (HTTP {self.status})" if self.status else self.message


class Lab:
    """A PLUIE Lab server, as one account (its token). ``url``: the app's address (PLUIE_LAB_URL); ``token``:
    a personal token (PLUIE_LAB_TOKEN). ``transport``: an httpx transport (tests, proxies)."""

    def __init__(
        self,
        url: Optional[str] = None,
        token: Optional[str] = None,
        *,
        timeout: float = 60.0,
        transport: Optional[httpx.BaseTransport] = None,
    ):
        url = url or os.environ.get("PLUIE_LAB_URL")
        token = token or os.environ.get("PLUIE_LAB_TOKEN")
        if not url:
            raise LabError(0, "Give the server's address (Lab(url=...) or PLUIE_LAB_URL).")
        if not token:
            raise LabError(0, "Give a personal token (Lab(token=...) or PLUIE_LAB_TOKEN): make one in “Your tokens”.")
        self.url = url.rstrip("/")
        self._http = httpx.Client(
            base_url=self.url + API, headers={"Authorization": f"Bearer {token}"}, timeout=timeout, transport=transport
        )
        self.runs = Runs(self)
        self.campaigns = Campaigns(self)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "Lab":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ requests
    def _request(self, method: str, path: str, **kwargs) -> httpx.Response:
        try:
            answer = self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise LabError(0, f"The server at {self.url} could not be reached ({exc}).") from None
        if answer.status_code >= 400:
            try:
                message = answer.json().get("error") or answer.text
            except ValueError:
                message = answer.text or answer.reason_phrase
            raise LabError(answer.status_code, str(message))
        return answer

    def _json(self, method: str, path: str, **kwargs) -> Any:
        return self._request(method, path, **kwargs).json()

    def _pages(self, path: str, params: dict, limit: int) -> Iterator[dict]:
        after = 0
        while True:
            page = self._json("GET", path, params={**params, "after": after, "limit": limit})
            yield from page["items"]
            if page["next_after"] is None:
                return
            after = page["next_after"]

    # ------------------------------------------------------------------ who, datasets, pairs
    def me(self) -> dict:
        return self._json("GET", "/me")

    def datasets(self) -> pd.DataFrame:
        return pd.DataFrame(self._json("GET", "/datasets"))

    def dataset(self, dataset_id: int) -> dict:
        return self._json("GET", f"/datasets/{int(dataset_id)}")

    def import_pairs(
        self,
        pairs: pd.DataFrame,
        name: str,
        *,
        description: str = "",
        append: bool = False,
        keep_duplicates: bool = False,
    ) -> dict:
        """Import a frame with source and hypothesis (and label, id, ``annotator:<name>`` columns, any
        metadata), checked as the Import page checks a file: all or nothing. Returns the counts."""
        rows = pairs.astype(object).where(pairs.notna(), None).to_dict(orient="records")
        return self._json(
            "POST",
            "/datasets",
            json={
                "name": name,
                "rows": rows,
                "description": description,
                "append": append,
                "keep_duplicates": keep_duplicates,
            },
        )

    def import_file(
        self,
        path,
        name: Optional[str] = None,
        *,
        format: str = "auto",
        append: bool = False,
        keep_duplicates: bool = False,
    ) -> dict:
        """Import a pair file in any format the Import page reads (TSV, CSV, JSONL, Excel, the corpora's own)."""
        with open(path, "rb") as fh:
            data = {"format": format, "append": str(append).lower(), "keep_duplicates": str(keep_duplicates).lower()}
            if name:
                data["name"] = name
            return self._json("POST", "/datasets/upload", files={"file": (os.path.basename(str(path)), fh)}, data=data)

    def pairs(self, dataset_id: int, *, page_size: int = 1000, **search) -> pd.DataFrame:
        """Every pair of the dataset that matches ``search`` (text, ref, gold, state, run...: the Pairs page's)."""
        return pd.DataFrame(list(self._pages(f"/datasets/{int(dataset_id)}/pairs", search, page_size)))

    # ------------------------------------------------------------------ labels out
    def export(
        self,
        *,
        campaign: Optional[int] = None,
        datasets: Optional[Sequence[int]] = None,
        pairs: Literal["all", "labelled", "adjudicated"] = "all",
        layout: Literal["wide", "long"] = "wide",
        aggregation: Optional[str] = None,
        include_training: bool = False,
    ) -> pd.DataFrame:
        """The Export page's table (Parquet on the wire, column types kept)."""
        params: dict[str, Any] = {
            "pairs": pairs,
            "layout": layout,
            "format": "parquet",
            "include_training": str(include_training).lower(),
        }
        if campaign is not None:
            params["campaign"] = int(campaign)
        if datasets:
            params["datasets"] = ",".join(str(int(d)) for d in datasets)
        if aggregation:
            params["aggregation"] = aggregation
        return pd.read_parquet(io.BytesIO(self._request("GET", "/export", params=params).content))

    def final_labels(
        self,
        *,
        campaign: Optional[int] = None,
        datasets: Optional[Sequence[int]] = None,
        pairs: Literal["all", "labelled", "adjudicated"] = "all",
        aggregation: Optional[str] = None,
        as_: Literal["pandas", "records"] = "pandas",
    ):
        """Each pair's final level and where it came from (final_source: adjudicated, gold, a model method,
        majority, none), as the export decides it."""
        frame = self.export(campaign=campaign, datasets=datasets, pairs=pairs, aggregation=aggregation)
        frame = frame[[c for c in FINAL_COLUMNS if c in frame.columns]]
        return frame if as_ == "pandas" else frame.to_dict(orient="records")

    def publish(self, path, *, licence: str, **choice) -> str:
        """The dataset folder as a .zip written to ``path`` (dataset_ids, campaign_id, title, pairs, aggregation)."""
        answer = self._request("POST", "/publish", json={"licence": licence, **choice}, timeout=None)
        with open(path, "wb") as fh:
            fh.write(answer.content)
        return str(path)

    # ------------------------------------------------------------------ review
    def review(self, pair_id: int) -> dict:
        """What Review shows of a pair: labels, scores, majority, the decision in force, its ``revision``."""
        return self._json("GET", f"/pairs/{int(pair_id)}/review")

    def decide(self, pair_id: int, level: Optional[int], *, revision: int, note: str = "") -> int:
        """A reviewer's final level (0-3; None withdraws the decision), after the ``revision`` read with review();
        LabError 409 when another reviewer decided since. Returns the new revision."""
        return self._json(
            "PUT", f"/pairs/{int(pair_id)}/final", json={"level": level, "note": note, "revision": int(revision)}
        )["revision"]

    # ------------------------------------------------------------------ campaigns, webhooks
    def campaign(self, campaign_id: int) -> "Campaign":
        return Campaign(self, int(campaign_id))

    def webhooks(self) -> list[dict]:
        return self._json("GET", "/webhooks")

    def add_webhook(self, url: str, events: Sequence[str]) -> dict:
        """Register ``url`` for ``events``; the answer's ``secret`` (shown once) checks each delivery
        (pluie_core.webhooks.verify)."""
        return self._json("POST", "/webhooks", json={"url": url, "events": list(events)})


class Runs:
    def __init__(self, lab: Lab):
        self._lab = lab

    def list(self) -> list[dict]:
        return self._lab._json("GET", "/runs")

    def create(
        self,
        *,
        model: str,
        kind: str = PLUIE,
        dataset_ids: Sequence[int] = (),
        name: Optional[str] = None,
        template: Optional[str] = None,
        answers: Optional[Sequence[str]] = None,
        direction: str = "forward",
        options: Optional[dict] = None,
        check_model: bool = True,
    ) -> dict:
        """A new score run (checked first, as the New run form does); the server's worker scores it."""
        return self._lab._json(
            "POST",
            "/runs",
            json={
                "model": model,
                "kind": kind,
                "dataset_ids": list(dataset_ids),
                "name": name,
                "template": template,
                "answers": list(answers) if answers else None,
                "direction": direction,
                "options": options,
                "check_model": check_model,
            },
        )

    def get(self, run_id: int) -> dict:
        return self._lab._json("GET", f"/runs/{int(run_id)}")

    def pause(self, run_id: int) -> dict:
        return self._lab._json("POST", f"/runs/{int(run_id)}/pause")

    def resume(self, run_id: int) -> dict:
        return self._lab._json("POST", f"/runs/{int(run_id)}/resume")

    def cancel(self, run_id: int) -> dict:
        return self._lab._json("POST", f"/runs/{int(run_id)}/cancel")

    def wait(self, run_id: int, *, timeout: float = 3600.0, every: float = 2.0) -> dict:
        """The run once it has scored (or failed on) every pair it queued, or failed; LabError after ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            run = self.get(run_id)
            if run["status"] in ("failed", "cancelled") or run["up_to_date"]:
                return run
            if time.monotonic() > deadline:
                raise LabError(
                    0, f"The run {run_id} was not done after {timeout:.0f} s ({run['done']} of {run['total']})."
                )
            time.sleep(every)

    def scores(self, run_id: int, *, page_size: int = 5000) -> pd.DataFrame:
        return pd.DataFrame(
            list(self._lab._pages(f"/runs/{int(run_id)}/scores", {}, page_size)),
            columns=["pair_id", "dataset_id", "external_id", "score", "scored_at"],
        )


class Campaigns:
    def __init__(self, lab: Lab):
        self._lab = lab

    def list(self) -> list[dict]:
        return self._lab._json("GET", "/campaigns")

    def create(self, name: str, dataset_ids: Sequence[int], *, annotators: Sequence[str] = (), **settings) -> dict:
        """A campaign (quota, overlap, overlap_max, n_training, guidelines, pair_order, seed, selection), with a
        personal link for each name in ``annotators`` (in the answer, shown once)."""
        return self._lab._json(
            "POST",
            "/campaigns",
            json={"name": name, "dataset_ids": list(dataset_ids), "annotators": list(annotators), **settings},
        )


class Campaign:
    def __init__(self, lab: Lab, campaign_id: int):
        self._lab = lab
        self.id = campaign_id

    def progress(self) -> dict:
        return self._lab._json("GET", f"/campaigns/{self.id}")

    def annotators(self) -> pd.DataFrame:
        """Per annotator: progress, κ, reliability, gold accuracy, flags (the Live campaign page's table)."""
        return pd.DataFrame(self._lab._json("GET", f"/campaigns/{self.id}/annotators"))

    def final_labels(self, **choice) -> pd.DataFrame:
        return self._lab.final_labels(campaign=self.id, **choice)
