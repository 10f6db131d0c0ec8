"""The API's routes (api.app mounts them under /api/v1): what the pages do, for scripts.

Each route reads or writes through the same db function the page uses, inside ``acting(actor)``: the role
check, the validation, the sentences and the all-or-nothing transaction are the page's own. Lists that can
be long page by a cursor (the last id read: ``?after=``), never by an offset, and say where the next page
starts (``next_after``, null at the end). Exports stream, a chunk of pairs at a time.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import math
import shutil
import tempfile
from typing import Any, Literal, Optional

import pandas as pd
from fastapi import APIRouter, Depends, File, Form, Query, Request, UploadFile
from fastapi.responses import Response, StreamingResponse
from pydantic import Field

from api import PREFIX as api_prefix
from api.base import ApiError, Body, acting, authenticate, engine
from db import access
from db.campaigns import campaign_overview, create_campaign, get_campaign, list_campaigns
from db.datasets import ImportResult, datasets_overview, import_pair_chunks, import_pairs
from db.pairs import PairSearch, pairs_after, run_scores_after
from db.publish import dataset_zip, export_chunks, publish_dataset
from db.quality import campaign_live
from db.runs import cancel_run, create_run, pause_run, resume_run, retry_run, runs_progress
from lab.places import data_dir
from lab.roles import Actor
from pluie_core.export_format import STREAM_FORMATS, stream_table
from pluie_core.io import MAX_BYTES, large_file, load_pairs, read_pair_chunks
from pluie_core.run_kinds import PLUIE

router = APIRouter()
MOST_PER_PAGE = 10_000
Authenticated = Depends(authenticate)


def _plain(value: Any) -> Any:
    """A value as JSON holds it: numbers, text, None for missing, times as ISO 8601."""
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if hasattr(value, "item"):  # numpy scalars
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, (dt.datetime, dt.date, pd.Timestamp)):
        return value.isoformat()
    return value


def _records(frame: pd.DataFrame) -> list[dict]:
    columns = [str(c) for c in frame.columns]
    return [{c: _plain(v) for c, v in zip(columns, row)} for row in frame.itertuples(index=False, name=None)]


def _page(rows: list[dict], key: str, limit: int) -> dict:
    return {"items": rows, "next_after": rows[-1][key] if len(rows) == limit else None}


# ------------------------------------------------------------------------------------------- who


@router.get("/me", tags=["accounts"], summary="The account this token acts for")
def me(actor: Actor = Authenticated) -> dict:
    return {"account_id": actor.account_id, "name": actor.name, "role": actor.role}


# ------------------------------------------------------------------------------------------- datasets


def _dataset_rows() -> list[dict]:
    overview = datasets_overview(engine())
    return _records(overview)


@router.get("/datasets", tags=["datasets"], summary="Every dataset, with its counts (the home page's table)")
def list_datasets(actor: Actor = Authenticated) -> list[dict]:
    with acting(actor):
        access.require("read")
        return _dataset_rows()


def _dataset(dataset_id: int) -> dict:
    for row in _dataset_rows():
        if int(row.get("id", -1)) == int(dataset_id):
            return row
    raise ApiError(404, f"There is no dataset {dataset_id}.")


@router.get("/datasets/{dataset_id}", tags=["datasets"], summary="One dataset, with its counts")
def get_dataset(dataset_id: int, actor: Actor = Authenticated) -> dict:
    with acting(actor):
        access.require("read")
        return _dataset(dataset_id)


class NewDataset(Body):
    name: str = Field(description="The dataset's name (as on the Import page)")
    rows: list[dict[str, Any]] = Field(
        description="One object per pair: source, hypothesis, and optionally label, "
        "id, annotator columns and any metadata, as a JSONL file's lines"
    )
    description: str = ""
    append: bool = Field(False, description="Add to the existing dataset of this name")
    keep_duplicates: bool = Field(False, description="Keep exact repeats as pairs of their own")
    annotator_scale: Literal["raw", "levels"] = "raw"


def _result(result: ImportResult) -> dict:
    return {
        "dataset_id": result.dataset_id,
        "name": result.dataset_name,
        "pairs": result.n_pairs,
        "skipped_duplicates": result.n_skipped_duplicates,
        "kept_duplicates": result.n_kept_duplicates,
        "labels": result.n_labels,
        "annotators": list(result.annotators),
        "queued_scores": result.n_queued,
    }


def _too_large(size: int) -> None:
    if size > MAX_BYTES:
        raise ApiError(
            413,
            f"The pairs are {size / 1e6:.1f} MB; the import takes at most {MAX_BYTES / 1e6:.0f} MB "
            "at once: send them in parts (append: true).",
        )


def _import(
    data: bytes,
    file_name: str,
    name: str,
    *,
    format: str = "auto",
    description: str = "",
    append: bool = False,
    keep_duplicates: bool = False,
    annotator_scale: str = "raw",
) -> dict:
    """A file's bytes imported as the Import page does: read with the same reader (all or nothing, every row
    checked), a large CSV/TSV/JSONL written in chunks."""
    buffer = io.BytesIO(data)
    buffer.name = file_name
    if large_file(data):
        chunks = read_pair_chunks(buffer, format=format)
        result = import_pair_chunks(
            engine(),
            name,
            chunks,
            description=description,
            annotator_scale=annotator_scale,
            append=append,
            keep_duplicates=keep_duplicates,
            total=chunks.n_rows,
            file_name=file_name,
        )
    else:
        pairs = load_pairs(buffer, format=format, keep_duplicates=keep_duplicates)
        result = import_pairs(
            engine(),
            name,
            pairs,
            description=description,
            annotator_scale=annotator_scale,
            append=append,
            keep_duplicates=keep_duplicates,
        )
    return _result(result)


@router.post(
    "/datasets",
    tags=["datasets"],
    status_code=201,
    summary="Import pairs given as JSON rows (the Import page's checks; all or nothing)",
)
def create_dataset(body: NewDataset, request: Request, actor: Actor = Authenticated) -> dict:
    _too_large(int(request.headers.get("content-length") or 0))
    if not body.rows:
        raise ApiError(400, "Send at least one row (source and hypothesis).")
    for number, row in enumerate(body.rows, start=1):  # a file's NULs are removed as it is read; JSON's are meant
        for field, value in row.items():
            if "\x00" in str(field) or (isinstance(value, str) and "\x00" in value):
                raise ApiError(
                    400,
                    f"Row {number}: {str(field).replace(chr(0), '')!r} holds a NUL character "
                    "(\\u0000), which no store keeps: remove it.",
                )
    data = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in body.rows).encode("utf-8")
    with acting(actor):
        access.require("organise")
        return _import(
            data,
            "rows.jsonl",
            body.name,
            format="jsonl",
            description=body.description,
            append=body.append,
            keep_duplicates=body.keep_duplicates,
            annotator_scale=body.annotator_scale,
        )


@router.post(
    "/datasets/upload",
    tags=["datasets"],
    status_code=201,
    summary="Import a pair file in any format the Import page reads (multipart upload)",
)
def upload_dataset(
    file: UploadFile = File(...),
    name: Optional[str] = Form(None),
    format: str = Form("auto"),
    description: str = Form(""),
    append: bool = Form(False),
    keep_duplicates: bool = Form(False),
    annotator_scale: Literal["raw", "levels"] = Form("raw"),
    actor: Actor = Authenticated,
) -> dict:
    data = file.file.read(MAX_BYTES + 1)
    _too_large(len(data))
    file_name = file.filename or "upload"
    with acting(actor):
        access.require("organise")
        return _import(
            data,
            file_name,
            name or file_name.rsplit(".", 1)[0],
            format=format,
            description=description,
            append=append,
            keep_duplicates=keep_duplicates,
            annotator_scale=annotator_scale,
        )


@router.get(
    "/datasets/{dataset_id}/pairs",
    tags=["datasets"],
    summary="The dataset's pairs, searched as on the Pairs page, a page at a time (cursor: after)",
)
def list_pairs(
    dataset_id: int,
    after: int = 0,
    limit: int = Query(500, ge=1, le=MOST_PER_PAGE),
    text: str = "",
    ref: str = "",
    gold: Literal["any", "with", "without"] = "any",
    gold_min: Optional[float] = None,
    gold_max: Optional[float] = None,
    state: Literal["any", "unlabelled", "labelled", "disagreement", "adjudicated"] = "any",
    run: Optional[int] = None,
    score_min: Optional[float] = None,
    score_max: Optional[float] = None,
    actor: Actor = Authenticated,
) -> dict:
    search = PairSearch(
        text=text,
        pair_ref=ref,
        gold=gold,
        gold_min=gold_min,
        gold_max=gold_max,
        state=state,
        run_id=run,
        score_min=score_min,
        score_max=score_max,
    )
    with acting(actor):
        access.require("read")
        _dataset(dataset_id)
        rows = pairs_after(engine(), dataset_id, search, after=after, limit=limit)
    return _page(_records(rows.rename(columns={"gold check in": "gold_check_in"})), "pair_id", limit)


# ------------------------------------------------------------------------------------------- score runs


def _run(progress) -> dict:
    return {
        "id": progress.id,
        "name": progress.name,
        "kind": progress.kind,
        "model": progress.model,
        "template": progress.template,
        "direction": progress.direction,
        "status": progress.status,
        "error": progress.error,
        "total": progress.total,
        "done": progress.done,
        "failed": progress.failed,
        "pairs_per_second": progress.pairs_per_second,
        "seconds_left": progress.seconds_left,
        "up_to_date": progress.up_to_date,
        "created_by": progress.created_by,
        "options": {k: v for k, v in (progress.options or {}).items() if "key" not in k.lower() or k == "api_key_env"},
    }


def _find_run(run_id: int) -> dict:
    for progress in runs_progress(engine()):
        if progress.id == int(run_id):
            return _run(progress)
    raise ApiError(404, f"There is no run {run_id}.")


@router.get("/runs", tags=["runs"], summary="Every score run with its progress, newest first")
def list_runs(actor: Actor = Authenticated) -> list[dict]:
    with acting(actor):
        access.require("read")
        return [_run(p) for p in runs_progress(engine())]


class NewRun(Body):
    model: str = Field(
        description="A model folder or name (PLUIE, LLM judges), a baseline's key, or the name a "
        "server serves (with options.endpoint)"
    )
    kind: str = PLUIE
    name: Optional[str] = None
    template: Optional[str] = None
    answers: Optional[list[str]] = None
    direction: str = "forward"
    dataset_ids: list[int] = Field(default_factory=list, description="The datasets it scores (none: every one)")
    options: Optional[dict[str, Any]] = None
    check_model: bool = Field(True, description="Check the model (or server) first; no run is made when it fails")


@router.post(
    "/runs", tags=["runs"], status_code=201, summary="Create a score run (as the New run form); the worker scores it"
)
def new_run(body: NewRun, actor: Actor = Authenticated) -> dict:
    with acting(actor):
        run_id = create_run(
            engine(),
            model=body.model,
            kind=body.kind,
            name=body.name,
            template=body.template,
            answers=body.answers,
            direction=body.direction,
            dataset_ids=body.dataset_ids,
            options=body.options,
            check_model=body.check_model,
        )
        return _find_run(run_id)


@router.get("/runs/{run_id}", tags=["runs"], summary="A run's progress")
def get_run(run_id: int, actor: Actor = Authenticated) -> dict:
    with acting(actor):
        access.require("read")
        return _find_run(run_id)


ACTS = {"pause": pause_run, "resume": resume_run, "cancel": cancel_run, "retry": retry_run}


@router.post("/runs/{run_id}/{act}", tags=["runs"], summary="Pause, resume, cancel or retry a run")
def act_on_run(run_id: int, act: Literal["pause", "resume", "cancel", "retry"], actor: Actor = Authenticated) -> dict:
    with acting(actor):
        _find_run(run_id)
        ACTS[act](engine(), run_id)
        return _find_run(run_id)


@router.get(
    "/runs/{run_id}/scores", tags=["runs"], summary="A run's scores, a page at a time (cursor: after a pair id)"
)
def list_scores(
    run_id: int, after: int = 0, limit: int = Query(1000, ge=1, le=MOST_PER_PAGE), actor: Actor = Authenticated
) -> dict:
    with acting(actor):
        access.require("read")
        _find_run(run_id)
        rows = run_scores_after(engine(), run_id, after=after, limit=limit)
    return _page(_records(rows), "pair_id", limit)


# ------------------------------------------------------------------------------------------- campaigns


def _campaign(campaign) -> dict:
    return {
        "id": campaign.id,
        "name": campaign.name,
        "quota": campaign.quota,
        "overlap": campaign.overlap,
        "overlap_max": campaign.overlap_max,
        "n_training": campaign.n_training,
        "pair_order": campaign.pair_order,
        "aggregation": campaign.aggregation,
        "created_at": _plain(campaign.created_at),
    }


def _find_campaign(campaign_id: int):
    try:
        return get_campaign(engine(), int(campaign_id))
    except ValueError:
        raise ApiError(404, f"There is no campaign {campaign_id}.") from None


@router.get("/campaigns", tags=["campaigns"], summary="Every campaign")
def campaigns(actor: Actor = Authenticated) -> list[dict]:
    with acting(actor):
        access.require("read")
        return [_campaign(c) for c in list_campaigns(engine())]


class NewCampaign(Body):
    name: str
    dataset_ids: list[int]
    quota: int = 50
    overlap: int = 1
    overlap_max: Optional[int] = None
    n_training: int = 5
    guidelines: Optional[str] = None
    pair_order: str = "random"
    seed: int = 0
    selection: Optional[dict[str, Any]] = None
    annotators: list[str] = Field(default_factory=list, description="Names to make personal links for")


@router.post(
    "/campaigns",
    tags=["campaigns"],
    status_code=201,
    summary="Create a campaign (as the Campaigns page), with personal links for the names given",
)
def new_campaign(body: NewCampaign, request: Request, actor: Actor = Authenticated) -> dict:
    from db.annotators import create_annotators

    with acting(actor):
        campaign_id = create_campaign(
            engine(),
            body.name,
            body.dataset_ids,
            quota=body.quota,
            overlap=body.overlap,
            overlap_max=body.overlap_max,
            n_training=body.n_training,
            guidelines=body.guidelines,
            pair_order=body.pair_order,
            seed=body.seed,
            selection=body.selection,
        )
        links = create_annotators(engine(), campaign_id, body.annotators) if body.annotators else []
        out = _campaign(_find_campaign(campaign_id))
    app_url = str(request.url).split(api_prefix, 1)[0]  # the app's address, as the caller reached it
    out["annotators"] = [
        {"id": aid, "name": name, "token": token, "link": f"{app_url}/?token={token}"} for aid, name, token in links
    ]
    return out


@router.get("/campaigns/{campaign_id}", tags=["campaigns"], summary="A campaign and its progress")
def campaign_progress(campaign_id: int, actor: Actor = Authenticated) -> dict:
    with acting(actor):
        access.require("read")
        out = _campaign(_find_campaign(campaign_id))
        out["progress"] = {
            key.replace(" ", "_"): int(value) for key, value in campaign_overview(engine(), campaign_id).items()
        }
        live = campaign_live(engine(), campaign_id)
    out["figures"] = {k: _plain(v) for k, v in live.figures.items() if not isinstance(v, (dict, list))}
    return out


@router.get(
    "/campaigns/{campaign_id}/annotators",
    tags=["campaigns"],
    summary="Per annotator: progress, reliability, κ, gold accuracy and flags (the Live campaign page's table)",
)
def campaign_annotators(campaign_id: int, actor: Actor = Authenticated) -> list[dict]:
    with acting(actor):
        access.require("read")
        _find_campaign(campaign_id)
        live = campaign_live(engine(), campaign_id)
    return _records(live.annotators.reset_index(drop=live.annotators.index.name is None))


# ------------------------------------------------------------------------------------------- labels out


@router.get(
    "/export",
    tags=["labels"],
    summary="The Export page's table, streamed: raw labels, majority, aggregated and final labels (with "
    "final_source), wide or long, as CSV, JSONL or Parquet",
)
def export(
    datasets: Optional[str] = Query(None, description="Dataset ids, comma-separated (none: every dataset)"),
    campaign: Optional[int] = None,
    pairs: Literal["all", "labelled", "adjudicated"] = "all",
    layout: Literal["wide", "long"] = "wide",
    format: Literal["csv", "jsonl", "parquet"] = "csv",
    aggregation: Optional[str] = None,
    confidence: Optional[float] = None,
    min_labels: Optional[int] = None,
    include_training: bool = False,
    actor: Actor = Authenticated,
) -> StreamingResponse:
    try:
        ids = None if not datasets else [int(d) for d in datasets.split(",") if d.strip()]
    except ValueError:
        raise ApiError(400, "datasets: give dataset ids separated by commas (1,2,3).") from None
    choice: dict[str, Any] = {
        "campaign_id": campaign,
        "pairs": pairs,
        "layout": layout,
        "include_training": include_training,
        "aggregation": aggregation or None,
    }
    if confidence is not None:
        choice["confidence"] = confidence
    if min_labels is not None:
        choice["min_labels"] = min_labels
    with acting(actor):
        access.require("organise")  # as the Export page: exports are an organiser's
        if campaign is not None:
            _find_campaign(campaign)
        chunks = export_chunks(engine(), ids, **choice)
    stem = "pluie_lab_export" + ("_labels" if layout == "long" else "")
    return StreamingResponse(
        stream_table(chunks, format),
        media_type=STREAM_FORMATS[format],
        headers={"Content-Disposition": f'attachment; filename="{stem}.{format}"'},
    )


class Publish(Body):
    licence: str = Field(description="A Hugging Face licence identifier: cc-by-4.0, mit, other...")
    dataset_ids: Optional[list[int]] = None
    campaign_id: Optional[int] = None
    title: Optional[str] = None
    pairs: Literal["all", "labelled", "adjudicated"] = "all"
    aggregation: Optional[str] = None
    include_training: bool = False


@router.post(
    "/publish",
    tags=["labels"],
    summary="The dataset folder (card, Parquet, Arrow copy) as a .zip, as the Export page publishes it",
)
def publish(body: Publish, actor: Actor = Authenticated) -> Response:
    parent = data_dir() / "api-publish"
    parent.mkdir(parents=True, exist_ok=True)
    work = tempfile.mkdtemp(prefix="publish-", dir=parent)
    try:
        folder = f"{work}/pluie_lab_dataset"
        with acting(actor):
            try:
                publish_dataset(
                    engine(),
                    folder,
                    body.dataset_ids,
                    licence=body.licence,
                    title=body.title,
                    campaign_id=body.campaign_id,
                    pairs=body.pairs,
                    aggregation=body.aggregation,
                    include_training=body.include_training,
                )
            except ValueError as exc:  # the server's own work folder is nobody's business but its owner's
                raise ApiError(
                    400,
                    str(exc)
                    .replace(folder, "the dataset folder")
                    .replace(work, "the work folder")
                    .replace(str(parent), "the server's data folder"),
                ) from None
        data = dataset_zip(folder)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return Response(
        data,
        media_type="application/zip",
        headers={"Content-Disposition": 'attachment; filename="pluie_lab_dataset.zip"'},
    )


# ------------------------------------------------------------------------------------------- review


def _plain_tree(value: Any) -> Any:
    """A review item's values as JSON holds them: frames as lists of records, mappings and lists walked."""
    if isinstance(value, pd.DataFrame):
        return _records(value)
    if isinstance(value, pd.Series):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, dict):
        return {str(k): _plain_tree(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain_tree(v) for v in value]
    return _plain(value)


@router.get(
    "/pairs/{pair_id}/review",
    tags=["review"],
    summary="What Review shows of a pair: its labels, scores, majority, the decision in force and its revision",
)
def review_pair(pair_id: int, actor: Actor = Authenticated) -> dict:
    from db.review import review_item

    with acting(actor):
        access.require("read")
        item = review_item(engine(), pair_id)
    if item is None:
        raise ApiError(404, f"There is no pair {pair_id}.")
    return _plain_tree(item)


class Decision(Body):
    level: Optional[int] = Field(
        description="The final level, 0-3 (Very different … Same meaning); null withdraws the decision in force"
    )
    note: str = ""
    revision: int = Field(
        description="The revision your decision follows (the review's `revision`; 0 for none): "
        "another reviewer's decision since is a 409, and nothing is written"
    )


@router.put(
    "/pairs/{pair_id}/final",
    tags=["review"],
    summary="Set (or withdraw) a pair's final level, as Review does; 409 when someone decided since",
)
def decide(pair_id: int, body: Decision, actor: Actor = Authenticated) -> dict:
    from db.review import adjudicate, review_item

    with acting(actor):
        if review_item(engine(), pair_id) is None:
            raise ApiError(404, f"There is no pair {pair_id}.")
        revision = adjudicate(engine(), pair_id, body.level, actor.name, body.note, seen_revision=body.revision)
    return {"pair_id": pair_id, "level": body.level, "revision": revision}
