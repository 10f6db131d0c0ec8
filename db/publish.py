"""A dataset folder ready to publish, written from the store in chunks so that a million pairs
export in bounded memory:

    folder/
      README.md                          the dataset card (Hugging Face YAML header), pluie_core.dataset_card
      data/train-00000-of-00001.parquet  the rows: db.export.export_frame's columns, one row group per chunk
      dataset_dict.json, train/          the same rows as Arrow, what datasets.save_to_disk writes

`datasets.load_dataset(folder)` reads the Parquet file through the card's `configs`, and
`datasets.load_from_disk(folder)` the Arrow copy (a DatasetDict with one split, train). Rows go
out chunk by chunk (``chunk_size`` pairs of one dataset at a time, through export_frame) into a
pyarrow ParquetWriter and, batch for batch, an Arrow stream that `datasets` maps into memory and
writes out as its shards. What the card needs (counts per level, labels per pair,
final-label sources) is gathered on the way. The folder is written under a temporary name and
renamed when complete: an error leaves no folder behind. A publish killed before it could clean up
(kill -9, a power cut) leaves its hidden folder, named after its writer (host, process), which the next
publish into the same parent folder removes once that writer is gone (remove_leftovers).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import socket
import tempfile
import time
import uuid
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Optional

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from sqlalchemy import Engine, and_, case, func, select

from db import access
from db.engine import read_session, write_session
from db.export import (
    AGGREGATION_COLUMNS,
    ANNOTATOR_PREFIX,
    FINAL_COLUMNS,
    PAIR_SCOPES,
    SCORE_PREFIX,
    VOICE_COLUMNS,
    _annotator_names,
    export_frame,
    export_labels,
    gold_check_answers,
    label_conditions,
    pair_aggregation,
    pair_conditions,
)
from db.limits import clean_name
from db.models import (
    Annotator,
    Assignment,
    Campaign,
    CampaignDataset,
    CampaignPair,
    Dataset,
    GoldPair,
    Label,
    Pair,
    Score,
    ScoreRun,
    TrainingPair,
    utcnow,
)
from db.webhooks import emit
from lab.places import confined, outside_sentence, published_dir, typed_folder
from pluie_core.aggregation import DEFAULT_CONFIDENCE, DEFAULT_MIN_LABELS, check_thresholds, median_labels
from pluie_core.dataset_card import agreement_figures, check_licence, count_patterns, dataset_card
from pluie_core.pair_selection import describe_selection
from pluie_core.quality import balance_text, gold_check_count, key_origins

__all__ = [
    "PublishError",
    "PublishResult",
    "publish_dataset",
    "DATA_FILE",
    "ZIP_DOWNLOAD_LIMIT",
    "dataset_zip",
    "folder_bytes",
    "remove_leftovers",
    "export_chunks",
]

DATA_FILE = "data/train-00000-of-00001.parquet"
ROWS_STREAM = ".rows.arrow"  # the rows as an Arrow stream while the folder is written, for the Arrow copy
DEFAULT_CHUNK = 20_000  # pairs per chunk: a few tens of MB of rows, and under every driver's bound-parameter limit
# the largest folder (bytes of its files) the Export page offers as one .zip download: a browser download
# is sent from the server's memory, whole (Streamlit's download button holds bytes)
ZIP_DOWNLOAD_LIMIT = 1 << 30
# A folder being written: .<name>.partial-<host>-<pid>-<tag> (host: a hash of the writer's host name); an
# older release wrote .<name>.partial-<tag>. A leftover is removed when its writer is not alive on this host,
# or when none of its files changed for LEFTOVER_IDLE seconds (a writer on another host, a pid reused, or an
# older release's): a live publish writes its files chunk after chunk, far more often than that.
PARTIAL = re.compile(r"^\..+\.partial-(?:(?P<host>[0-9a-f]{8})-(?P<pid>\d+)-)?[0-9a-f]{8}$")
LEFTOVER_IDLE = 24 * 3600


class PublishError(ValueError):
    """Something the organiser asked for that cannot be done; the message says why, in a sentence."""


@dataclass(frozen=True)
class PublishResult:
    folder: Path
    n_pairs: int
    n_chunks: int
    columns: list[str]
    card: str


def _scope(session, dataset_ids: Optional[list[int]], conditions: list) -> list[tuple]:
    """(id, name, description, pairs in scope, imported by) of the datasets; ``conditions``:
    export.pair_conditions."""
    query = (
        select(Dataset.id, Dataset.name, Dataset.description, func.count(Pair.id), Dataset.created_by)
        .outerjoin(Pair, and_(Pair.dataset_id == Dataset.id, *conditions))
        .where(Dataset.import_state.is_(None))
        .group_by(Dataset.id)
        .order_by(Dataset.id)
    )
    if dataset_ids is not None:
        query = query.where(Dataset.id.in_(dataset_ids))
    return session.execute(query).all()


def _campaign_facts(session, campaign_id: int) -> dict:
    """What the card says of the campaign an export is restricted to: its datasets, its selection
    (pluie_core.pair_selection: range, filters, sample size and seed), its queue and training trial,
    overlap, quota, and its gold checks (gold pairs, the share of checks, the checks planned per annotator
    and those served to each annotator who was served a pair after the training trial)."""
    campaign = session.get(Campaign, int(campaign_id))
    if campaign is None:
        raise PublishError("This campaign does not exist (any more): choose another.")
    datasets = session.scalars(
        select(Dataset.name)
        .join(CampaignDataset, CampaignDataset.dataset_id == Dataset.id)
        .where(CampaignDataset.campaign_id == campaign.id)
        .order_by(Dataset.name)
    ).all()
    selection = dict(campaign.selection or {})
    run = session.get(ScoreRun, selection["score_run"]) if selection.get("score_run") is not None else None

    def count(model):
        return int(session.scalar(select(func.count()).select_from(model).where(model.campaign_id == campaign.id)))

    keys = pd.DataFrame(
        session.execute(
            select(GoldPair.level, GoldPair.binary_label, GoldPair.accept_adjacent, GoldPair.derivation).where(
                GoldPair.campaign_id == campaign.id
            )
        ).all(),
        columns=["level", "binary_label", "accept_adjacent", "derivation"],
    )
    # the checks served to each annotator who got a pair after the training trial
    served = session.execute(
        select(Assignment.annotator_id, func.coalesce(func.sum(case((Assignment.is_gold, 1), else_=0)), 0))
        .where(Assignment.campaign_id == campaign.id, Assignment.position >= count(TrainingPair))
        .group_by(Assignment.annotator_id)
        .order_by(Assignment.annotator_id)
    ).all()
    return {
        "name": campaign.name,
        "datasets": list(datasets),
        "selection": selection,
        "selection_text": describe_selection(campaign.selection, run.name if run else None),
        "sample": selection.get("sample"),
        "seed": campaign.seed,
        "quota": campaign.quota,
        "overlap": campaign.overlap,
        "overlap_max": campaign.overlap_max,
        "confidence": campaign.confidence,
        "n_training": count(TrainingPair),
        "n_queue": count(CampaignPair),
        "n_gold_pairs": count(GoldPair),
        "gold_rate": float(campaign.gold_rate),
        "checks_per_annotator": gold_check_count(campaign.quota, campaign.gold_rate, count(GoldPair)),
        "checks_served": [int(n) for _, n in served],
        "gold_origins": key_origins(keys["derivation"]),
        "gold_balance": balance_text(keys, campaign.gold_min_accuracy) if len(keys) else "",
    }


def _annotator_columns(session, conditions: list, labels: list, names: dict[int, str]):
    """[(column, arrow type, gives five-level labels)] of the annotators with labels in scope
    (``conditions`` on the pairs, ``labels`` on the labels), sorted as export_frame sorts them; plus
    the English levels of those annotators."""
    query = (
        select(
            Label.annotator_id,
            func.max(case((Label.level.is_not(None), 1), else_=0)),
            func.max(case(((Label.level.is_(None)) & (Label.value != func.round(Label.value)), 1), else_=0)),
            Annotator.english_level,
        )
        .join(Pair, Pair.id == Label.pair_id)
        .join(Annotator, Annotator.id == Label.annotator_id)
        .where(*conditions, *labels)
        .group_by(Label.annotator_id, Annotator.english_level)
    )
    rows = session.execute(query).all()
    columns = sorted(
        (ANNOTATOR_PREFIX + names[aid], pa.float64() if fractional else pa.int64(), bool(levels))
        for aid, levels, fractional, _ in rows
    )
    english = pd.Series([row[3] or "not given" for row in rows], dtype=object).value_counts().to_dict()
    return columns, english


def _runs(session, conditions: list) -> list[dict]:
    rows = session.execute(
        select(
            ScoreRun.name,
            ScoreRun.kind,
            ScoreRun.model,
            ScoreRun.template,
            ScoreRun.direction,
            ScoreRun.answers,
            ScoreRun.higher_is_similar,
            ScoreRun.status,
            func.count(Score.id),
            ScoreRun.created_by,
        )
        .join(Score, Score.run_id == ScoreRun.id)
        .join(Pair, Pair.id == Score.pair_id)
        .where(*conditions)
        .group_by(ScoreRun.id)
        .order_by(ScoreRun.name)
    ).all()
    keys = [
        "name",
        "kind",
        "model",
        "template",
        "direction",
        "answers",
        "higher_is_similar",
        "status",
        "n_scores",
        "created_by",
    ]
    return [dict(zip(keys, row)) for row in rows]


def _schema(annotators, runs, include_training: bool, aggregation: bool = False) -> pa.Schema:
    """The Arrow schema of export_frame's columns, fixed before the first chunk is read."""
    text, whole, real = pa.string(), pa.int64(), pa.float64()
    fields = [
        ("dataset", text),
        ("pair_id", whole),
        ("external_id", text),
        ("source", text),
        ("hypothesis", text),
        ("label", real),
    ]
    fields += [(column, kind) for column, kind, _ in annotators]
    fields += [("n_labels", whole), ("majority_level", whole), ("majority_label", text), ("binary_label", whole)]
    if include_training:
        fields.append(("n_training_labels", whole))
    if aggregation:
        fields += list(zip(AGGREGATION_COLUMNS, [text, whole, text, real, real]))
    final_types = {
        "final_level": whole,
        "final_label": text,
        "final_binary": whole,
        "final_source": text,
        "adjudicated_by": text,
        "adjudicated_at": pa.timestamp("us"),
        "adjudication_note": text,
    }
    fields += [(column, final_types[column]) for column in FINAL_COLUMNS]
    voice_types = {"n_flags": whole, "flagged_by": text, "comments": text}
    fields += [(column, voice_types[column]) for column in VOICE_COLUMNS]
    fields += [(SCORE_PREFIX + run["name"], real) for run in runs]
    return pa.schema(fields)


def _conform(chunk: pd.DataFrame, schema: pa.Schema) -> pd.DataFrame:
    """A chunk of export_frame with the schema's columns and pandas types (Int64 for whole numbers)."""
    chunk = chunk.reindex(columns=schema.names)
    for field in schema:
        if pa.types.is_integer(field.type):
            chunk[field.name] = pd.to_numeric(chunk[field.name], errors="coerce").round().astype("Int64")
        elif pa.types.is_floating(field.type):
            chunk[field.name] = pd.to_numeric(chunk[field.name], errors="coerce").astype(float)
        elif pa.types.is_timestamp(field.type):
            chunk[field.name] = pd.to_datetime(chunk[field.name])
        else:
            chunk[field.name] = chunk[field.name].astype(object).where(chunk[field.name].notna(), None)
    return chunk


def _pair_id_chunks(session, dataset_id: int, chunk_size: int, conditions: list):
    """(first, last) pair ids of successive chunks of a dataset's pairs in scope (``conditions``), in
    id order (keyset pagination)."""
    last = 0
    while True:
        ids = session.scalars(
            select(Pair.id)
            .where(Pair.dataset_id == dataset_id, Pair.id > last, *conditions)
            .order_by(Pair.id)
            .limit(chunk_size)
        ).all()
        if not ids:
            return
        yield ids[0], ids[-1]
        last = ids[-1]


def _host() -> str:
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def _partial_name(folder: Path) -> Path:
    """Where ``folder`` is written until complete: hidden, beside it, named after this writer."""
    return folder.parent / f".{folder.name}.partial-{_host()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):  # another user's process (or no pid at all: then not ours to judge)
        return True
    return True


def _last_change(path: Path) -> float:
    """The newest modification time of a folder and everything in it."""
    newest = path.lstat().st_mtime
    for root, folders, files in os.walk(path):
        for name in folders + files:
            try:
                newest = max(newest, os.lstat(os.path.join(root, name)).st_mtime)
            except OSError:
                pass
    return newest


def remove_leftovers(parent, idle: float = LEFTOVER_IDLE) -> list[Path]:
    """Remove the hidden folders that publishes killed mid-way left in ``parent`` (see PARTIAL): those
    whose writer, on this host, is no longer alive, and those none of whose files changed for ``idle``
    seconds. A folder another publish is writing now is kept. Returns the folders removed; what cannot be
    read or removed is left as it is (this is housekeeping: it never stops a publish)."""
    removed = []
    try:
        entries = list(Path(parent).iterdir())
    except OSError:
        return removed
    here, now = _host(), time.time()
    for path in entries:
        found = PARTIAL.match(path.name)
        try:
            if not found or path.is_symlink() or not path.is_dir():
                continue
            writer_gone = found["host"] == here and not _alive(int(found["pid"]))
            if not writer_gone and now - _last_change(path) < idle:
                continue
        except OSError:
            continue
        shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            removed.append(path)
    return removed


def publish_dataset(
    engine: Engine,
    folder,
    dataset_ids: Optional[Iterable[int]] = None,
    *,
    licence: str,
    title: Optional[str] = None,
    include_training: bool = False,
    campaign_id: Optional[int] = None,
    pairs: str = "all",
    chunk_size: int = DEFAULT_CHUNK,
    n_boot: int = 1000,
    progress: Optional[Callable[[int, int], None]] = None,
    within: Optional[Iterable[Path]] = None,
    aggregation: Optional[str] = None,
    confidence: float = DEFAULT_CONFIDENCE,
    min_labels: int = DEFAULT_MIN_LABELS,
    typed: bool = False,
    show_paths: bool = True,
) -> PublishResult:
    """Write the dataset folder (module docstring) for the given datasets (all when None).
    ``licence``: a Hugging Face licence identifier the organiser chose (cc-by-4.0, mit, other...);
    ``title``: the card's name (the datasets' names by default); ``campaign_id``: only that
    campaign's pairs and labels, and the card describes the campaign; ``pairs``: "all", "labelled"
    or "adjudicated" (db.export.pair_conditions); ``progress(done, total)`` is called after each
    chunk. The folder must not exist yet, or be empty, and must not be a link.
    ``within``: the folders it must lie inside, links resolved (the Export page passes
    lab.places.publish_roots(): the data folder and the configured ones); None: anywhere.
    ``aggregation``: a pluie_core.aggregation method, fitted once over every label in scope before
    the chunks are written (export_frame's AGGREGATION_COLUMNS); the card names it, its settings and
    the reliabilities' spread. ``confidence`` and ``min_labels``: when a model method's level is final
    (export_frame, pluie_core.aggregation.model_final_levels); the card states both and how many pairs
    each rule decided. ``typed``: ``folder`` is the text a browser user typed (the Export page): a
    relative name ("my-dataset") lies under the published folder (lab.places.typed_folder).
    ``show_paths=False`` (the Export page, for anyone but an owner): the sentences name the folder as
    typed, never the server's paths nor its configuration keys.

    An organiser's act (db.access): NotAllowed, nothing written, below; a publish is recorded in the
    activity log."""
    access.require("organise", "publish a dataset")
    try:
        licence = check_licence(licence)
    except ValueError as exc:
        raise PublishError(str(exc)) from None
    if chunk_size < 1:
        raise PublishError("A chunk holds at least one pair.")
    if not str(folder).strip():
        raise PublishError("Name the folder to write.")
    check_folder_text(str(folder))
    typed_text = str(folder).strip()
    try:
        folder = typed_folder(typed_text) if typed else Path(folder).expanduser()
    except ValueError as exc:  # a sentence without a path
        raise PublishError(str(exc)) from None
    try:
        if within is not None:
            folder = confined(folder, list(within))
        elif folder.is_symlink():
            raise ValueError(f"{folder} is a symbolic link: choose a new folder.")
    except ValueError as exc:
        if show_paths:
            raise PublishError(str(exc)) from None
        raise PublishError(
            f"“{typed_text}” is a symbolic link: choose a new folder."
            if folder.is_symlink()
            else outside_sentence(typed_text)
        ) from None
    shown = str(folder) if show_paths else f"“{typed_text}”"  # how the sentences below name the folder
    try:
        taken = folder.exists() and (not folder.is_dir() or any(folder.iterdir()))
    except OSError as exc:  # a folder this server may not read
        raise PublishError(f"The folder {shown} cannot be read ({exc.strerror.lower()}).") from None
    if taken:
        raise PublishError(f"{shown} already exists and is not an empty folder: choose a new folder.")
    if pairs not in PAIR_SCOPES:
        raise PublishError("Publish every pair, the labelled pairs or the adjudicated pairs.")
    if title is not None and str(title).strip():  # the card's name: a name's rules (NFC, no control character)
        title = clean_name("The title", title, PublishError)
    ids = None if dataset_ids is None else [int(d) for d in dataset_ids]
    restricted = campaign_id is not None or pairs != "all"
    with read_session(engine) as session:
        campaign = None if campaign_id is None else _campaign_facts(session, campaign_id)
        conditions = pair_conditions(None, campaign_id, pairs, include_training)
        scope = _scope(session, ids, conditions)
        if not scope or (ids is not None and len(scope) != len(set(ids))):
            raise PublishError("Choose at least one existing dataset to publish.")
        if restricted:  # the card lists the datasets the rows come from
            scope = [row for row in scope if row[3]]
        if not scope:
            raise PublishError(
                f"No pair of these datasets is among the {PAIR_SCOPES[pairs]}"
                + (f" of the campaign “{campaign['name']}”" if campaign else "")
                + ": there is nothing to publish."
            )
        scope_ids = [row[0] for row in scope]
        conditions = pair_conditions(scope_ids, campaign_id, pairs, include_training)
        labels = label_conditions(campaign_id, include_training)
        names = _annotator_names(engine)
        annotators, english = _annotator_columns(session, conditions, labels, names)
        runs = _runs(session, conditions)
        n_gold_answers = gold_check_answers(session, scope_ids, campaign_id, pairs, include_training)
    total = sum(row[3] for row in scope)
    if total == 0:
        raise PublishError("These datasets hold no pairs yet: there is nothing to publish.")
    fit = None
    if aggregation is not None:
        try:
            confidence, min_labels = check_thresholds(confidence, min_labels)
            fit = pair_aggregation(
                engine, scope_ids, include_training, campaign_id=campaign_id, pairs=pairs, method=aggregation
            )
        except ValueError as exc:
            raise PublishError(str(exc)) from None
    schema = _schema(annotators, runs, include_training, fit is not None)
    level_columns = [column for column, _, levels in annotators if levels]

    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PublishError(
            f"The folder {folder.parent if show_paths else 'for ' + shown} cannot be created ({exc.strerror})."
        ) from None
    remove_leftovers(folder.parent)  # what publishes killed mid-way left here
    partial = _partial_name(folder)

    def rows(dataset_id: int, first: int, last: int, training: bool):
        """A chunk of the export's rows, with the training trial's labels or without (what α counts)."""
        return export_frame(
            engine,
            [dataset_id],
            training,
            campaign_id=campaign_id,
            pairs=pairs,
            pair_id_range=(first, last),
            annotator_names=names,
            aggregation=aggregation,
            fitted=fit,
            confidence=confidence,
            min_labels=min_labels,
        )

    writer = stream = None
    try:
        (partial / "data").mkdir(parents=True)
        patterns, labels_per_pair, sources, finals = {}, {}, {}, {}
        n_labels = done = n_chunks = 0
        with read_session(engine) as session:
            for dataset_id, *_ in scope:
                for first, last in _pair_id_chunks(session, dataset_id, chunk_size, conditions):
                    chunk = _conform(rows(dataset_id, first, last, include_training), schema)
                    if writer is None:  # pandas' own metadata too, so pandas reads whole numbers back as Int64
                        schema = schema.with_metadata(pa.Schema.from_pandas(chunk, preserve_index=False).metadata)
                        writer = pq.ParquetWriter(partial / DATA_FILE, schema)
                        stream = pa.ipc.new_stream(str(partial / ROWS_STREAM), schema)
                    table = pa.Table.from_pandas(chunk, schema=schema, preserve_index=False)
                    writer.write_table(table, row_group_size=chunk_size)
                    stream.write_table(table)
                    # α counts the labels every page counts (pluie_core.agreement): never the training trial's
                    counted = rows(dataset_id, first, last, False) if include_training else chunk
                    if level_columns:
                        present = [c for c in level_columns if c in counted.columns]
                        levels = counted[present].to_numpy(dtype=float, na_value=np.nan)
                        counts = np.stack([(levels == v).sum(axis=1) for v in range(4)], axis=1)
                        count_patterns(counts, into=patterns)
                    for target, column in (
                        (labels_per_pair, "n_labels"),
                        (sources, "final_source"),
                        (finals, "final_level"),
                    ):
                        for value, n in chunk[column].dropna().value_counts().items():
                            key = str(value) if column == "final_source" else int(value)
                            target[key] = target.get(key, 0) + int(n)
                    n_labels += int(chunk["n_labels"].sum())
                    done += len(chunk)
                    n_chunks += 1
                    if progress is not None:
                        progress(done, total)
        writer.close()
        stream.close()
        writer = stream = None
        _arrow_copy(partial)
        agreement = agreement_figures(patterns, n_boot=n_boot)
        facts = {
            "title": (title or "").strip() or (campaign["name"] if campaign else ", ".join(row[1] for row in scope)),
            "licence": licence,
            "n_pairs": done,
            "n_labels": n_labels,
            "datasets": [
                {"name": name, "n_pairs": n, "description": description or "", "imported_by": by or ""}
                for _, name, description, n, by in scope
            ],
            "n_annotators": len(annotators),
            "annotators": english,
            "labels_per_pair": labels_per_pair,
            "final_sources": sources,
            "final_levels": finals,
            "agreement": agreement,
            "runs": runs,
            "include_training": include_training,
            "created_at": utcnow(),
            "data_file": DATA_FILE,
            "pairs": pairs,
            "campaign": campaign,
            "n_gold_answers": n_gold_answers,
            "aggregation": None
            if fit is None
            else {
                "method": aggregation,
                "text": fit.describe(),
                "confidence": confidence,
                "min_labels": min_labels,
                "median_labels": median_labels(fit.annotators["n_labels"]),
            },
        }
        card = dataset_card(facts)
        (partial / "README.md").write_text(card, encoding="utf-8")
        if folder.exists():
            folder.rmdir()  # empty, checked above
        partial.rename(folder)
    except BaseException as exc:
        for open_file in (writer, stream):
            if open_file is not None:
                open_file.close()
        shutil.rmtree(partial, ignore_errors=True)
        if isinstance(exc, OSError) and exc.strerror:  # a read-only folder, a full disk...: one sentence
            raise PublishError(f"The folder {shown} cannot be written ({exc.strerror.lower()}).") from None
        raise
    with write_session(engine) as session:  # the folder is there: say who published what, where
        access.record(
            session,
            "publish",
            "dataset",
            scope[0][0] if len(scope) == 1 else None,
            f"published {', '.join(f'“{row[1]}”' for row in scope)} ({done:,} pairs, {licence}) to {folder}",
        )
        emit(
            session,
            "dataset.published",
            {
                "datasets": [{"id": row[0], "name": row[1]} for row in scope],
                "campaign_id": campaign_id,
                "pairs": done,
                "licence": licence,
                "by": access.actor_name(),
            },
        )
    return PublishResult(folder, done, n_chunks, schema.names, card)


def _arrow_copy(folder: Path) -> None:
    """The rows as the Arrow files datasets.load_from_disk reads (a DatasetDict, split train): the
    Arrow stream written beside the Parquet file, opened memory-mapped by `datasets`
    (Dataset.from_file), written out in shards by save_to_disk, then removed. (Converting the
    Parquet file with Dataset.from_parquet instead holds memory that grows with the rows.)"""
    import datasets

    was_enabled = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        train = datasets.Dataset.from_file(str(folder / ROWS_STREAM))
        datasets.DatasetDict({"train": train}).save_to_disk(str(folder))
        del train
    finally:
        if was_enabled:
            datasets.enable_progress_bars()
    (folder / ROWS_STREAM).unlink()


NAME_BYTES = 255  # what a folder or file name may hold on the usual file systems (ext4, APFS, NTFS: 255 units)
STEM_BYTES = 120  # a stem the app derives from a name: room left for "-20261207-120000", "_labels", ".zip"


def check_folder_text(text: str) -> None:
    """PublishError with a sentence for a folder path no file system takes: a NUL character, or a part of it
    longer than NAME_BYTES bytes in UTF-8 (a 200-character CJK name is 600 bytes)."""
    if "\x00" in text:
        raise PublishError(
            "The folder's path holds a NUL character (U+0000), which no file system takes: type it again without it."
        )
    for part in Path(text).parts:
        size = len(part.encode("utf-8", "surrogatepass"))
        if size > NAME_BYTES:
            raise PublishError(
                f"The folder name “{part[:40]}…” is {size:,} bytes long in UTF-8; a file system takes at "
                f"most {NAME_BYTES}: choose a shorter name."
            )


def folder_stem(name: str, fallback: str = "pluie_lab_export") -> str:
    """A file and folder name from a dataset or campaign name: letters, digits, '.', '-' and '_' kept (any
    script), other runs of characters one '_', no leading dot (".." or ".hidden" would make a hidden folder
    or climb out), at most STEM_BYTES bytes in UTF-8 cut on a character; ``fallback`` where nothing is left."""
    import re

    stem = re.sub(r"[^\w.-]+", "_", str(name)).strip("_").lstrip(".").strip("_")
    encoded = stem.encode("utf-8")
    if len(encoded) > STEM_BYTES:
        stem = encoded[:STEM_BYTES].decode("utf-8", "ignore").rstrip("_.-")
    return stem or fallback


def default_folder(stem: str) -> Path:
    """Where the export page offers to write a dataset folder: <data dir>/published/<stem>-<UTC time>
    (data dir: PLUIE_DATA_DIR, default ./data, as for the app's other files); ``stem`` made safe by
    folder_stem."""
    return published_dir() / f"{folder_stem(stem)}-{utcnow():%Y%m%d-%H%M%S}"


def folder_bytes(folder) -> int:
    """The bytes of the files in a published folder (what its .zip holds before compression)."""
    return sum(path.stat().st_size for path in Path(folder).rglob("*") if path.is_file() and not path.is_symlink())


def dataset_zip(folder) -> bytes:
    """A published dataset folder as one .zip file, for a download from the browser: its entries lie
    in a top folder of the folder's name, so that unzipped it is the folder again (README.md, the
    Parquet file, the Arrow copy), read by datasets.load_dataset and load_from_disk. The archive is
    written file by file, each copied in small pieces, into a temporary file beside the folder (on the disk that
    held the folder; nothing is left behind) and read back once: memory holds the finished archive,
    never the files too. The Parquet file goes in as it is (already compressed), the rest deflated.
    The Export page offers it up to ZIP_DOWNLOAD_LIMIT bytes of files."""
    folder = Path(folder)
    if not folder.is_dir() or folder.is_symlink():
        raise PublishError(f"The folder {folder} is not there any more: publish the dataset again.")
    files = sorted(path for path in folder.rglob("*") if path.is_file() and not path.is_symlink())
    try:
        spool = tempfile.TemporaryFile(dir=folder.parent, prefix=f".{folder.name}.zip-")
    except OSError:  # a folder this server may not write beside: the system's temporary folder
        spool = tempfile.TemporaryFile(prefix="pluie-dataset-zip-")
    with spool:
        with zipfile.ZipFile(spool, "w", compression=zipfile.ZIP_DEFLATED, allowZip64=True) as archive:
            for path in files:
                stored = path.suffix == ".parquet"
                archive.write(
                    path,
                    f"{folder.name}/{path.relative_to(folder).as_posix()}",
                    compress_type=zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED,
                )
        spool.seek(0)
        return spool.read()


def export_chunks(
    engine: Engine,
    dataset_ids: Optional[Iterable[int]] = None,
    *,
    layout: str = "wide",
    include_training: bool = False,
    campaign_id: Optional[int] = None,
    pairs: str = "all",
    aggregation: Optional[str] = None,
    confidence: float = DEFAULT_CONFIDENCE,
    min_labels: int = DEFAULT_MIN_LABELS,
    chunk_size: int = DEFAULT_CHUNK,
):
    """The Export page's table in chunks, for a download streamed in bounded memory (the HTTP API):
    ``layout`` "wide" (export_frame's columns, the same in every chunk: the schema is fixed first, as a
    publish fixes it) or "long" (export_labels' rows, one per label). A generator of frames; the checks run
    before the first is yielded, so a bad choice raises PublishError at once."""
    if layout not in ("wide", "long"):
        raise PublishError("Choose the wide layout (a row per pair) or the long one (a row per label).")
    if pairs not in PAIR_SCOPES:
        raise PublishError("Export every pair, the labelled pairs or the adjudicated pairs.")
    ids = None if dataset_ids is None else [int(d) for d in dataset_ids]
    with read_session(engine) as session:
        conditions = pair_conditions(None, campaign_id, pairs, include_training)
        scope = _scope(session, ids, conditions)
        if ids is not None and len(scope) != len(set(ids)):
            raise PublishError("Choose existing datasets to export.")
        scope_ids = [row[0] for row in scope]
        conditions = pair_conditions(scope_ids, campaign_id, pairs, include_training)
        names = _annotator_names(engine)
        annotators, _ = _annotator_columns(session, conditions, label_conditions(campaign_id, include_training), names)
        runs = _runs(session, conditions)
    fit = None
    if aggregation is not None:
        try:
            confidence, min_labels = check_thresholds(confidence, min_labels)
            fit = pair_aggregation(
                engine, scope_ids, include_training, campaign_id=campaign_id, pairs=pairs, method=aggregation
            )
        except ValueError as exc:
            raise PublishError(str(exc)) from None
    schema = _schema(annotators, runs, include_training, fit is not None)
    choice = dict(
        campaign_id=campaign_id,
        pairs=pairs,
        aggregation=aggregation,
        fitted=fit,
        confidence=confidence,
        min_labels=min_labels,
    )

    def chunks():
        with read_session(engine) as session:
            spans = [
                (dataset_id, first, last)
                for dataset_id in scope_ids
                for first, last in _pair_id_chunks(session, dataset_id, chunk_size, conditions)
            ]
        for dataset_id, first, last in spans:
            if layout == "wide":
                yield _conform(
                    export_frame(
                        engine,
                        [dataset_id],
                        include_training,
                        pair_id_range=(first, last),
                        annotator_names=names,
                        **choice,
                    ),
                    schema,
                )
            else:
                yield export_labels(engine, [dataset_id], include_training, pair_id_range=(first, last), **choice)

    return chunks()
