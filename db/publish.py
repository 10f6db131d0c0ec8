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
renamed when complete: an error leaves no folder behind.
"""
from __future__ import annotations

import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Optional

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from sqlalchemy import Engine, case, func, select

from db.engine import read_session
from db.export import ANNOTATOR_PREFIX, FINAL_COLUMNS, SCORE_PREFIX, _annotator_names, export_frame
from db.models import Annotator, Dataset, Label, Pair, Score, ScoreRun, utcnow
from pluie_core.dataset_card import agreement_figures, check_licence, count_patterns, dataset_card

__all__ = ["PublishError", "PublishResult", "publish_dataset", "DATA_FILE"]

DATA_FILE = "data/train-00000-of-00001.parquet"
ROWS_STREAM = ".rows.arrow"  # the rows as an Arrow stream while the folder is written, for the Arrow copy
DEFAULT_CHUNK = 20_000  # pairs per chunk: a few tens of MB of rows, and under every driver's bound-parameter limit


class PublishError(ValueError):
    """Something the organiser asked for that cannot be done; the message says why, in a sentence."""


@dataclass(frozen=True)
class PublishResult:
    folder: Path
    n_pairs: int
    n_chunks: int
    columns: list[str]
    card: str


def _scope(session, dataset_ids: Optional[list[int]]) -> list[tuple]:
    query = (select(Dataset.id, Dataset.name, Dataset.description, func.count(Pair.id))
             .outerjoin(Pair, Pair.dataset_id == Dataset.id).group_by(Dataset.id).order_by(Dataset.id))
    if dataset_ids is not None:
        query = query.where(Dataset.id.in_(dataset_ids))
    return session.execute(query).all()


def _annotator_columns(session, dataset_ids: list[int], include_training: bool, names: dict[int, str]):
    """[(column, arrow type, gives five-level labels)] of the annotators with labels in scope,
    sorted as export_frame sorts them; plus the English levels of those annotators."""
    query = (select(Label.annotator_id, func.max(case((Label.level.is_not(None), 1), else_=0)),
                    func.max(case(((Label.level.is_(None)) & (Label.value != func.round(Label.value)), 1), else_=0)),
                    Annotator.english_level)
             .join(Pair, Pair.id == Label.pair_id).join(Annotator, Annotator.id == Label.annotator_id)
             .where(Pair.dataset_id.in_(dataset_ids)).group_by(Label.annotator_id, Annotator.english_level))
    if not include_training:
        query = query.where(Label.is_training.is_(False))
    rows = session.execute(query).all()
    columns = sorted((ANNOTATOR_PREFIX + names[aid], pa.float64() if fractional else pa.int64(), bool(levels))
                     for aid, levels, fractional, _ in rows)
    english = pd.Series([row[3] or "not given" for row in rows], dtype=object).value_counts().to_dict()
    return columns, english


def _runs(session, dataset_ids: list[int]) -> list[dict]:
    rows = session.execute(
        select(ScoreRun.name, ScoreRun.kind, ScoreRun.model, ScoreRun.template, ScoreRun.direction, ScoreRun.answers,
               ScoreRun.higher_is_similar, ScoreRun.status, func.count(Score.id))
        .join(Score, Score.run_id == ScoreRun.id).join(Pair, Pair.id == Score.pair_id)
        .where(Pair.dataset_id.in_(dataset_ids)).group_by(ScoreRun.id).order_by(ScoreRun.name)).all()
    keys = ["name", "kind", "model", "template", "direction", "answers", "higher_is_similar", "status", "n_scores"]
    return [dict(zip(keys, row)) for row in rows]


def _schema(annotators, runs, include_training: bool) -> pa.Schema:
    """The Arrow schema of export_frame's columns, fixed before the first chunk is read."""
    text, whole, real = pa.string(), pa.int64(), pa.float64()
    fields = [("dataset", text), ("external_id", text), ("source", text), ("hypothesis", text), ("label", real)]
    fields += [(column, kind) for column, kind, _ in annotators]
    fields += [("n_labels", whole), ("majority_level", whole), ("majority_label", text), ("binary_label", whole)]
    if include_training:
        fields.append(("n_training_labels", whole))
    final_types = {"final_level": whole, "final_label": text, "final_binary": whole, "final_source": text,
                   "adjudicated_by": text, "adjudicated_at": pa.timestamp("us"), "adjudication_note": text}
    fields += [(column, final_types[column]) for column in FINAL_COLUMNS]
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


def _pair_id_chunks(session, dataset_id: int, chunk_size: int):
    """(first, last) pair ids of successive chunks of a dataset, in id order (keyset pagination)."""
    last = 0
    while True:
        ids = session.scalars(select(Pair.id).where(Pair.dataset_id == dataset_id, Pair.id > last)
                              .order_by(Pair.id).limit(chunk_size)).all()
        if not ids:
            return
        yield ids[0], ids[-1]
        last = ids[-1]


def publish_dataset(engine: Engine, folder, dataset_ids: Optional[Iterable[int]] = None, *, licence: str,
                    title: Optional[str] = None, include_training: bool = False, chunk_size: int = DEFAULT_CHUNK,
                    n_boot: int = 1000, progress: Optional[Callable[[int, int], None]] = None) -> PublishResult:
    """Write the dataset folder (module docstring) for the given datasets (all when None).
    ``licence``: a Hugging Face licence identifier the organiser chose (cc-by-4.0, mit, other...);
    ``title``: the card's name (the datasets' names by default); ``progress(done, total)`` is
    called after each chunk. The folder must not exist yet, or be empty."""
    try:
        licence = check_licence(licence)
    except ValueError as exc:
        raise PublishError(str(exc)) from None
    if chunk_size < 1:
        raise PublishError("A chunk holds at least one pair.")
    folder = Path(folder).expanduser()
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise PublishError(f"{folder} already exists and is not an empty folder: choose a new folder.")
    ids = None if dataset_ids is None else [int(d) for d in dataset_ids]
    with read_session(engine) as session:
        scope = _scope(session, ids)
        if not scope or (ids is not None and len(scope) != len(set(ids))):
            raise PublishError("Choose at least one existing dataset to publish.")
        scope_ids = [row[0] for row in scope]
        names = _annotator_names(engine)
        annotators, english = _annotator_columns(session, scope_ids, include_training, names)
        runs = _runs(session, scope_ids)
    total = sum(row[3] for row in scope)
    if total == 0:
        raise PublishError("These datasets hold no pairs yet: there is nothing to publish.")
    schema = _schema(annotators, runs, include_training)
    level_columns = [column for column, _, levels in annotators if levels]

    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PublishError(f"The folder {folder.parent} cannot be created ({exc.strerror}).") from None
    partial = folder.parent / f".{folder.name}.partial-{uuid.uuid4().hex[:8]}"

    def rows(dataset_id: int, first: int, last: int, training: bool):
        """A chunk of the export's rows, with the training trial's labels or without (what α counts)."""
        return export_frame(engine, [dataset_id], training, pair_id_range=(first, last), annotator_names=names)

    writer = stream = None
    try:
        (partial / "data").mkdir(parents=True)
        patterns, labels_per_pair, sources, finals = {}, {}, {}, {}
        n_labels = done = n_chunks = 0
        with read_session(engine) as session:
            for dataset_id, *_ in scope:
                for first, last in _pair_id_chunks(session, dataset_id, chunk_size):
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
                    for target, column in ((labels_per_pair, "n_labels"), (sources, "final_source"),
                                           (finals, "final_level")):
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
            "title": (title or "").strip() or ", ".join(row[1] for row in scope),
            "licence": licence, "n_pairs": done, "n_labels": n_labels,
            "datasets": [{"name": name, "n_pairs": n, "description": description or ""}
                         for _, name, description, n in scope],
            "n_annotators": len(annotators), "annotators": english, "labels_per_pair": labels_per_pair,
            "final_sources": sources, "final_levels": finals, "agreement": agreement, "runs": runs,
            "include_training": include_training, "created_at": utcnow(), "data_file": DATA_FILE,
        }
        card = dataset_card(facts)
        (partial / "README.md").write_text(card, encoding="utf-8")
        if folder.exists():
            folder.rmdir()  # empty, checked above
        partial.rename(folder)
    except BaseException:
        for open_file in (writer, stream):
            if open_file is not None:
                open_file.close()
        shutil.rmtree(partial, ignore_errors=True)
        raise
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


def default_folder(stem: str) -> Path:
    """Where the export page offers to write a dataset folder: <data dir>/published/<stem>-<UTC time>
    (data dir: PLUIE_DATA_DIR, default ./data, as for the app's other files)."""
    import os

    return Path(os.environ.get("PLUIE_DATA_DIR") or "data") / "published" / f"{stem}-{utcnow():%Y%m%d-%H%M%S}"
