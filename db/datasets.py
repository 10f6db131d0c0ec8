"""Datasets and pairs: the import (one transaction, all or nothing) and the overview the home
page shows."""

from __future__ import annotations

import datetime
import hashlib
import json
import math
import uuid
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional

import pandas as pd
from sqlalchemy import Engine, delete, func, insert, literal, select, update
from sqlalchemy.orm import Session

from db import access
from db.analysis import counted_label
from db.campaigns import add_pairs_to_campaigns
from db.engine import read_session, write_session
from db.limits import check_length, clean_name
from db.models import Annotator, Dataset, Label, Pair, Score, ScoreRun, WorkItem, utcnow
from db.queries import clean_value
from db.queue import CHOICE_RUN_KINDS, enqueue_pairs, forget_compute_time, runs_in_scope
from pluie_core.io import MAX_SENTENCE_CHARS
from pluie_core.wording import counted

ANNOTATOR_PREFIX = "annotator:"
# columns of a pairs frame that are not free metadata
_KNOWN_COLUMNS = {"source", "hypothesis", "label", "external_id"}


# A frame of this many rows or more is imported in short transactions out of sight (import_pair_chunks),
# CHUNK_ROWS pairs each (about a fifth of a second on SQLite: an annotator's answer waits no longer);
# a hidden import that has not written for STALE_AFTER is a crash's leftover, removed by the next import
# or the next start (remove_stale_imports).
STAGED_FROM = 20_000
CHUNK_ROWS = 5_000
STALE_AFTER = datetime.timedelta(minutes=10)
# A pair's free metadata (the file's other columns), as JSON text: a 45 MB cell was stored whole before.
MAX_META_CHARS = 100_000
# datasets everyone sees: not a large import still being written (Dataset.import_state)
VISIBLE = Dataset.import_state.is_(None)
HIDDEN_DATASETS = select(Dataset.id).where(Dataset.import_state.is_not(None))


class ImportRejected(ValueError):
    """An import that cannot land; the store is left as it was."""


@dataclass
class ImportResult:
    dataset_id: int
    dataset_name: str
    n_pairs: int
    n_skipped_duplicates: int = 0
    n_labels: int = 0
    annotators: list[str] = field(default_factory=list)
    n_queued: int = 0
    n_kept_duplicates: int = 0  # exact repeats imported as pairs of their own (keep_duplicates)


def text_hash(source: str, hypothesis: str, occurrence: int = 0) -> str:
    """The pair's key within its dataset (unique there): the hash of its two sentences, and for
    the k-th repeat of the same sentences kept by an import with keep_duplicates, of the
    sentences and k, so that the first copy keeps the plain hash that duplicate checks look for."""
    key = f"{source}\x00{hypothesis}" if occurrence == 0 else f"{source}\x00{hypothesis}\x00{occurrence}"
    return hashlib.sha1(key.encode("utf-8")).hexdigest()


def duplicates_note(keep_duplicates: bool, n_pairs: int, n_repeats: int) -> str:
    """The line an import adds to the dataset's description to record its choice on duplicates."""
    if keep_duplicates:
        return (
            f"Imported {counted(n_pairs, 'pair')} with duplicates kept: every row is a pair, "
            f"{counted(n_repeats, 'exact repeat')} included."
        )
    return (
        f"Imported {counted(n_pairs, 'pair')} with duplicates skipped: an exact repeat of a pair is imported once "
        f"({n_repeats:,} skipped)."
    )


def _id_text(value) -> Optional[str]:
    """A pair id as text: JSON for a list or an object, never Python's repr."""
    value = clean_value(value)
    if value is None:
        return None
    return json.dumps(value, ensure_ascii=False) if isinstance(value, (dict, list)) else str(value)


def _as_float(value) -> Optional[float]:
    value = clean_value(value)
    if value is None:
        return None
    value = float(value)
    return None if math.isnan(value) else value


def import_pairs(
    engine: Engine,
    name: str,
    pairs: pd.DataFrame,
    *,
    description: str = "",
    source_format: Optional[str] = None,
    label_kind: Optional[str] = None,
    label_range: Optional[tuple[float, float]] = None,
    annotator_scale: str = "raw",
    append: bool = False,
    keep_duplicates: bool = False,
    session: Optional[Session] = None,
) -> ImportResult:
    """Store a pairs frame (as `pluie_core.load_pairs` returns it) as a dataset.

    Columns: source, hypothesis, optional label (gold: 0/1 or a numeric similarity),
    external_id, `annotator:<name>` columns (labels of external annotators) and anything else
    (kept as free metadata per pair). `annotator_scale="levels"` says the annotator columns use
    the app's five-level scale (0-4, 4 = Don't know), as our own export writes them; "raw" keeps
    them as values on their own scale (e.g. BIOSSES 0-4).

    Either the whole import lands, with work queued for every active score run, or nothing
    does. A row whose source and hypothesis repeat an earlier row or a pair already in the
    dataset is skipped and counted, unless `keep_duplicates` is True: then every row becomes a
    pair (benchmarks count their repeats). The choice, with its count, is added to the
    dataset's description. Rows the file reader already dropped as repeats (load_pairs without
    keep_duplicates, listed in attrs["duplicates"]) are counted as skipped there too.
    `session`: write inside the caller's transaction (several imports that land together) instead
    of one of its own. An organiser's write (db.access): refused with NotAllowed, nothing written, for
    a role below; a new dataset records who imported it (``created_by``).
    """
    access.require("organise", "import pairs")
    if not str(name or "").strip():
        raise ImportRejected("Give the dataset a name.")
    name = clean_name("The dataset name", name, ImportRejected)
    for column in ("source", "hypothesis"):
        if column not in pairs.columns:
            raise ImportRejected(f"The pairs have no {column!r} column.")
    if annotator_scale not in ("raw", "levels"):
        raise ImportRejected("annotator_scale must be 'raw' or 'levels'.")
    if len(pairs) == 0:
        raise ImportRejected("There are no pairs to import.")

    attrs = getattr(pairs, "attrs", {}) or {}
    source_format = source_format or attrs.get("format") or ""
    label_kind = label_kind or attrs.get("label_kind")
    label_range = label_range or attrs.get("label_range")
    if session is None and len(pairs) >= STAGED_FROM:  # short transactions, out of sight until the last
        return import_pair_chunks(
            engine,
            name,
            _frame_chunks(pairs),
            description=description,
            source_format=source_format,
            label_kind=label_kind,
            label_range=label_range,
            annotator_scale=annotator_scale,
            append=append,
            keep_duplicates=keep_duplicates,
            total=len(pairs),
            dropped_by_reader=0 if attrs.get("keep_duplicates") else len(attrs.get("duplicates") or []),
        )
    checked = _validated(pairs, 0, name, description)
    source_list, hypothesis_list, hashes = checked.sources, checked.hypotheses, checked.hashes
    labels, external_ids, meta_records = checked.labels, checked.external_ids, checked.metas
    annotator_columns = checked.annotator_columns

    with nullcontext(session) if session is not None else write_session(engine) as session:
        dataset = session.scalar(select(Dataset).where(Dataset.name == name, VISIBLE))
        if dataset is not None and not append:
            raise ImportRejected(f"A dataset named {name!r} already exists: choose another name or add to it.")
        if dataset is None:
            dataset = Dataset(
                name=name,
                description=description,
                source_format=source_format,
                label_kind=label_kind,
                label_min=float(label_range[0]) if label_range else None,
                label_max=float(label_range[1]) if label_range else None,
                created_by=access.actor_name(),
            )
            session.add(dataset)
            session.flush()
            existing: set[str] = set()
        else:
            existing = set(session.scalars(select(Pair.text_hash).where(Pair.dataset_id == dataset.id)))

        rows, row_index, skipped, repeats_kept = [], [], 0, 0
        next_occurrence: dict[str, int] = {}
        for i, digest in enumerate(hashes):
            if digest in existing:
                if not keep_duplicates:
                    skipped += 1
                    continue
                occurrence = next_occurrence.get(digest, 1)
                while text_hash(source_list[i], hypothesis_list[i], occurrence) in existing:
                    occurrence += 1
                next_occurrence[digest] = occurrence + 1
                digest = text_hash(source_list[i], hypothesis_list[i], occurrence)
                repeats_kept += 1
            existing.add(digest)
            meta = meta_records[i]
            rows.append(
                {
                    "dataset_id": dataset.id,
                    "external_id": external_ids[i],
                    "source": source_list[i],
                    "hypothesis": hypothesis_list[i],
                    "text_hash": digest,
                    "gold_label": labels[i],
                    "meta": meta,
                }
            )
            row_index.append(i)
        pair_ids: list[int] = []
        if rows:
            result = session.execute(insert(Pair).returning(Pair.id, sort_by_parameter_order=True), rows)
            pair_ids = [r[0] for r in result]

        n_labels, annotator_names = 0, []
        for column in annotator_columns:
            annotator_name = _annotator_name(column)
            annotator_id = _annotator_id(session, dataset.id, annotator_name)
            annotator_names.append(annotator_name)
            n_labels += _insert_labels(
                session,
                annotator_id,
                annotator_name,
                checked.annotator_values[column],
                pair_ids,
                row_index,
                annotator_scale,
                0,
            )

        dropped_by_reader = 0 if attrs.get("keep_duplicates") else len(attrs.get("duplicates") or [])
        note = duplicates_note(
            keep_duplicates, len(pair_ids), repeats_kept if keep_duplicates else skipped + dropped_by_reader
        )
        if keep_duplicates and dropped_by_reader:  # read without keep_duplicates: those are gone
            note += f" {counted(dropped_by_reader, 'repeat')} had been dropped when the file was read."
        dataset.description = f"{dataset.description}\n\n{note}" if dataset.description else note

        n_queued = enqueue_pairs(session, dataset.id, pair_ids)
        if append and pair_ids:
            add_pairs_to_campaigns(session, dataset.id, pair_ids)
        return ImportResult(
            dataset_id=dataset.id,
            dataset_name=name,
            n_pairs=len(pair_ids),
            n_skipped_duplicates=skipped,
            n_labels=n_labels,
            annotators=annotator_names,
            n_queued=n_queued,
            n_kept_duplicates=repeats_kept,
        )


@dataclass
class _Checked:
    """One frame's pairs, validated, as plain lists (per-row pandas indexing would dominate the time)."""

    sources: list
    hypotheses: list
    hashes: list
    labels: list
    external_ids: list
    metas: list
    annotator_columns: list
    annotator_values: dict


def _validated(pairs: pd.DataFrame, offset: int, name: str, description: str) -> _Checked:
    """Check a frame's pairs before anything is written (pair numbers start after `offset`): empty or
    too long sentences, ids, annotator names, NUL characters, non-finite numbers, the metadata's size."""
    annotator_columns = [c for c in pairs.columns if str(c).startswith(ANNOTATOR_PREFIX)]
    meta_columns = [c for c in pairs.columns if c not in _KNOWN_COLUMNS and c not in annotator_columns]
    sources = pairs["source"].astype(str).str.strip()
    hypotheses = pairs["hypothesis"].astype(str).str.strip()
    for column, values in (("source", sources), ("hypothesis", hypotheses)):
        empty = values.eq("") | pairs[column].isna()
        if empty.any():
            row = int(empty.to_numpy().nonzero()[0][0]) + 1
            raise ImportRejected(f"Pair {offset + row}: the {column} is empty.")
        long = values.str.len().to_numpy() > MAX_SENTENCE_CHARS
        if long.any():
            row = int(long.nonzero()[0][0])
            check_length(f"Pair {offset + row + 1}: the {column}", values.iloc[row], ImportRejected, MAX_SENTENCE_CHARS)
    source_list, hypothesis_list = sources.tolist(), hypotheses.tolist()
    n = len(pairs)
    labels = _numbers(pairs["label"].tolist(), offset, "the label") if "label" in pairs.columns else [None] * n
    external_ids = (
        [_id_text(v) for v in pairs["external_id"].tolist()] if "external_id" in pairs.columns else [None] * n
    )
    for i, external_id in enumerate(external_ids):
        check_length(f"Pair {offset + i + 1}: the pair id", external_id, ImportRejected)
    annotator_values = {}
    for column in annotator_columns:
        annotator_name = _annotator_name(column)
        annotator_values[column] = _numbers(pairs[column].tolist(), offset, f"{annotator_name}'s label")
    metas = [None] * n
    if meta_columns:
        metas = [
            {str(k): clean_value(v) for k, v in record.items() if clean_value(v) is not None} or None
            for record in pairs[meta_columns].to_dict("records")
        ]
        for i, meta in enumerate(metas):
            _check_meta(offset + i + 1, meta)
    _refuse_nul(name, description, source_list, hypothesis_list, external_ids, metas, annotator_columns, offset)
    return _Checked(
        source_list,
        hypothesis_list,
        [text_hash(s, h) for s, h in zip(source_list, hypothesis_list)],
        labels,
        external_ids,
        metas,
        annotator_columns,
        annotator_values,
    )


def _numbers(values: list, offset: int, what: str) -> list:
    """Labels as floats (None when missing); infinity is refused with the value as the frame holds it."""
    numbers = [_as_float(v) for v in values]
    for i, number in enumerate(numbers):
        if number is not None and not math.isfinite(number):
            raise ImportRejected(f"Pair {offset + i + 1}: {what} {str(values[i])[:40]!r} is not a finite number.")
    return numbers


def _check_meta(pair: int, meta: Optional[dict]) -> None:
    """A pair's metadata (its other columns) is at most MAX_META_CHARS characters as JSON."""
    if not meta:
        return
    sizes = {key: len(json.dumps(value, ensure_ascii=False, default=str)) for key, value in meta.items()}
    if sum(sizes.values()) + 4 * len(sizes) > MAX_META_CHARS:
        key = max(sizes, key=sizes.get)
        raise ImportRejected(
            f"Pair {pair}: the column {key!r} holds {sizes[key]:,} characters; a pair's other "
            f"columns (kept as metadata) may hold {MAX_META_CHARS:,} in all."
        )


def _annotator_name(column) -> str:
    raw = str(column)[len(ANNOTATOR_PREFIX) :]
    return clean_name("The annotator name", raw, ImportRejected) if raw.strip() else "unnamed"


def _annotator_id(session: Session, dataset_id: int, name: str) -> int:
    """The external annotator of that name in the dataset, created when new."""
    annotator = session.scalar(select(Annotator).where(Annotator.dataset_id == dataset_id, Annotator.name == name))
    if annotator is None:
        annotator = Annotator(name=name, dataset_id=dataset_id, is_external=True)
        session.add(annotator)
        session.flush()
    return annotator.id


def _insert_labels(
    session: Session,
    annotator_id: int,
    annotator_name: str,
    values: list,
    pair_ids: list,
    row_index: list,
    annotator_scale: str,
    offset: int,
) -> int:
    label_rows = []
    for pair_id, i in zip(pair_ids, row_index):
        value = values[i]
        if value is None:
            continue
        level = None
        if annotator_scale == "levels":
            if value not in (0, 1, 2, 3, 4):
                raise ImportRejected(
                    f"Pair {offset + i + 1}: {annotator_name}'s label {value:g} is not a level of the scale (0-4)."
                )
            level = int(value)
        label_rows.append(
            {"pair_id": pair_id, "annotator_id": annotator_id, "level": level, "value": value, "is_training": False}
        )
    if label_rows:
        session.execute(insert(Label), label_rows)
    return len(label_rows)


def _frame_chunks(pairs: pd.DataFrame, size: Optional[int] = None):
    size = size or CHUNK_ROWS
    for start in range(0, len(pairs), size):
        yield pairs.iloc[start : start + size]


def left_out_note(file_name: str, row_word: Optional[str], skipped_rows: list[dict]) -> str:
    """The words a dataset's description keeps of the invalid rows an import left out (skip_invalid)."""
    return (
        f"{counted(len(skipped_rows), 'invalid row')} of {file_name} left out at import: "
        + "; ".join(f"{row_word or 'Row'} {r['row']}: {r['why']}" for r in skipped_rows[:20])
        + (f"; and {len(skipped_rows) - 20:,} more." if len(skipped_rows) > 20 else "")
    )


def import_pair_chunks(
    engine: Engine,
    name: str,
    chunks: Iterable[pd.DataFrame],
    *,
    description: str = "",
    source_format: Optional[str] = None,
    label_kind: Optional[str] = None,
    label_range: Optional[tuple[float, float]] = None,
    annotator_scale: str = "raw",
    append: bool = False,
    keep_duplicates: bool = False,
    progress: Optional[Callable[[int, Optional[int]], None]] = None,
    total: Optional[int] = None,
    dropped_by_reader: int = 0,
    file_name: str = "the file",
) -> ImportResult:
    """import_pairs for a large import, given as frames of pairs (pluie_core.io.read_pair_chunks, or a
    frame cut in pieces): each frame is written in a short transaction of its own into a hidden dataset
    (import_state "importing", seen by no listing, page, campaign or worker), then one short transaction
    makes it the dataset `name` (or, with `append`, moves its pairs into that dataset) and queues its
    work. All or nothing as import_pairs: a refusal or any error removes what was written; a crash
    leaves a hidden dataset that remove_stale_imports removes once stale. `progress(rows done, total)`
    is called after each frame (`total`: the rows expected, e.g. PairChunks.n_rows, or None).

    Repeats are skipped (or kept, `keep_duplicates`) as import_pairs does, looked up in the store (the
    dataset's unique index on the pairs' hashes), so memory does not grow with the rows.
    `dropped_by_reader`: repeats the file reader already dropped (they count as skipped). Rows a reader
    read with skip_invalid left out (attrs["skipped_rows"] of PairChunks, known at the end) are recorded
    in the description as left_out_note words them, `file_name` naming the file. Refused (NotAllowed,
    nothing written) below an organiser, as import_pairs."""
    access.require("organise", "import pairs")
    if not str(name or "").strip():
        raise ImportRejected("Give the dataset a name.")
    name = clean_name("The dataset name", name, ImportRejected)
    if annotator_scale not in ("raw", "levels"):
        raise ImportRejected("annotator_scale must be 'raw' or 'levels'.")
    attrs = getattr(chunks, "attrs", None)  # PairChunks: the format known at once, the labels' kind at the end
    remove_stale_imports(engine)
    with write_session(engine) as session:
        target = session.scalar(select(Dataset).where(Dataset.name == name, VISIBLE))
        if target is not None and not append:
            raise ImportRejected(f"A dataset named {name!r} already exists: choose another name or add to it.")
        target_id = None if target is None else target.id
        hidden = Dataset(
            name=f".importing-{uuid.uuid4().hex}",
            description="",
            import_state="importing",
            import_seen=utcnow(),
            import_target=target_id,
            source_format=source_format or (attrs or {}).get("format") or "",
        )
        session.add(hidden)
        session.flush()
        hidden_id = hidden.id
    try:
        return _staged_import(
            engine,
            name,
            chunks,
            hidden_id,
            target_id,
            description=description,
            label_kind=label_kind,
            label_range=label_range,
            annotator_scale=annotator_scale,
            keep_duplicates=keep_duplicates,
            progress=progress,
            total=total,
            dropped_by_reader=dropped_by_reader,
            attrs=attrs,
            file_name=file_name,
        )
    except BaseException:
        discard_import(engine, hidden_id)
        raise


def _staged_import(
    engine,
    name,
    chunks,
    hidden_id,
    target_id,
    *,
    description,
    label_kind,
    label_range,
    annotator_scale,
    keep_duplicates,
    progress,
    total,
    dropped_by_reader,
    attrs,
    file_name="the file",
) -> ImportResult:
    owners = [hidden_id] if target_id is None else [hidden_id, target_id]
    annotators: dict = {}  # column -> (name, id): the target's own when it has one of that name
    next_occurrence: dict[str, int] = {}  # keep_duplicates: the next free number of a repeated pair
    position = n_pairs = skipped = repeats_kept = n_labels = 0
    for frame in chunks:
        if len(frame) == 0:
            continue
        for column in ("source", "hypothesis"):
            if column not in frame.columns:
                raise ImportRejected(f"The pairs have no {column!r} column.")
        checked = _validated(frame, position, name, description)
        with write_session(engine) as session:
            alive = session.execute(
                update(Dataset)
                .where(Dataset.id == hidden_id, Dataset.import_state == "importing")
                .values(import_seen=utcnow())
            ).rowcount
            if not alive:
                raise ImportRejected(
                    "The import stopped writing for too long and was cleared away; nothing was "
                    "imported: import the file again."
                )
            known = set()
            for start in range(0, len(checked.hashes), 500):
                known.update(
                    session.scalars(
                        select(Pair.text_hash).where(
                            Pair.dataset_id.in_(owners), Pair.text_hash.in_(checked.hashes[start : start + 500])
                        )
                    )
                )
            rows, row_index = [], []
            for i, digest in enumerate(checked.hashes):
                if digest in known:
                    if not keep_duplicates:
                        skipped += 1
                        continue
                    occurrence = next_occurrence.get(digest, 1)
                    while True:
                        candidate = text_hash(checked.sources[i], checked.hypotheses[i], occurrence)
                        if (
                            candidate not in known
                            and session.scalar(
                                select(Pair.id).where(Pair.dataset_id.in_(owners), Pair.text_hash == candidate).limit(1)
                            )
                            is None
                        ):
                            break
                        occurrence += 1
                    next_occurrence[digest] = occurrence + 1
                    digest = candidate
                    repeats_kept += 1
                known.add(digest)
                rows.append(
                    {
                        "dataset_id": hidden_id,
                        "external_id": checked.external_ids[i],
                        "source": checked.sources[i],
                        "hypothesis": checked.hypotheses[i],
                        "text_hash": digest,
                        "gold_label": checked.labels[i],
                        "meta": checked.metas[i],
                    }
                )
                row_index.append(i)
            pair_ids = []
            if rows:
                result = session.execute(insert(Pair).returning(Pair.id, sort_by_parameter_order=True), rows)
                pair_ids = [r[0] for r in result]
            for column in checked.annotator_columns:
                if column not in annotators:  # an annotator the dataset added to has already keeps its id
                    annotator_name = _annotator_name(column)
                    owner = hidden_id
                    if (
                        target_id is not None
                        and session.scalar(
                            select(Annotator.id).where(
                                Annotator.dataset_id == target_id, Annotator.name == annotator_name
                            )
                        )
                        is not None
                    ):
                        owner = target_id
                    annotators[column] = (annotator_name, _annotator_id(session, owner, annotator_name))
                annotator_name, annotator_id = annotators[column]
                n_labels += _insert_labels(
                    session,
                    annotator_id,
                    annotator_name,
                    checked.annotator_values[column],
                    pair_ids,
                    row_index,
                    annotator_scale,
                    position,
                )
        position += len(frame)
        n_pairs += len(pair_ids)
        if progress is not None:
            progress(position, total)
    if position == 0:
        raise ImportRejected("There are no pairs to import.")
    if attrs is not None:  # a file read in chunks: what its rows showed, complete now
        label_kind = label_kind or attrs.get("label_kind")
        label_range = label_range or attrs.get("label_range")
        if attrs.get("skipped_rows"):
            left_out = left_out_note(file_name, attrs.get("row_word"), attrs["skipped_rows"])
            description = f"{description}\n\n{left_out}" if description.strip() else left_out
    note = duplicates_note(keep_duplicates, n_pairs, repeats_kept if keep_duplicates else skipped + dropped_by_reader)
    if keep_duplicates and dropped_by_reader:
        note += f" {counted(dropped_by_reader, 'repeat')} had been dropped when the file was read."
    with write_session(engine) as session:  # the one short transaction that shows it
        hidden = session.get(Dataset, hidden_id)
        if hidden is None or hidden.import_state != "importing":
            raise ImportRejected(
                "The import stopped writing for too long and was cleared away; nothing was "
                "imported: import the file again."
            )
        scope = hidden_id if target_id is None else target_id
        n_queued = _queue_all(session, hidden_id, scope)
        if target_id is None:
            if session.scalar(select(Dataset.id).where(Dataset.name == name)) is not None:
                raise ImportRejected(f"A dataset named {name!r} already exists: choose another name or add to it.")
            text = f"{description}\n\n{note}" if description else note
            session.execute(
                update(Dataset)
                .where(Dataset.id == hidden_id)
                .values(
                    name=name,
                    description=text,
                    import_state=None,
                    import_seen=None,
                    created_at=utcnow(),
                    created_by=access.actor_name(),
                    label_kind=label_kind,
                    label_min=float(label_range[0]) if label_range else None,
                    label_max=float(label_range[1]) if label_range else None,
                )
            )
            dataset_id = hidden_id
        else:
            target = session.get(Dataset, target_id)
            if target is None or target.import_state is not None:
                raise ImportRejected(f"The dataset {name!r} was deleted during the import; nothing was imported.")
            pair_ids = list(session.scalars(select(Pair.id).where(Pair.dataset_id == hidden_id).order_by(Pair.id)))
            session.execute(update(Pair).where(Pair.dataset_id == hidden_id).values(dataset_id=target_id))
            session.execute(update(Annotator).where(Annotator.dataset_id == hidden_id).values(dataset_id=target_id))
            target.description = f"{target.description}\n\n{note}" if target.description else note
            if pair_ids:
                add_pairs_to_campaigns(session, target_id, pair_ids)
            session.execute(delete(Dataset).where(Dataset.id == hidden_id))
            dataset_id = target_id
    return ImportResult(
        dataset_id=dataset_id,
        dataset_name=name,
        n_pairs=n_pairs,
        n_skipped_duplicates=skipped,
        n_labels=n_labels,
        annotators=[n for n, _ in annotators.values()],
        n_queued=n_queued,
        n_kept_duplicates=repeats_kept,
    )


def _queue_all(session: Session, dataset_id: int, scope_id: int) -> int:
    """Queue every pair of a hidden import for each run in scope of the dataset it lands in (one
    INSERT ... SELECT per run: about 1.5 s per million pairs on SQLite). LLM-choice runs score only
    pairs a preference links: new pairs have none yet."""
    total, n_pairs = 0, None
    for run_id in runs_in_scope(session, scope_id):
        if session.scalar(select(ScoreRun.kind).where(ScoreRun.id == run_id)) in CHOICE_RUN_KINDS:
            continue
        session.execute(
            insert(WorkItem).from_select(
                ["run_id", "pair_id", "status", "attempts"],
                select(literal(run_id), Pair.id, literal("pending"), literal(0)).where(Pair.dataset_id == dataset_id),
            )
        )
        if n_pairs is None:  # counted (psycopg gives no row count for INSERT ... SELECT)
            n_pairs = session.scalar(select(func.count(Pair.id)).where(Pair.dataset_id == dataset_id)) or 0
        total += n_pairs
    return total


def discard_import(engine: Engine, dataset_id: int) -> None:
    """Remove a hidden import's pairs (their labels and any work go with them) in short transactions,
    then the hidden dataset itself; a dataset everyone sees is never touched."""
    while True:
        with write_session(engine) as session:
            if (
                session.scalar(select(Dataset.id).where(Dataset.id == dataset_id, Dataset.import_state.is_not(None)))
                is None
            ):
                return
            some = select(Pair.id).where(Pair.dataset_id == dataset_id).limit(CHUNK_ROWS).scalar_subquery()
            if not session.execute(delete(Pair).where(Pair.id.in_(some))).rowcount:
                session.execute(delete(Dataset).where(Dataset.id == dataset_id))
                return


def stale_imports(engine: Engine, older_than: datetime.timedelta = STALE_AFTER) -> list[tuple[int, int]]:
    """The hidden datasets of imports that have not written for ``older_than``, with their pairs: (id, pairs)."""
    with read_session(engine) as session:
        return [
            (int(i), int(n))
            for i, n in session.execute(
                select(
                    Dataset.id, select(func.count(Pair.id)).where(Pair.dataset_id == Dataset.id).scalar_subquery()
                ).where(Dataset.import_state.is_not(None), Dataset.import_seen < utcnow() - older_than)
            ).all()
        ]


def remove_stale_imports(engine: Engine, older_than: datetime.timedelta = STALE_AFTER) -> int:
    """Remove the hidden datasets of imports that have not written for `older_than` (a crash or a kill
    left them); an import still writing is left alone. Returns how many were removed."""
    with read_session(engine) as session:
        stale = list(
            session.scalars(
                select(Dataset.id).where(Dataset.import_state.is_not(None), Dataset.import_seen < utcnow() - older_than)
            )
        )
    for dataset_id in stale:
        discard_import(engine, dataset_id)
    return len(stale)


def _has_nul(value) -> bool:
    return isinstance(value, str) and "\x00" in value


def _refuse_nul(
    name, description, sources, hypotheses, external_ids, meta_records, annotator_columns, offset: int = 0
) -> None:
    """No store holds a NUL character in text (PostgreSQL refuses it, SQLite would keep it): refuse
    it here, before any write, with the same sentence on every store. Files read with
    pluie_core.io.load_pairs never get here with one: it removes them."""
    advice = "remove it (pluie_core.io.load_pairs removes NUL characters from files)."
    for what, value in (("dataset name", name), ("description", description)):
        if _has_nul(value):
            raise ImportRejected(f"The {what} contains a NUL character (0x00); {advice}")
    for column in annotator_columns:
        if _has_nul(str(column)):
            raise ImportRejected(f"The annotator column {str(column)!r} contains a NUL character (0x00); {advice}")
    for what, values in (("source", sources), ("hypothesis", hypotheses), ("pair id", external_ids)):
        for i, value in enumerate(values):
            if _has_nul(value):
                raise ImportRejected(f"Pair {offset + i + 1}: the {what} contains a NUL character (0x00); {advice}")
    for i, meta in enumerate(meta_records):
        if meta is not None:
            for key, value in meta.items():
                if _has_nul(str(key)) or _has_nul(value):
                    raise ImportRejected(
                        f"Pair {offset + i + 1}: the column {str(key)!r} contains a NUL character (0x00); {advice}"
                    )


def delete_dataset(engine: Engine, dataset_id: int) -> None:
    """Delete a dataset: its pairs go with it, and their labels, scores and queued work (the cascades),
    and their share of each run's compute time (db.queue.forget_compute_time), in one transaction. A
    worker scoring its pairs finds their leases gone between two pieces and moves on. An organiser's
    write (NotAllowed below), recorded in the activity log."""
    with write_session(engine) as session:
        access.require("organise", "delete a dataset")
        name = session.scalar(select(Dataset.name).where(Dataset.id == dataset_id))
        forget_compute_time(session, select(Pair.id).where(Pair.dataset_id == dataset_id))
        session.execute(delete(Dataset).where(Dataset.id == dataset_id))
        if name is not None:
            access.record(session, "delete dataset", "dataset", int(dataset_id), f"deleted the dataset “{name}”")


class RenameRefused(ValueError):
    """A dataset name that cannot be given; the message says why, in a sentence."""


def rename_dataset(engine: Engine, dataset_id: int, new_name: str) -> str:
    """Give a dataset another name (the names must stay unique: the files of PAWS-X, PAWS and STS-B
    are all called "dev"); its pairs, labels, scores and campaigns are untouched. The same rules as an
    import's name (db.limits.clean_name): not empty, at most NAME_LENGTH characters, no control character. A
    name another dataset has is refused with a sentence, before and, for two renames at the same
    moment, by the store's unique index. Returns the name given. An organiser's write (NotAllowed
    below), recorded in the activity log."""
    from sqlalchemy.exc import IntegrityError

    access.require("organise", "rename a dataset")
    if not str(new_name or "").strip():
        raise RenameRefused("Give the dataset a name.")
    if _has_nul(new_name):  # the sentence the Pairs page's rename has given since it exists
        raise RenameRefused("The dataset name contains a NUL character (0x00): remove it.")
    name = clean_name("The dataset name", new_name, RenameRefused)
    taken = f"Another dataset is named “{name}” already: choose another name."
    try:
        with write_session(engine) as session:
            dataset = session.get(Dataset, int(dataset_id))
            if dataset is None or dataset.import_state is not None:
                raise RenameRefused("This dataset no longer exists (it was deleted).")
            if dataset.name != name:
                if session.scalar(select(Dataset.id).where(Dataset.name == name, Dataset.id != dataset.id)) is not None:
                    raise RenameRefused(taken)
                access.record(session, "rename dataset", "dataset", dataset.id, f"renamed “{dataset.name}” to “{name}”")
                dataset.name = name
                session.flush()
    except IntegrityError:
        raise RenameRefused(taken) from None
    return name


def list_datasets(engine: Engine) -> list[Dataset]:
    with read_session(engine) as session:
        return list(session.scalars(select(Dataset).where(VISIBLE).order_by(Dataset.name)))


OVERVIEW_COLUMNS = [
    "id",
    "dataset",
    "format",
    "pairs",
    "gold labels",
    "label kind",
    "labelled pairs",
    "labels",
    "scores",
    "scores queued",
    "imported",
    "imported by",
    "description",
]


def _training_labels(session) -> pd.Series:
    """How many training-trial labels each pair has (only pairs with some): a few per campaign, read
    in one pass over the labels' rows (no index holds is_training)."""
    pair_ids = session.connection().execute(select(Label.pair_id).where(Label.is_training.is_(True))).scalars().all()
    return pd.Series(pair_ids, dtype="int64").value_counts()


def _contiguous_ranges(session) -> dict[int, tuple[int, int, int]]:
    """(first id, last id, pairs) of each dataset whose pair ids are one unbroken run, as an import
    writes them: every id from the first to the last is one of its pairs, so its labels, scores and
    work are counted as ranges of the pair_id indexes. Read from the dataset_id index alone."""
    found = {}
    for dataset_id in session.scalars(select(Dataset.id).where(VISIBLE)):
        of_dataset = Pair.dataset_id == dataset_id  # three seeks in its index (one GROUP BY over all: 0.5 s at 1M)
        first, last, n = session.execute(
            select(
                select(func.min(Pair.id)).where(of_dataset).scalar_subquery(),
                select(func.max(Pair.id)).where(of_dataset).scalar_subquery(),
                select(func.count()).select_from(Pair).where(of_dataset).scalar_subquery(),
            )
        ).one()
        if n and n == last - first + 1:
            found[int(dataset_id)] = (int(first), int(last), int(n))
    return found


def datasets_overview(engine: Engine) -> pd.DataFrame:
    """One row per dataset: size, gold labels, how far labelling and scoring have gone.

    Counted from indexes: a dataset whose pairs have consecutive ids (one import, or imports with no
    other dataset's between them) has its labels, scores and queued work counted as ranges of the
    pair_id indexes, its gold labels over its rows' id range; training-trial labels (the only ones
    not counted) are read once and taken off. About a second at 1,000,000 pairs and 3,000,000 labels,
    where joining every label and score to its pair took seven (bench/pages.py). A dataset whose ids
    interleave with another's (added to after another import) is counted through the joins."""
    live_runs = select(ScoreRun.id).where(ScoreRun.status.in_(("active", "paused")))
    with read_session(engine) as session:
        datasets = session.execute(
            select(
                Dataset.id,
                Dataset.name,
                Dataset.source_format,
                Dataset.label_kind,
                Dataset.created_at,
                Dataset.created_by,
                Dataset.description,
            )
            .where(VISIBLE)
            .order_by(Dataset.name)
        ).all()
        ranges = _contiguous_ranges(session)
        training = _training_labels(session)
        # training labels of a pair that has no other label: the pair is not labelled
        only_training = pd.Series(dtype="int64")
        if len(training):
            totals = dict(
                session.execute(
                    select(Label.pair_id, func.count())
                    .where(Label.pair_id.in_([int(p) for p in training.index]))
                    .group_by(Label.pair_id)
                ).all()
            )
            only_training = training[[totals.get(int(p), 0) == n for p, n in training.items()]]
        figures: dict[int, dict[str, int]] = {}
        for dataset_id, (first, last, n_pairs) in ranges.items():
            labels = (
                select(Label.pair_id, func.count().label("n"))
                .where(Label.pair_id.between(first, last))
                .group_by(Label.pair_id)
                .subquery()
            )
            labelled, n_labels = session.execute(select(func.count(), func.coalesce(func.sum(labels.c.n), 0))).one()
            in_range = training[(training.index >= first) & (training.index <= last)]
            alone = only_training[(only_training.index >= first) & (only_training.index <= last)]
            figures[dataset_id] = {
                "pairs": n_pairs,
                "gold labels": session.scalar(select(func.count(Pair.gold_label)).where(Pair.id.between(first, last))),
                "labelled pairs": int(labelled) - len(alone),
                "labels": int(n_labels) - int(in_range.sum()),
                # failed and cancelled runs leave the figures: their pairs will not be scored unless retried
                "scores": session.scalar(
                    select(func.count()).where(Score.run_id.in_(live_runs), Score.pair_id.between(first, last))
                ),
                "scores queued": session.scalar(
                    select(func.count()).where(WorkItem.run_id.in_(live_runs), WorkItem.pair_id.between(first, last))
                ),
            }
        others = [int(d.id) for d in datasets if int(d.id) not in ranges]
        if others:
            figures.update(_joined_figures(session, others, live_runs))
    rows = []
    for ds_id, name, fmt, kind, created, created_by, description in datasets:
        found = figures.get(int(ds_id), {})
        rows.append(
            {
                "id": ds_id,
                "dataset": name,
                "format": fmt,
                "pairs": found.get("pairs", 0),
                "gold labels": found.get("gold labels", 0),
                "label kind": kind or "",
                "labelled pairs": found.get("labelled pairs", 0),
                "labels": found.get("labels", 0),
                "scores": found.get("scores", 0),
                "scores queued": found.get("scores queued", 0),
                "imported": created,
                "imported by": created_by or "",
                "description": description or "",
            }
        )
    return pd.DataFrame(rows, columns=OVERVIEW_COLUMNS)


def _joined_figures(session, dataset_ids: list[int], live_runs) -> dict[int, dict[str, int]]:
    """datasets_overview's figures of datasets whose pair ids are not one run, through joins to the pairs."""

    def per_dataset(count, joins, condition=None):
        query = select(Pair.dataset_id, count).where(Pair.dataset_id.in_(dataset_ids))
        for target, on in joins:
            query = query.join(target, on)
        if condition is not None:
            query = query.where(condition)
        return dict(session.execute(query.group_by(Pair.dataset_id)).all())

    sizes = session.execute(
        select(Pair.dataset_id, func.count(Pair.id), func.count(Pair.gold_label))
        .where(Pair.dataset_id.in_(dataset_ids))
        .group_by(Pair.dataset_id)
    ).all()
    label_counts = session.execute(
        select(Pair.dataset_id, func.count(func.distinct(Label.pair_id)), func.count(Label.id))
        .join(Label, Label.pair_id == Pair.id)
        .where(Pair.dataset_id.in_(dataset_ids), counted_label())
        .group_by(Pair.dataset_id)
    ).all()
    queued = per_dataset(
        func.count(WorkItem.id), [(WorkItem, WorkItem.pair_id == Pair.id)], WorkItem.run_id.in_(live_runs)
    )
    scored = per_dataset(func.count(Score.id), [(Score, Score.pair_id == Pair.id)], Score.run_id.in_(live_runs))
    figures = {int(d): {"pairs": int(n), "gold labels": int(g)} for d, n, g in sizes}
    for dataset_id, labelled, n_labels in label_counts:
        figures[int(dataset_id)].update({"labelled pairs": int(labelled), "labels": int(n_labels)})
    for dataset_id, found in figures.items():
        found["scores"], found["scores queued"] = scored.get(dataset_id, 0), queued.get(dataset_id, 0)
    return figures


def store_totals(engine: Engine) -> dict[str, int]:
    """The store's datasets, pairs, labels (training-trial labels aside: one pass over the labels' rows,
    0.4 s at 3,000,000) and scores (counted from indexes)."""
    with read_session(engine) as session:
        return {
            "datasets": session.scalar(select(func.count(Dataset.id)).where(VISIBLE)) or 0,
            # all of them less a hidden import's (a seek in the dataset_id index): the count stays an index's
            "pairs": (session.scalar(select(func.count(Pair.id))) or 0)
            - (session.scalar(select(func.count(Pair.id)).where(Pair.dataset_id.in_(HIDDEN_DATASETS))) or 0),
            "labels": (session.scalar(select(func.count(Label.id)).where(counted_label())) or 0)
            - (
                session.scalar(
                    select(func.count(Label.id)).where(
                        counted_label(), Label.pair_id.in_(select(Pair.id).where(Pair.dataset_id.in_(HIDDEN_DATASETS)))
                    )
                )
                or 0
            ),
            "scores": session.scalar(select(func.count(Score.id))) or 0,
        }


def import_file(
    engine: Engine,
    path_or_buffer,
    name: Optional[str] = None,
    *,
    format: str = "auto",
    columns: Optional[dict] = None,
    annotator_scale: str = "raw",
    append: bool = False,
    description: str = "",
    keep_duplicates: bool = False,
) -> ImportResult:
    """Read a pair file with pluie_core.load_pairs and import it; the dataset is named after the
    file unless a name is given. `keep_duplicates` keeps every row, exact repeats included (see
    import_pairs). Raises PairFileError for a bad file, ImportRejected when the store refuses it;
    either way nothing is stored."""
    from pathlib import Path

    from pluie_core.io import load_pairs

    pairs = load_pairs(path_or_buffer, format=format, columns=columns, keep_duplicates=keep_duplicates)
    if name is None:
        name = Path(str(getattr(path_or_buffer, "name", path_or_buffer))).stem
    return import_pairs(
        engine,
        name,
        pairs,
        description=description,
        annotator_scale=annotator_scale,
        append=append,
        keep_duplicates=keep_duplicates,
    )
