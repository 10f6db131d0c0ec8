"""The scoring worker: claims queued (run, pair) items from the store, scores them with
pluie_core, writes the scores back. Thin glue: the queue lives in db.queue, the metrics in
pluie_core.

    python worker.py [--db URL] [--once | --exit-when-idle] [--claim-size N] [--batch-size N] [--device cuda:0]

Several workers may share one queue (several GPUs, or several machines on PostgreSQL). A worker
that is killed loses nothing: its leases expire and another worker (or its restart) takes the
items again; scores are written only under a held lease, so no pair is scored twice.
SIGTERM / SIGINT: the piece in hand is finished and written, the rest of the claim handed back, then
the worker exits.

Runs are served in turn (db.queue.claim_batch): each claim goes to the next run with work after the one
claimed last, so a fast baseline and a slow judge both progress; after a long model load (over
CLAIM_SECONDS / LOAD_TURNS) the worker stays on that run for LOAD_TURNS times the load. A claim is
sized for the run it holds: about CLAIM_SECONDS of work at that run's own rate (FIRST_CLAIM pairs
while its rate is unknown).

The model never waits for the store: the worker sorts a claim's pairs by length and feeds the metric
pieces of about PIECE_SECONDS of work (whole batches of the scorer, which cuts them into its own
batches, bounded by pairs and tokens); each piece's scores are written at once by a store thread
while the model scores the next piece, and the next claim is fetched while it scores this one
(`--no-overlap`: one after the other). Before each piece the worker checks that it still holds the
claim's items and that their run is still active: pairs or a run deleted, a run paused or cancelled,
items taken over by another worker are dropped at once (what it no longer owns is not handed back).
Every item the worker holds, the claim fetched ahead included, has its lease renewed until it is
written or handed back.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import sys
import threading
import time
import uuid
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

REPO = Path(__file__).resolve().parent
if str(REPO) not in sys.path:  # `python /path/to/worker.py` from another directory
    sys.path.insert(0, str(REPO))

from db import access, explanations, init_db, queue
from db.engine import database_url
from db.models import ScoreRun
from db.runs import ensure_default_runs
from lab.places import data_dir
from pluie_core.run_kinds import PREFERENCE_ITEMS, RUN_KINDS
from worker_launch import alive as _alive

log = logging.getLogger("pluie.worker")

DEFAULT_LEASE_SECONDS = 120.0
# Automatic claims: about CLAIM_SECONDS of work at the run's measured rate, within these bounds
# (a run's first claim, before its rate is known, is FIRST_CLAIM pairs).
CLAIM_SECONDS = 6.0
FIRST_CLAIM = 32
# A claim is scored in pieces of about PIECE_SECONDS of work at the run's rate (whole batches of the
# scorer), each written as soon as it is scored: the Scoring page's count moves every few seconds, a
# lost lease or a paused run is noticed between two pieces, and a killed worker loses one piece at most.
PIECE_SECONDS = 2.0
# After loading a model (not in the cache) for longer than CLAIM_SECONDS / LOAD_TURNS, the worker keeps
# to that run for LOAD_TURNS times the load's duration before taking its turn among the others: serving
# in turn more models than MODEL_CACHE_SIZE spends at most about 1 / (LOAD_TURNS + 1) of the time loading.
LOAD_TURNS = 4.0
MIN_CLAIM = 16
MAX_CLAIM = 4096
# a claim of at least SORT_BATCHES of the scorer's batches, as long as that is at most SORT_SECONDS of work: the
# scorer sorts a claim's pairs by length before cutting its batches, and 16 pairs of MRPC drawn at random pad
# ~40% more tokens than 16 neighbours in a sort of 128 (bench/worker.py --model demo: the worker at 70% of
# the scorer alone with claims of 16-32 pairs, 92% with 128)
SORT_BATCHES = 8
SORT_SECONDS = 30.0
HEARTBEAT_SECONDS = 5.0
# how often the worker refits adaptive overlap's model of the campaigns whose labels changed (db.adaptive)
REFIT_SECONDS = 5.0
WEBHOOK_SECONDS = 2.0  # the webhooks' sender looks for due deliveries this often
# Distinct models kept loaded; a worker serving runs of more models reloads past this.
MODEL_CACHE_SIZE = 2

# (values, details per pair or None)
ScoreFn = Callable[[list[str], list[str]], tuple[list[float], Optional[list[dict[str, Any]]]]]


class ModelLoadError(RuntimeError):
    """The run's metric cannot be set up (bad model path, multi-token answers...)."""


def resolve_device(device: Optional[str]) -> str:
    """The GPU when there is one, else the CPU, unless a device is named."""
    if device and device != "auto":
        return device
    import torch

    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


@dataclass
class Metric:
    """A run's scoring function, and the model weights it holds (shared by runs of one model)."""

    score: ScoreFn
    model_key: Optional[tuple] = None
    weights: Optional[tuple] = None  # (model, tokenizer)
    batch: Optional[Callable[[], Optional[int]]] = None  # the scorer's pairs per batch now (pieces are whole batches)
    scorer: Any = None  # a PLUIE run's PluieScorer: "why this score" (explain_requested) uses it
    in_flight: Optional[int] = None  # a model on a server: the pairs its requests in flight hold (a claim's step)


def load_metric(
    run: ScoreRun, device: str, batch_size: Optional[int], loaded: Sequence[Metric] = (), engine=None
) -> Metric:
    """The scoring function of a run, built by its kind's loader (``RunKind.loader`` in
    pluie_core.run_kinds, a key of LOADERS): a baseline, an LLM judge, or a PLUIE scorer, whose model
    is loaded now unless one of the `loaded` metrics already holds it. ``engine``: the store, which an
    LLM-choice run reads its pairs' partners from."""
    record = RUN_KINDS.get(run.kind)
    if record is None:
        raise ModelLoadError(f"Unknown run kind {run.kind!r}: this worker scores {', '.join(RUN_KINDS)}.")
    return LOADERS[record.loader](run, device, batch_size, loaded, engine)


def _shared_weights(run: ScoreRun, device: str, loaded: Sequence[Metric]) -> tuple[dict, tuple, Optional[tuple]]:
    """(placement options, model key, weights of a `loaded` metric of the same model or None): runs of one
    model (directions, templates, PLUIE and judges) share its loaded weights."""
    placement = {k: v for k, v in (run.options or {}).items() if k in ("device_map", "quantization") and v}
    model_key = (run.model, run.device or device, run.dtype, placement.get("device_map"), placement.get("quantization"))
    return placement, model_key, next((m.weights for m in loaded if m.model_key == model_key), None)


def load_baseline(
    run: ScoreRun, device: str, batch_size: Optional[int], loaded: Sequence[Metric] = (), engine=None
) -> Metric:
    """A baseline run: the metric of pluie_core.baselines.BASELINES that ``run.model`` names, with the
    run's options (its model loaded now, so that a bad one fails the run)."""
    registry = baseline_registry()
    try:
        baseline = registry[run.model]
    except KeyError:
        raise ModelLoadError(f"Unknown baseline {run.model!r}; known: {', '.join(sorted(registry))}.")
    try:  # the run's options (e.g. its model), checked before the first batch
        options = baseline.check_options(run.options)
        if any(o.name == "model" for o in baseline.options):  # load its model now (cached): a bad one fails the run
            baseline.function(["."], ["."], **options)
    except Exception as exc:  # not a model of the right kind, out of memory, a missing package...
        from pluie_core.hub import pickle_refusal  # a pickle torch refuses: our sentence, not its advice

        refused = pickle_refusal(str((run.options or {}).get("model") or run.model), exc)
        if refused is None and isinstance(exc, ValueError):
            refused = _first_line(exc)
        raise ModelLoadError(
            refused or f"The {run.model} baseline could not load its model: {_first_line(exc)}"
        ) from exc
    return Metric(
        lambda sources, hypotheses: ([float(v) for v in baseline.function(sources, hypotheses, **options)], None)
    )


SERVER_RETRIES = 3  # a request to a judge's server: 0.5 + 1 + 2 s of back-off, then the claim waits (ServerAway)


class ServerAway(RuntimeError):
    """The judge's server did not answer (pluie_core.endpoint.EndpointError, transient): the claim goes back
    uncounted and the worker waits, the run stays active."""


def _directed(one_direction, direction: str):
    """A run's scoring function in its direction from a one-direction scorer returning (values, details)."""

    def score(sources, hypotheses):
        if direction == "forward":
            return one_direction(sources, hypotheses)
        if direction == "backward":
            return one_direction(hypotheses, sources)
        # symmetric: the mean of both directions, each kept in the details
        forward, _ = one_direction(sources, hypotheses)
        backward, _ = one_direction(hypotheses, sources)
        return [(f + b) / 2 for f, b in zip(forward, backward)], [
            {"forward": f, "backward": b} for f, b in zip(forward, backward)
        ]

    return score


def _logprob_details(scorer):
    first, second = scorer.answers

    def one_direction(sources, hypotheses):
        values, logprobs = scorer.score(sources, hypotheses, return_logprobs=True)
        details = [{f"logp {first.strip()}": float(a), f"logp {second.strip()}": float(b)} for a, b in logprobs]
        return [float(v) for v in values], details

    return one_direction


def load_endpoint_pluie(run: ScoreRun) -> Metric:
    """A PLUIE run whose model is a server (its options' endpoint): pluie_core.endpoint.EndpointScorer, the same
    prompts and scores as in process, the server asked first. A server that does not answer is ServerAway (the
    claim waits for it); one that answers but cannot score the run fails it with its sentence."""
    from pluie_core import chat_render
    from pluie_core.endpoint import PAIRS_PER_REQUEST, EndpointError, EndpointScorer

    options = run.options or {}
    try:
        scorer = EndpointScorer(
            options["endpoint"],
            run.model,
            template=run.template_spec or run.template or "fs-direct",
            answers=tuple(run.answers) if run.answers else None,
            api_key_env=options.get("api_key_env"),
            tokenizer=options.get("tokenizer"),
            concurrency=int(options.get("concurrency") or 8),
            retries=SERVER_RETRIES,
            backoff=0.5,
            render_seconds=chat_render.RENDER_SECONDS,
        )
    except EndpointError as exc:
        if exc.transient:
            raise ServerAway(str(exc)) from exc
        raise ModelLoadError(str(exc)) from exc
    except ValueError as exc:  # PluieError, TemplateError: a sentence already
        raise ModelLoadError(_first_line(exc)) from exc
    return Metric(
        _directed(_logprob_details(scorer), run.direction),
        None,
        None,
        batch=lambda: scorer.concurrency * PAIRS_PER_REQUEST,
        scorer=scorer,
        in_flight=scorer.concurrency * PAIRS_PER_REQUEST,
    )


def load_pluie(
    run: ScoreRun, device: str, batch_size: Optional[int], loaded: Sequence[Metric] = (), engine=None
) -> Metric:
    """A PLUIE run: a PluieScorer of the run's model, template and answer words, in its direction; or, where
    the run's options name a server, the same through it (load_endpoint_pluie)."""
    if (run.options or {}).get("endpoint"):
        return load_endpoint_pluie(run)
    placement, model_key, weights = _shared_weights(run, device, loaded)
    try:
        from pluie_core import chat_render
        from pluie_core.scorer import PluieScorer

        scorer = PluieScorer(
            weights or run.model,  # (model, tokenizer) keeps its device and dtype
            template=run.template_spec or run.template or "fs-direct",
            answers=tuple(run.answers) if run.answers else None,
            device=None if weights else run.device or device,
            dtype=None if weights else run.dtype,
            batch_size=run.batch_size or batch_size,
            render_seconds=chat_render.RENDER_SECONDS,  # the model's chat template is its code: bounded, in a child
            **({} if weights else placement),  # a sharded / quantised model loads once, shared by its runs
        )
    except ValueError as exc:  # PluieError / TemplateError: already a sentence for the user
        raise ModelLoadError(_first_line(exc)) from exc
    except Exception as exc:  # anything else: not a causal LM, out of memory, a missing package...
        raise ModelLoadError(f"The model {run.model!r} could not be loaded: {_first_line(exc)}") from exc

    return Metric(
        _directed(_logprob_details(scorer), run.direction),
        model_key,
        (scorer.model, scorer.tokenizer),
        batch=lambda: scorer.batch_size or scorer._auto_batch,
        scorer=scorer,
    )


def load_judge(
    run: ScoreRun, device: str, batch_size: Optional[int], loaded: Sequence[Metric] = (), engine=None
) -> Metric:
    """An output-based LLM judge run (pluie_core.judges): the parsed answer is the value (None when
    it cannot be parsed), the generated text goes to the details. An LLM-choice run scores each pair
    against its partner in the run's preference items (choice_metric)."""
    from pluie_core import chat_render
    from pluie_core.judges import LLMJudge

    choosing = RUN_KINDS[run.kind].compares == PREFERENCE_ITEMS
    if choosing and engine is None:
        raise ModelLoadError("An LLM-choice run reads its preference items from the store: load it with the engine.")
    if (run.options or {}).get("endpoint"):  # the model on a server: the same prompts and parsing, its answers
        judge, model_key, weights = load_endpoint_judge(run), None, None
        batch = lambda: judge.batch_size  # noqa: E731 (requests in flight × prompts per request)
    else:
        placement, model_key, weights = _shared_weights(run, device, loaded)
        try:
            judge = LLMJudge(
                weights or run.model,
                kind=RUN_KINDS[run.kind].judge,
                template=run.template_spec if run.template == "custom" else run.template or None,
                device=None if weights else run.device or device,
                dtype=None if weights else run.dtype,
                batch_size=run.batch_size or batch_size,
                render_seconds=chat_render.RENDER_SECONDS,
                **({} if weights else placement or {}),  # a sharded / quantised model loads once
            )
        except ValueError as exc:  # JudgeError / PluieError: already a sentence for the user
            raise ModelLoadError(_first_line(exc)) from exc
        except Exception as exc:
            raise ModelLoadError(f"The model {run.model!r} could not be loaded: {_first_line(exc)}") from exc
        weights = (judge.model, judge.tokenizer)
        batch = lambda: judge.batch_size or judge._auto_batch  # noqa: E731
    in_flight = judge.batch_size if model_key is None and weights is None else None  # on a server
    if choosing:
        return Metric(choice_metric(run, judge, engine), model_key, weights, batch, in_flight=in_flight)

    def one_direction(sources, hypotheses):
        result = judge.score(sources, hypotheses)
        return [None if v != v else float(v) for v in result.values], result.details()

    def score_judge(sources, hypotheses):
        if run.direction != "symmetric":
            return one_direction(*((hypotheses, sources) if run.direction == "backward" else (sources, hypotheses)))
        forward, forward_details = one_direction(sources, hypotheses)
        backward, backward_details = one_direction(hypotheses, sources)
        values = [None if f is None or b is None else (f + b) / 2 for f, b in zip(forward, backward)]
        details = [
            {"forward": f, "backward": b, "answer forward": fd["answer"], "answer backward": bd["answer"]}
            for f, b, fd, bd in zip(forward, backward, forward_details, backward_details)
        ]
        return values, details

    return Metric(score_judge, model_key, weights, batch, in_flight=in_flight)


def load_endpoint_judge(run: ScoreRun):
    """An LLM judge run whose model is a server (its options' endpoint): pluie_core.endpoint.EndpointJudge's
    LLMJudge (the same prompts and parsing as in process, the answers generated by the server), the server
    asked first; its ``batch_size`` is the run's requests in flight × prompts per request. A server that does
    not answer is ServerAway (the claim waits for it); one that cannot judge fails the run with its sentence."""
    from pluie_core import chat_render
    from pluie_core.endpoint import PAIRS_PER_REQUEST, EndpointError, EndpointJudge

    options = run.options or {}
    try:
        served = EndpointJudge(
            options["endpoint"],
            run.model,
            kind=RUN_KINDS[run.kind].judge,
            template=run.template_spec if run.template == "custom" else run.template or None,
            api_key_env=options.get("api_key_env"),
            tokenizer=options.get("tokenizer"),
            concurrency=int(options.get("concurrency") or 8),
            retries=SERVER_RETRIES,
            backoff=0.5,
            render_seconds=chat_render.RENDER_SECONDS,
        )
    except EndpointError as exc:
        if exc.transient:
            raise ServerAway(str(exc)) from exc
        raise ModelLoadError(str(exc)) from exc
    except ValueError as exc:  # JudgeError, TemplateError: a sentence already
        raise ModelLoadError(_first_line(exc)) from exc
    judge = served.judge
    judge.batch_size = served.concurrency * PAIRS_PER_REQUEST
    return judge


def choice_metric(run: ScoreRun, judge, engine) -> ScoreFn:
    """LLM-choice on ordinary pairs: the pair (source, X) that a preference item links to (source, Y)
    is asked "X (A) or Y (B)?"; value 1 when X is chosen, 0 when Y is, None when unparsed (with several
    partners: the share of them X wins). The partners are read from the store now, and again when a
    pair is not among them (preferences imported since)."""
    from db.preferences import preference_partners

    partners = preference_partners(engine, run.id)

    def score_choice(sources, hypotheses):
        nonlocal partners
        keys = list(zip(sources, hypotheses))
        if any(k not in partners for k in keys):
            partners = preference_partners(engine, run.id)
        lonely = next((k for k in keys if k not in partners), None)
        if lonely is not None:
            raise ValueError(
                f"the pair ({lonely[0][:60]!r}, {lonely[1][:60]!r}) is not part of any preference item: "
                "an LLM-choice run scores only the candidates of preference data"
            )
        result = judge.prefer_first(sources, hypotheses, [partners[k] for k in keys])
        details = [
            {
                "answer": text,
                "parsed": answer is not None,
                "against": partners[k][0] if len(partners[k]) == 1 else partners[k],
            }
            for text, answer, k in zip(result.texts, result.answers, keys)
        ]
        return [None if v != v else float(v) for v in result.values], details

    return score_choice


def baseline_registry() -> dict[str, Callable]:
    from pluie_core.baselines import BASELINES

    return BASELINES


# RunKind.loader -> the function that builds a run's Metric: (run, device, batch_size, loaded, engine)
LOADERS: dict[str, Callable[..., Metric]] = {"pluie": load_pluie, "baseline": load_baseline, "judge": load_judge}


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:1000]


class _LeaseKeeper(threading.Thread):
    """Renews the leases of the claims the worker holds and reports the heartbeat while it scores."""

    def __init__(self, worker: "ScoringWorker"):
        super().__init__(daemon=True, name="lease-keeper")
        self.worker = worker
        self.halt = threading.Event()

    def run(self) -> None:
        w = self.worker
        interval = min(HEARTBEAT_SECONDS, w.lease_seconds / 3)
        while not self.halt.wait(interval):
            try:
                item_ids = w.held_item_ids()  # the claim being scored, the one fetched ahead, the pieces being written
                if item_ids:
                    held = queue.renew_lease(w.engine, w.worker_id, item_ids, w.lease_seconds)
                    if held < len(item_ids):  # deleted, or taken over after an expiry: forgotten, said once
                        still = queue.held_items(w.engine, w.worker_id, item_ids, active_only=False)
                        lost = [i for i in item_ids if i not in still]
                        w.forget_items(lost)
                        if lost:
                            log.warning(
                                "lost the lease on %d items (their pairs or run deleted, or another "
                                "worker took them): they are no longer scored here",
                                len(lost),
                            )
                explaining = w.explaining
                if explaining is not None:  # "why this score" being computed: its lease too
                    explanations.renew_explanation(w.engine, w.worker_id, explaining, w.lease_seconds)
                batch = w.current_batch
                queue.heartbeat(
                    w.engine,
                    w.worker_id,
                    current_run_id=batch.run_id if batch else (w._last_run_id if item_ids else None),
                )
            except Exception as exc:  # the store is briefly unreachable: try again next tick
                log.warning("lease renewal failed: %s", _first_line(exc))


class _AdaptiveRefitter(threading.Thread):
    """Refits adaptive overlap's model of every open adaptive campaign whose labels changed
    (db.adaptive.refit_due) every ``interval`` seconds, beside the scoring: an answer's transaction reads
    the last fit, so the decision "one more annotator" follows the campaign's model within seconds."""

    def __init__(self, worker: "ScoringWorker", interval: float):
        super().__init__(daemon=True, name="adaptive-refit")
        self.worker = worker
        self.interval = interval
        self.halt = threading.Event()

    def run(self) -> None:
        from db import adaptive  # pandas and the aggregation models: only a worker that refits needs them

        while not self.halt.wait(self.interval):
            try:
                for refit in adaptive.refit_due(self.worker.engine):
                    log.info(
                        "campaign %d: adaptive model refitted on %d labels (%s); %d pairs given one more "
                        "annotator, %d unserved slots taken back",
                        refit.campaign_id,
                        refit.n_labels,
                        "decides" if refit.decides else "too few labels per annotator to decide",
                        refit.raised,
                        refit.lowered,
                    )
            except Exception as exc:  # the store is briefly unreachable: try again next tick
                log.warning("adaptive refit failed: %s", _first_line(exc))


class _WebhookSender(threading.Thread):
    """Posts the webhooks' deliveries (db.webhooks.run_sender) every ``interval`` seconds, beside the scoring: a
    slow or failing receiver holds only this thread. When the worker stops, one last turn tells what the last
    claims finished (a run scored by ``--exit-when-idle``), bounded by the join's wait."""

    def __init__(self, worker: "ScoringWorker", interval: float):
        super().__init__(daemon=True, name="webhooks")
        self.worker = worker
        self.interval = interval
        self.halt = threading.Event()

    def run(self) -> None:
        from db import webhooks

        webhooks.run_sender(self.worker.engine, self.halt, every=self.interval, last_turn=True)


class ScoringWorker:
    def __init__(
        self,
        engine,
        *,
        worker_id: Optional[str] = None,
        batch_size: Optional[int] = None,
        claim_size: Optional[int] = None,
        overlap: bool = True,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        device: Optional[str] = None,
        poll_seconds: float = 2.0,
        run_ids: Optional[Sequence[int]] = None,
        parent_pid: Optional[int] = None,
        refit_seconds: Optional[float] = REFIT_SECONDS,
        webhook_seconds: Optional[float] = WEBHOOK_SECONDS,
    ):
        self.engine = engine
        self.worker_id = worker_id or f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.batch_size = batch_size  # the scorer's pairs per forward pass (None: its automatic bounds)
        self.claim_size = claim_size  # pairs per claim (None: about CLAIM_SECONDS of work)
        self.overlap = overlap
        self.lease_seconds = lease_seconds
        self.explaining: Optional[int] = None  # the "why this score" request being computed (its lease is renewed)
        self.device = resolve_device(device)
        self.poll_seconds = poll_seconds
        self.run_ids = list(run_ids) if run_ids else None
        self.parent_pid = parent_pid
        self.refit_seconds = refit_seconds  # adaptive overlap's refits (None: this worker does none)
        self.webhook_seconds = webhook_seconds  # the webhooks' sender's turn (None: this worker sends none)
        self.current_batch: Optional[queue.Batch] = None
        self.pairs_done = 0
        self.pairs_per_second: Optional[float] = None
        self._metrics: OrderedDict[int, Metric] = OrderedDict()
        self._last_run_id: Optional[int] = None  # the run scored last
        self._last_claimed: Optional[int] = None  # the run of the latest claim (the next claim goes to the next run)
        self._stay: tuple[Optional[int], float] = (None, 0.0)  # (run, until): keep to a run whose model just loaded
        self._stop = threading.Event()
        self._rates: dict[int, float] = {}  # run id -> pairs / s of its scoring (claim and piece sizes)
        self._held: set[int] = set()  # items claimed and not yet written, handed back or lost
        self._held_lock = threading.Lock()
        self._store: Any = _Inline()  # where store work runs: a one-thread executor when overlapping
        self._ahead: Optional[Future] = None  # the next claim, fetched while the model scores
        self._writes: list[Future] = []

    def request_stop(self, *_args) -> None:
        self._stop.set()

    @property
    def stopping(self) -> bool:
        if self.parent_pid and not _alive(self.parent_pid):
            self._stop.set()  # started by the app, which has gone: stop with it
        return self._stop.is_set()

    def run(self, *, once: bool = False, exit_when_idle: bool = False) -> int:
        """Serve the queue until stopped (or after one batch / when nothing is left). Returns the
        number of pairs scored."""
        queue.register_worker(self.engine, self.worker_id, socket.gethostname(), os.getpid(), self.device)
        keeper = _LeaseKeeper(self)
        keeper.start()
        refitter = _AdaptiveRefitter(self, self.refit_seconds) if self.refit_seconds else None
        if refitter is not None:
            refitter.start()
        sender = _WebhookSender(self, self.webhook_seconds) if self.webhook_seconds else None
        if sender is not None:
            sender.start()
        if self.overlap:
            self._store = ThreadPoolExecutor(max_workers=1, thread_name_prefix="store")
        log.info(
            "worker %s started on %s (%s)",
            self.worker_id,
            self.device,
            "store work overlapped with scoring" if self.overlap else "store work between batches",
        )
        try:
            while not self.stopping:
                try:
                    self.explain_requested()  # between claims: a page waits on these
                    scored = self.step(prefetch=self.overlap and not once)
                except Exception as exc:  # e.g. the store is briefly unreachable: report, wait, go on
                    log.exception("batch failed")
                    self._report_error(f"{type(exc).__name__}: {_first_line(exc)}")
                    self._stop.wait(self.poll_seconds)
                    continue
                if once:
                    break
                if scored is None:
                    if (
                        exit_when_idle
                        and queue.pending_count(self.engine, self.run_ids) == 0
                        and explanations.explanations_waiting(self.engine, self.run_ids) == 0
                    ):
                        break
                    self._stop.wait(self.poll_seconds)
        finally:
            try:
                self._finish_store_work()
            finally:
                keeper.halt.set()
                keeper.join(timeout=10)
                if refitter is not None:
                    refitter.halt.set()
                    refitter.join(timeout=30)
                if sender is not None:
                    sender.halt.set()
                    sender.join(timeout=15)
                queue.stop_worker(self.engine, self.worker_id)
                log.info("worker %s stopped after %d pairs", self.worker_id, self.pairs_done)
        return self.pairs_done

    def _finish_store_work(self) -> None:
        """On the way out: the scores in flight are written, and every claim not scored (the one
        fetched ahead, or one interrupted) is handed back at once."""
        if self._ahead is not None:
            try:
                self._ahead.result()
            except Exception:
                pass  # the claim failed: nothing held from it
            self._ahead = None
        self._store.shutdown(wait=True)
        self._store = _Inline()
        leftover = self.held_item_ids()
        if leftover:
            queue.release_batch(self.engine, self.worker_id, leftover)
        self.forget_items(leftover)
        self.current_batch = None

    def _report_error(self, message: str) -> None:
        try:
            if self.current_batch is not None:  # its items not written yet (those written are done: untouched)
                queue.release_batch(self.engine, self.worker_id, self.current_batch.item_ids, error=message)
                self.forget_items(self.current_batch.item_ids)
                self.current_batch = None
            queue.heartbeat(self.engine, self.worker_id, last_error=message)
        except Exception:
            log.exception("could not report the error to the store")

    # ------------------------------------------------------------------ why this score
    def explain_requested(self) -> int:
        """Compute the "why this score" requests waiting (db.explanations), those of runs whose model is
        loaded first, loading a run's model as a claim of it would: each pair with every word left out,
        scored by the run's own scorer in the run's direction (pluie_core.explain). A request that
        cannot be computed stores its sentence. Returns the explanations stored."""
        from pluie_core.explain import directed_contributions

        done = 0
        while not self.stopping:
            # leased like a claim (--lease-seconds) and renewed by the lease keeper while it is computed: a worker
            # killed meanwhile leaves it claimable again after one lease, not after a quarter of an hour
            claimed = explanations.claim_explanation(
                self.engine,
                self.worker_id,
                self.lease_seconds,
                prefer_run_ids=list(self._metrics),
                run_ids=self.run_ids,
            )
            if claimed is None:
                return done
            self.explaining = claimed.id
            try:
                self._metric(claimed.run_id)
                scorer = self._metrics[claimed.run_id].scorer
                if scorer is None:
                    raise ModelLoadError(f"run {claimed.run_id} is not a PLUIE run: it has no log p(yes) − log p(no)")
                result = directed_contributions(scorer, claimed.source, claimed.hypothesis, claimed.direction)
            except (ModelLoadError, ValueError) as exc:  # ValueError: PluieError, a sentence already
                explanations.fail_explanation(self.engine, self.worker_id, claimed.id, _first_line(exc))
                continue
            except Exception as exc:  # out of memory...
                log.exception("run %d: why this score of pair %d failed", claimed.run_id, claimed.pair_id)
                explanations.fail_explanation(
                    self.engine,
                    self.worker_id,
                    claimed.id,
                    f"The model could not score the pair's variants: {_first_line(exc)}",
                )
                continue
            finally:
                self.explaining = None
            if explanations.store_explanation(self.engine, self.worker_id, claimed.id, result):
                done += 1
                log.info("run %d: why this score of pair %d stored", claimed.run_id, claimed.pair_id)
        return done

    # ------------------------------------------------------------------ one claim
    def step(self, prefetch: bool = False) -> Optional[int]:
        """Take the next claim (fetched ahead, or claimed now) and score it in pieces, each piece's
        scores handed to the store as soon as they are computed (_score_pieces). With `prefetch`, the
        claim after it is fetched while the model scores, and each piece is written while the model
        scores the next; else it is written before the next is scored. Returns the pairs scored, or
        None when idle."""
        batch = self._next_claim()
        if batch is None:
            self._flush_writes()  # idle means every score is written
            return None
        self.current_batch = batch
        loading = batch.run_id not in self._metrics
        if loading:  # "loading the model" while it loads (its rate cleared), and only then
            self._in_store(self._say, batch.run_id, None).result()
        elif batch.run_id != self._last_run_id:  # its turn again: scoring at its own rate (0: not measured yet)
            self._in_store(self._say, batch.run_id, self._rates.get(batch.run_id, 0.0))
        started = time.monotonic()
        try:
            score = self._metric(batch.run_id)
        except ServerAway as exc:  # the judge's server is away: the pairs wait for it, uncounted, the run active
            return self._server_away(batch, batch.items, exc)
        except ModelLoadError as exc:
            log.error("run %d failed: %s", batch.run_id, exc)
            self._in_store(queue.fail_run, self.engine, batch.run_id, str(exc)).result()
            self.forget_items(batch.item_ids)
            self.current_batch = None
            queue.heartbeat(self.engine, self.worker_id, last_error=f"run {batch.run_id}: {exc}")
            return 0
        if loading:  # loaded: scoring now
            log.info("run %d: ready to score after %.1f s of loading", batch.run_id, time.monotonic() - started)
            stay = LOAD_TURNS * (time.monotonic() - started)
            if stay > CLAIM_SECONDS:  # a long load: kept to this run a few times its duration before the others' turns
                self._stay = (batch.run_id, time.monotonic() + stay)
            self._in_store(self._say, batch.run_id, self._rates.get(batch.run_id, 0.0))
        self._last_run_id = batch.run_id
        if prefetch:  # the model is loaded: fetch the next claim while it scores this one
            self._ahead = self._in_store(self._claim)
        return self._score_pieces(batch, score, prefetch)

    def _score_pieces(self, batch: queue.Batch, score: ScoreFn, prefetch: bool) -> int:
        """Score a claim piece by piece: its pairs sorted by length (longest first, as the scorer sorts
        its batches), cut into pieces of about PIECE_SECONDS of work, each written at once under the
        held lease. Before each piece: the items no longer held or of a run no longer active are
        dropped (a paused, cancelled or failed run's go back to the queue; deleted ones or those
        another worker took are left alone), and a stop hands the rest back. Returns the pairs scored."""
        metric = self._metrics.get(batch.run_id)
        todo = sorted(batch.items, key=lambda i: -(len(i.source) + len(i.hypothesis)))
        done = 0
        while todo:
            if self.stopping:  # SIGTERM: the piece in hand was written; the rest goes back at once
                self._in_store(self._hand_back, batch.run_id, [i.item_id for i in todo], None)
                break
            live = queue.held_items(self.engine, self.worker_id, [i.item_id for i in todo])
            if len(live) < len(todo):
                gone = [i.item_id for i in todo if i.item_id not in live]
                log.info(
                    "run %d: %d pairs of the claim are no longer to be scored here (deleted, run paused, "
                    "cancelled or gone, or taken by another worker): dropped",
                    batch.run_id,
                    len(gone),
                )
                self._in_store(self._hand_back, batch.run_id, gone, None)  # only what is still ours moves
                todo = [i for i in todo if i.item_id in live]
                if not todo:
                    break
            size = self._piece_size(batch.run_id, metric)
            piece, todo = todo[:size], todo[size:]
            self.current_batch = queue.Batch(batch.run_id, batch.worker_id, piece + todo, batch.lease_expires_at)
            started = time.monotonic()
            try:
                values, details = score([i.source for i in piece], [i.hypothesis for i in piece])
                compute_seconds = time.monotonic() - started  # the metric alone: the run's recorded compute time
            except Exception as exc:
                if getattr(exc, "transient", False):  # the judge's server stopped answering mid-claim
                    return done + self._server_away(batch, piece + todo, exc)
                message = f"run {batch.run_id}: scoring failed: {_first_line(exc)}"
                log.exception(message)
                self.current_batch = None
                self._in_store(self._hand_back, batch.run_id, [i.item_id for i in piece + todo], message).result()
                return done
            rate = len(piece) / max(compute_seconds, 1e-6)
            previous = self._rates.get(batch.run_id)
            self._rates[batch.run_id] = rate if previous is None else 0.5 * previous + 0.5 * rate
            self.pairs_per_second = rate if self.pairs_per_second is None else 0.7 * self.pairs_per_second + 0.3 * rate
            scored = [
                queue.ScoredItem(item.item_id, item.pair_id, value, details[k] if details else None)
                for k, (item, value) in enumerate(zip(piece, values))
            ]
            # the Workers table shows the rate of the run being scored, not an average over every run served
            write = self._in_store(self._write, batch.run_id, scored, self._rates[batch.run_id], compute_seconds)
            if prefetch:
                self._writes = [w for w in self._writes if not w.done()] + [write]
            else:
                write.result()
            done += len(piece)
        self.current_batch = None
        return done

    def _server_away(self, batch: queue.Batch, items, exc: BaseException) -> int:
        """Hand ``items`` back uncounted with the server's sentence (the Workers table shows it), drop the run's
        cached scorer (the next claim asks the server again), and wait a poll before the next claim."""
        message = f"run {batch.run_id}: {_first_line(exc)} The pairs wait for it."
        log.warning(message)
        self.current_batch = None
        self._metrics.pop(batch.run_id, None)
        ids = [i.item_id for i in items]
        try:
            queue.release_batch(self.engine, self.worker_id, ids, error=message, count_attempt=False)
            queue.heartbeat(self.engine, self.worker_id, last_error=message)
        except Exception:  # the store is unreachable too: the lease expires and the items come back
            log.exception("could not hand back the items of run %d", batch.run_id)
        finally:
            self.forget_items(ids)
        self._stop.wait(self.poll_seconds)
        return 0

    def _piece_size(self, run_id: int, metric: Optional[Metric]) -> int:
        """Pairs per piece: about PIECE_SECONDS of the run's measured rate in whole batches of its scorer
        (FIRST_CLAIM / 2 while its rate is unknown: a first claim writes twice)."""
        step = (metric.batch() if metric is not None and metric.batch else None) or self.batch_size or MIN_CLAIM
        rate = self._rates.get(run_id)
        if rate is None:
            return max(step, FIRST_CLAIM // 2)
        return max(step, int(rate * PIECE_SECONDS) // step * step)

    def _in_store(self, fn: Callable, *args) -> Future:
        """Run store work where it runs: on the store thread (in order), or here and now."""
        return self._store.submit(fn, *args)

    def _next_claim(self) -> Optional[queue.Batch]:
        if self._ahead is not None:
            ahead, self._ahead = self._ahead, None
            return ahead.result()
        return self._in_store(self._claim).result()

    def _claim_size(self, run_id: Optional[int]) -> int:
        """Pairs per claim of the run `run_id`: the one given, else about CLAIM_SECONDS of that run's
        measured rate, so that the scorer fills its own batches whatever their size, and at least
        SORT_BATCHES of them where that is at most SORT_SECONDS of work, so that the length sort has
        pairs to sort; FIRST_CLAIM while the run's rate is unknown. A run whose model is on a server claims
        whole multiples of the pairs its requests in flight hold (Metric.in_flight), so that every request
        goes out: claims of 16 pairs kept 2 of 8 requests in flight, 0.82x the server alone (bench/endpoint.py)."""
        if self.claim_size:
            return self.claim_size
        rate = self._rates.get(run_id) if run_id is not None else None
        if rate is None:
            return FIRST_CLAIM
        metric = self._metrics.get(run_id)
        # whole batches: a part-filled batch per claim costs more
        step = (metric.in_flight if metric is not None else None) or self.batch_size or MIN_CLAIM
        sorted_enough = min(SORT_BATCHES * step, rate * SORT_SECONDS)
        size = min(max(rate * CLAIM_SECONDS, sorted_enough, MIN_CLAIM, step), MAX_CLAIM)
        return max(step, int(size) // step * step)

    # store work (on the store thread when overlapping)
    def _claim(self) -> Optional[queue.Batch]:
        """The next claim: the run in turn after the one claimed last (the run whose model was just
        loaded, during its stay), sized for that run (claim_batch picks the run, then asks the size)."""
        stay_run, until = self._stay
        batch = queue.claim_batch(
            self.engine,
            self.worker_id,
            self._claim_size,
            self.lease_seconds,
            prefer_run_id=stay_run if time.monotonic() < until else None,
            after_run_id=self._last_claimed,
            run_ids=self.run_ids,
        )
        if batch is not None:
            self._last_claimed = batch.run_id
            with self._held_lock:
                self._held.update(batch.item_ids)
        return batch

    def _say(self, run_id: int, rate: Optional[float]) -> None:
        """The heartbeat of a run taken: rate None while its model loads ("loading the model"), else the
        rate it is scored at (0 until measured: "scoring")."""
        queue.heartbeat(self.engine, self.worker_id, current_run_id=run_id, new_run=rate is None, pairs_per_second=rate)

    def _write(self, run_id: int, scored: list, rate: Optional[float], compute_seconds: float = 0.0) -> int:
        """Write the scores of a piece's items still held, and the seconds the metric spent on them; if
        the store refuses, hand the piece back."""
        item_ids = [s.item_id for s in scored]
        try:
            written = queue.complete_batch(self.engine, self.worker_id, run_id, scored, compute_seconds=compute_seconds)
        except Exception as exc:
            message = f"run {run_id}: writing scores failed: {_first_line(exc)}"
            log.exception(message)
            self._hand_back(run_id, item_ids, message)
            return 0
        self.forget_items(item_ids)
        self.pairs_done += written
        queue.heartbeat(
            self.engine,
            self.worker_id,
            current_run_id=run_id,
            pairs_done=self.pairs_done,
            pairs_per_second=rate,
        )
        return written

    def _hand_back(self, run_id: int, item_ids: Sequence[int], error: Optional[str]) -> None:
        """Release the items of `item_ids` this worker still holds (the others are left alone)."""
        try:
            queue.release_batch(self.engine, self.worker_id, item_ids, error=error)
            if error is not None:
                queue.heartbeat(self.engine, self.worker_id, last_error=error)
        except Exception:  # the store is unreachable: the lease expires and the items come back
            log.exception("could not hand back the items of run %d", run_id)
        finally:
            self.forget_items(item_ids)

    def forget_items(self, item_ids: Sequence[int]) -> None:
        """Stop renewing these items' leases: written, handed back, or lost."""
        with self._held_lock:
            self._held.difference_update(item_ids)

    def held_item_ids(self) -> list[int]:
        with self._held_lock:
            return sorted(self._held)

    def _flush_writes(self) -> None:
        writes, self._writes = self._writes, []
        for write in writes:
            write.result()

    def _metric(self, run_id: int) -> ScoreFn:
        """The run's scoring function, loading its model only when no cached run holds it."""
        if run_id in self._metrics:
            self._metrics.move_to_end(run_id)
            return self._metrics[run_id].score
        run = queue.run_config(self.engine, run_id)
        if run is None:
            raise ModelLoadError(f"run {run_id} no longer exists")
        metric = load_metric(run, self.device, self.batch_size, loaded=list(self._metrics.values()), engine=self.engine)
        self._metrics[run_id] = metric
        while len({m.model_key for m in self._metrics.values() if m.model_key}) > MODEL_CACHE_SIZE:
            self._metrics.popitem(last=False)  # least recently used run; its model goes with its last run
            _free_accelerator_memory()
        return metric.score


class _Inline:
    """Store work run at once in the calling thread (the worker without overlap)."""

    @staticmethod
    def submit(fn: Callable, *args) -> Future:
        future: Future = Future()
        try:
            future.set_result(fn(*args))
        except BaseException as exc:  # handed to whoever reads the result, as an executor would
            future.set_exception(exc)
        return future

    def shutdown(self, wait: bool = True) -> None:
        pass


def _free_accelerator_memory() -> None:
    import gc

    gc.collect()
    if "torch" in sys.modules:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description="Score queued sentence pairs (PLUIE and baselines).")
    parser.add_argument(
        "--db",
        help="store URL (default: PLUIE_DB_URL, pluie_lab.toml, sqlite:///<PLUIE_DATA_DIR or data>/pluie_lab.db)",
    )
    parser.add_argument("--once", action="store_true", help="score one claim and exit")
    parser.add_argument("--exit-when-idle", action="store_true", help="exit when no queued work is left")
    parser.add_argument(
        "--claim-size",
        type=int,
        default=None,
        help=f"pairs claimed at once (default: about {CLAIM_SECONDS:g} s of work at the run's rate)",
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        default=None,
        help="pairs per forward pass of the model, for runs that do not set one "
        "(default: automatic, bounded by pairs and tokens)",
    )
    parser.add_argument(
        "--no-overlap",
        action="store_true",
        help="do the store's work between batches instead of while the model scores",
    )
    parser.add_argument("--device", default=None, help="cpu, cuda, cuda:1, mps (default: the GPU when there is one)")
    parser.add_argument(
        "--lease-seconds",
        type=float,
        default=DEFAULT_LEASE_SECONDS,
        help="how long a claim lasts without renewal (a dead worker's items wait this long)",
    )
    parser.add_argument("--poll-seconds", type=float, default=2.0, help="wait between looks at an empty queue")
    parser.add_argument("--runs", default=None, help="comma-separated run ids to serve (default: all)")
    parser.add_argument("--parent-pid", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--no-default-runs", action="store_true", help="do not create the baseline runs")
    parser.add_argument(
        "--refit-seconds",
        type=float,
        default=REFIT_SECONDS,
        help="how often adaptive campaigns whose labels changed get their model refitted (0: this worker refits none)",
    )
    parser.add_argument(
        "--webhook-seconds",
        type=float,
        default=WEBHOOK_SECONDS,
        help="how often the webhooks' deliveries are posted (0: this worker sends none)",
    )
    parser.add_argument(
        "--nice",
        type=int,
        default=0,
        help="lower this process's CPU priority by N (the app's worker: 10, below the server's)",
    )
    args = parser.parse_args(argv)
    # the worker writes as the store's own operator: scores, refits, deliveries (db.access: said here, at its start)
    access.install_operator()
    if args.nice > 0:
        os.nice(args.nice)

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("alembic").setLevel(logging.WARNING)  # its start-up chatter hides ours
    for name in ("batch_size", "claim_size"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    try:
        engine = init_db(args.db)
    except Exception as exc:  # a mistyped URL, a server that is down: one sentence, no traceback
        parser.exit(2, f"worker: cannot open the store {database_url(args.db)!r}: {_first_line(exc)}\n")
    if not args.no_default_runs:
        ensure_default_runs(engine)
    from db.publish import remove_leftovers  # a publish killed mid-way left its hidden folder (issue 38.7)

    for folder in remove_leftovers(data_dir() / "published"):
        logging.getLogger("pluie_lab.worker").info("removed %s, left by a publish that was killed", folder.name)
    worker = ScoringWorker(
        engine,
        batch_size=args.batch_size,
        claim_size=args.claim_size,
        overlap=not args.no_overlap,
        lease_seconds=args.lease_seconds,
        device=args.device,
        poll_seconds=args.poll_seconds,
        parent_pid=args.parent_pid,
        refit_seconds=args.refit_seconds or None,
        webhook_seconds=args.webhook_seconds or None,
        run_ids=[int(r) for r in args.runs.split(",") if r.strip()] if args.runs else None,
    )
    signal.signal(signal.SIGTERM, worker.request_stop)
    signal.signal(signal.SIGINT, worker.request_stop)
    worker.run(once=args.once, exit_when_idle=args.exit_when_idle)
    return 0


if __name__ == "__main__":
    sys.exit(main())
