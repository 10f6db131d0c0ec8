"""PLUIE through a server: any OpenAI-compatible completions endpoint that returns the prompt's log-probabilities
(vLLM's `/v1/completions` with ``echo``; SGLang, llama.cpp's ``llama-server`` and TGI offer the same route).

Exact, not approximate. PLUIE is log p(yes) − log p(no) at the answer position. The prompt is rendered exactly
as the in-process scorer renders it (pluie_core.scorer.PluieScorer's prompt half, on the model's own tokenizer
and chat template) and sent as token ids, at temperature 0, in one of two ways (``mode``):

- ``allowed`` (vLLM): one generated token with ``allowed_token_ids`` = [the answer] and ``logprobs``, once per
  answer. vLLM reports the log-probabilities of the model's raw distribution, before it masks the other
  tokens, so the one token it may return carries log p(answer | prompt) exactly; only the last position's
  logits are computed, and the two requests share the prompt's cached prefix.
- ``echo`` (any server with the legacy completions route): the prompt followed by the answer token, with
  ``echo`` and ``logprobs``: each prompt token's log-probability comes back, the last being
  log p(answer | prompt). Exact too, but the server computes every position's log-probabilities over the
  whole vocabulary (about 20× slower for a 550-token FS-DIRECT prompt on vLLM's CPU build).

Either way the value is the raw one, whatever the top-k, so no answer is ever clipped to a floor (a logit bias
would not help: vLLM reports the log-probs before it). ``auto`` (the default) asks once both ways on a probe
prompt and takes ``allowed`` where the server honours it and agrees with echo, else echo. Checked against the
in-process scorer on the same model folder to 1e-3 in float32 (tests/test_endpoint.py, a real vLLM CPU
server).

Before it scores, ``check()`` asks the server: reachable, the API key accepted, the model served, log-probs
offered, and — where the server has vLLM's ``/tokenize`` route — that the server's tokenizer encodes the
rendered prompt and both answers as the local one does (each answer one token after the prompt). Each failure
is one sentence naming what to fix. The local tokenizer is the model folder's: ``tokenizer`` when given, else
the folder the server says it serves (``/v1/models``' ``root``) when it is on this machine, else the served
model's name (a Hugging Face id, downloaded where the hub is reachable).

Requests go out ``concurrency`` at a time (the server batches them itself, and reuses the shared few-shot
prefix where it caches prefixes); a time-out, a dropped connection, a 429 or a 5xx is retried with back-off
(``retries`` times, doubling from ``backoff`` seconds); then, or on any other refusal, EndpointError says the
server's own sentence. Nothing is ever scored from a partial answer.
"""

from __future__ import annotations

import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Optional, cast

import numpy as np

from pluie_core.scorer import PluieError

RETRIED = {408, 409, 425, 429, 500, 502, 503, 504}
PAIRS_PER_REQUEST = 8  # each request carries 2 prompts per pair: a handful of pairs per HTTP round trip


class EndpointError(PluieError):
    """A server that cannot score, or stopped answering; the message says why, in a sentence. ``transient``:
    the server did not answer (unreachable, time-outs, 429 / 5xx after the retries): trying later may work,
    whereas a refused key, a model not served or an answer of two tokens will not."""

    def __init__(self, message: str, transient: bool = False):
        super().__init__(message)
        self.transient = transient


# the name of an API key: an environment variable's name, or a key of Streamlit's secrets (dotted for a section's key)
KEY_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def streamlit_secrets(folder=None) -> dict:
    """Streamlit's secrets where Streamlit reads them by default: ``~/.streamlit/secrets.toml``, then
    ``.streamlit/secrets.toml`` in ``folder`` (default: the working folder, where ``make run`` starts the app and
    its worker), a later file's keys winning; {} where there is none. Read here with tomllib, so the worker and
    the command line, which do not run Streamlit, find the same keys the app does."""
    import tomllib

    merged: dict = {}
    for path in (
        Path.home() / ".streamlit" / "secrets.toml",
        Path(folder or os.getcwd()) / ".streamlit" / "secrets.toml",
    ):
        try:
            with open(path, "rb") as handle:
                merged.update(tomllib.load(handle))
        except FileNotFoundError:
            continue
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise EndpointError(
                f"Streamlit's secrets file {path} cannot be read ({type(exc).__name__}): correct it, "
                "or hold the API key in an environment variable."
            ) from None
    return merged


def api_key_from(
    api_key: Optional[str] = None, api_key_env: Optional[str] = None, secrets: Optional[dict] = None
) -> Optional[str]:
    """The API key: given, or found by its name ``api_key_env``: the environment variable of that name, else
    the key of that name in Streamlit's secrets (``secrets``, default streamlit_secrets(); ``section.key`` for a
    key of a section). Refused with a sentence when neither holds it; None for a server without keys. Only the
    name is ever stored (a run's options); the key is read where it is used."""
    if api_key:
        return api_key
    if not api_key_env:
        return None
    name = str(api_key_env).strip()
    if not KEY_NAME.fullmatch(name):
        raise EndpointError(
            f"The API key is found by its name: an environment variable or a key of Streamlit's "
            f"secrets (e.g. VLLM_API_KEY, or vllm.api_key for a section's key), not {name[:40]!r}."
        )
    value = os.environ.get(name) if "." not in name else None
    if not value:
        found: object = secrets if secrets is not None else streamlit_secrets()
        for part in name.split("."):
            found = found.get(part) if isinstance(found, dict) else None
        value = found if isinstance(found, (str, int)) and not isinstance(found, bool) else None
    if not value:
        raise EndpointError(
            f"The server's API key {name} is not set here: neither an environment variable nor "
            f"Streamlit's secrets (.streamlit/secrets.toml) hold {name}. Set it where the worker "
            "runs and the app asks the server."
        )
    return str(value)


def _server_sentence(response) -> str:
    """The server's own message for a refused request, in one line."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        error = body.get("error", body)
        message = error.get("message") if isinstance(error, dict) else error
        if message is None:
            message = body.get("detail") or body.get("message")
        if message:
            return " ".join(str(message).split())[:300]
    return " ".join(response.text.split())[:300] or response.reason_phrase


class _Served:
    """What a scorer and a judge on a server share: the address and its checks, the key, the HTTP client and its
    retries (_request), the served model (/v1/models) and its tokenizer on this side."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: Optional[str],
        api_key_env: Optional[str],
        tokenizer,
        concurrency: int,
        timeout: float,
        retries: int,
        backoff: float,
    ):
        import httpx

        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise EndpointError(
                f"The server's address must start with http:// or https:// (e.g. "
                f"http://host:8000/v1); got {str(base_url)[:80]!r}."
            )
        if not model or not str(model).strip():
            raise EndpointError("Name the model the server serves (its --served-model-name, or the path it loaded).")
        if int(concurrency) < 1:
            raise EndpointError("The number of requests in flight must be at least 1.")
        self.base_url = base_url.rstrip("/")
        self.root = self.base_url[: -len("/v1")] if self.base_url.endswith("/v1") else self.base_url
        self.model_name = str(model).strip()
        self.concurrency, self.retries, self.backoff = int(concurrency), int(retries), float(backoff)
        key = api_key_from(api_key, api_key_env)
        self.key_name = None if api_key else (str(api_key_env).strip() if api_key_env else None)
        self.key_given = bool(key)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.client = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(timeout, connect=min(10.0, timeout)),
            limits=httpx.Limits(max_connections=self.concurrency + 2),
        )
        self.served = self._served_model()
        self.tokenizer = self._load_tokenizer(tokenizer)

    def _request(self, method: str, url: str, what: str, missing_ok: bool = False, **kwargs):
        """One request with retries on time-outs, dropped connections, 429 and 5xx; EndpointError otherwise.
        ``missing_ok``: a route the server does not have (404) gives None."""
        import httpx

        delay = self.backoff
        for attempt in range(self.retries + 1):
            try:
                response = self.client.request(method, url, **kwargs)
            except httpx.TimeoutException:
                failure = f"did not answer {what} within {self.client.timeout.read:g} s"
            except httpx.TransportError as exc:
                failure = f"cannot be reached ({type(exc).__name__}: {' '.join(str(exc).split())[:120]})"
            else:
                if response.status_code < 400:
                    return response
                if missing_ok and response.status_code in (404, 405):
                    return None
                if response.status_code in (401, 403):
                    raise EndpointError(self._refused(response))
                failure = f"answered {response.status_code} to {what}: {_server_sentence(response)}"
                if response.status_code not in RETRIED:
                    raise EndpointError(f"The server at {self.root} {failure}")
            if attempt < self.retries:
                time.sleep(delay)
                delay *= 2
        raise EndpointError(
            f"The server at {self.root} {failure}" + (f" (after {self.retries} retries)" if self.retries else "") + ".",
            transient=True,
        )

    def _refused(self, response) -> str:
        """The sentence for a 401 / 403: no key given, or which key was refused, and what to set."""
        said = f"{response.status_code}: {_server_sentence(response)}"
        if not self.key_given:
            return (
                f"The server at {self.root} asks for an API key ({said}): name the environment variable or "
                "Streamlit secret that holds it (the run's API key name, or --api-key-env NAME)."
            )
        if self.key_name:
            return (
                f"The server at {self.root} refused the API key of {self.key_name} ({said}): set {self.key_name} "
                "to the key the server was started with (its --api-key)."
            )
        return f"The server at {self.root} refused the API key ({said}): give the key it was started with."

    def _served_model(self) -> dict:
        """The model's entry of /v1/models; EndpointError when the server is unreachable or serves another."""
        response = self._request("GET", f"{self.base_url}/models", "the list of its models")
        try:
            models = response.json().get("data", [])
        except (ValueError, AttributeError):
            raise EndpointError(
                f"{self.base_url}/models did not answer as an OpenAI-compatible server does (a JSON list of models)."
            ) from None
        for entry in models:
            if entry.get("id") == self.model_name:
                return entry
        names = ", ".join(str(m.get("id")) for m in models[:5]) or "none"
        raise EndpointError(
            f"The server at {self.root} does not serve a model named {self.model_name!r}; it serves: {names}."
        )

    def _load_tokenizer(self, tokenizer):
        """The model's tokenizer, as the prompt is rendered on this side (see the module text)."""
        from transformers import AutoTokenizer

        if tokenizer is None:
            root = self.served.get("root")
            tokenizer = root if root and Path(str(root)).exists() else self.model_name
        try:
            return AutoTokenizer.from_pretrained(str(tokenizer))
        except Exception as exc:  # noqa: BLE001 - any loader failure is the same sentence
            raise EndpointError(
                f"The tokenizer of {self.model_name!r} could not be loaded from {str(tokenizer)!r} "
                f"({type(exc).__name__}): give the model's folder on this machine as its tokenizer "
                "(--tokenizer PATH), so the prompt is rendered exactly as the server's model reads "
                "it."
            ) from None

    def _same_tokens(self, prompt: str, ids: list[int]) -> None:
        """Where the server has vLLM's /tokenize route: it encodes ``prompt`` as ``ids``, as the local tokenizer does."""
        response = self._request(
            "POST",
            f"{self.root}/tokenize",
            "a tokenisation",
            missing_ok=True,
            json={"model": self.model_name, "prompt": prompt, "add_special_tokens": False},
        )
        theirs = response.json().get("tokens") if response is not None else None
        if theirs is not None and list(theirs) != list(ids):
            raise EndpointError(
                f"The server's tokenizer for {self.model_name!r} encodes the prompt differently "
                "from the local one: give the served model's own folder as the tokenizer."
            )

    def close(self) -> None:
        self.client.close()


class EndpointScorer(_Served):
    """Score sentence pairs with PLUIE on a model served behind an OpenAI-compatible endpoint.

    base_url: the API's base, e.g. ``http://host:8000/v1``. model: the served model's name.
    template, answers: as PluieScorer. api_key or api_key_env: the key, or its name: the environment variable
    or the key of Streamlit's secrets holding it (api_key_from; never stored). tokenizer: the model's tokenizer
    (folder or id) when the server's own folder is not on this machine. concurrency: requests in flight.
    timeout: seconds per request.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        template="fs-direct",
        answers=None,
        *,
        api_key: Optional[str] = None,
        api_key_env: Optional[str] = None,
        tokenizer=None,
        concurrency: int = 8,
        timeout: float = 120.0,
        retries: int = 4,
        backoff: float = 1.0,
        render_seconds: Optional[float] = None,
        check: bool = True,
        mode: str = "auto",
    ):
        if mode not in ("auto", "allowed", "echo"):
            raise EndpointError("How to read the answers' log-probabilities: auto, allowed or echo.")
        self.mode = mode if mode != "auto" or check else "echo"  # unchecked: echo, which every such server reads
        super().__init__(
            base_url,
            model,
            api_key=api_key,
            api_key_env=api_key_env,
            tokenizer=tokenizer,
            concurrency=concurrency,
            timeout=timeout,
            retries=retries,
            backoff=backoff,
        )
        from pluie_core.scorer import PluieScorer

        self._prompter = PluieScorer._without_weights(
            self.tokenizer, template, answers, self.model_name, render_seconds=render_seconds
        )
        self.template = self._prompter.template
        if self.template.needs_generation:
            raise EndpointError(
                f"The template {self.template.name!r} first generates an explanation; scoring "
                "through a server takes the direct templates (fs-direct, direct, ...) for now."
            )
        self.answers, self.answer_ids = self._prompter.answers, self._prompter.answer_ids
        self.answer_texts = self._prompter.answer_texts
        self._answer_shown = [self.tokenizer.decode([i]) for i in self.answer_ids]  # as a server prints it
        if check:
            self.check()

    def check(self) -> None:
        """Ask the server whether it can score this run (module text); EndpointError with what to fix."""
        probe = self._prompter.prompt_text(self._prompter._probe(0))
        ids = self._prompter._encode(probe)
        response = self._request(
            "POST",
            f"{self.root}/tokenize",
            "a tokenisation",
            missing_ok=True,
            json={"model": self.model_name, "prompt": probe, "add_special_tokens": False},
        )
        if response is not None:
            self._same_tokens(probe, ids)
            for word, text, answer_id in zip(self.answers, self.answer_texts, self.answer_ids):
                got = (
                    self._request(
                        "POST",
                        f"{self.root}/tokenize",
                        "a tokenisation",
                        json={"model": self.model_name, "prompt": probe + text, "add_special_tokens": False},
                    )
                    .json()
                    .get("tokens")
                )
                if got is not None and (list(got[: len(ids)]) != list(ids) or list(got[len(ids) :]) != [answer_id]):
                    raise EndpointError(
                        f"The answer {word!r} is not a single token after the prompt in the server's "
                        f"tokenizer for {self.model_name!r}: choose other answer words."
                    )
        # how to read log p(answer | prompt): vLLM's allowed_token_ids (one generated token, raw log-probs: the
        # last position only), checked against echo's prompt log-probs; echo alone where it is not honoured
        echo = self._ask_echo([ids])
        if self.mode in ("auto", "allowed"):
            try:
                allowed = self._ask_allowed([ids])
            except EndpointError:
                if self.mode == "allowed":
                    raise
                allowed = None
            if allowed is not None and np.allclose(allowed, echo, atol=1e-3):
                self.mode = "allowed"
            elif self.mode == "allowed":
                raise EndpointError(
                    f"The server at {self.root} gives other log-probabilities with allowed_token_ids "
                    "than for the same tokens in the prompt: score with mode='echo'."
                )
            else:
                self.mode = "echo"
        if not np.isfinite(echo).all():
            raise EndpointError(f"The server at {self.root} gave no finite log-probability for the answers.")

    # ------------------------------------------------------------------ scoring
    def _ask(self, prompts: list[list[int]]) -> np.ndarray:
        """log p(answer 0), log p(answer 1) after each prompt (token ids), by the scorer's ``mode``."""
        return self._ask_allowed(prompts) if self.mode == "allowed" else self._ask_echo(prompts)

    def _ask_allowed(self, prompts: list[list[int]]) -> np.ndarray:
        """One request per answer for these prompts: one token, sampling allowed only that answer, its raw
        log-probability (vLLM reports log-probs before it masks: the model's own distribution)."""
        out = np.empty((len(prompts), 2))
        for k, (answer, shown) in enumerate(zip(self.answer_ids, self._answer_shown)):
            body = {
                "model": self.model_name,
                "prompt": prompts,
                "max_tokens": 1,
                "logprobs": 1,
                "temperature": 0,
                "allowed_token_ids": [answer],
            }
            response = self._request("POST", f"{self.base_url}/completions", "a scoring request", json=body)
            try:
                choices = sorted(response.json()["choices"], key=lambda c: c["index"])
                for i, choice in enumerate(choices[: len(prompts)]):
                    token = choice["logprobs"]["tokens"][0]
                    if token != shown:
                        raise EndpointError(
                            f"The server at {self.root} answered {token!r} where only {shown!r} was "
                            "allowed: it does not honour allowed_token_ids."
                        )
                    out[i, k] = float(choice["logprobs"]["token_logprobs"][0])
            except (KeyError, TypeError, IndexError, ValueError):
                raise EndpointError(
                    f"The server at {self.root} returned no log-probabilities with its completions: "
                    "it cannot score PLUIE."
                ) from None
            if len(choices) < len(prompts):
                raise EndpointError(f"The server at {self.root} answered {len(choices)} of {len(prompts)} prompts.")
        return out

    def _ask_echo(self, prompts: list[list[int]]) -> np.ndarray:
        """One request for these prompts, each followed by each answer token, with ``echo``: the last prompt
        token's log-probability is log p(answer | prompt) (every position's log-probs are computed: slower)."""
        body = {
            "model": self.model_name,
            "prompt": [p + [a] for p in prompts for a in self.answer_ids],
            "max_tokens": 1,
            "echo": True,
            "logprobs": 0,
            "temperature": 0,
        }
        response = self._request("POST", f"{self.base_url}/completions", "a scoring request", json=body)
        try:
            choices = sorted(response.json()["choices"], key=lambda c: c["index"])
            out = np.empty((len(prompts), 2))
            for k, choice in enumerate(choices[: 2 * len(prompts)]):
                values = choice["logprobs"]["token_logprobs"]
                out[k // 2, k % 2] = float(values[len(prompts[k // 2])])
        except (KeyError, TypeError, IndexError, ValueError):
            raise EndpointError(
                f"The server at {self.root} returned no prompt log-probabilities (the completions "
                "route with echo and logprobs): it cannot score PLUIE; vLLM, SGLang and "
                "llama-server can."
            ) from None
        if len(choices) < 2 * len(prompts):
            raise EndpointError(f"The server at {self.root} answered {len(choices)} of {2 * len(prompts)} prompts.")
        return out

    def _logprobs(self, prompts: list[list[int]], on_batch=None) -> np.ndarray:
        chunks = [prompts[i : i + PAIRS_PER_REQUEST] for i in range(0, len(prompts), PAIRS_PER_REQUEST)]
        results: list[Optional[np.ndarray]] = [None] * len(chunks)
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            futures = {pool.submit(self._ask, chunk): i for i, chunk in enumerate(chunks)}
            for future, i in futures.items():
                results[i] = future.result()
                if on_batch is not None:
                    on_batch(len(chunks[i]))
        return np.concatenate(cast(list[np.ndarray], results)) if results else np.empty((0, 2))  # every one answered

    def prompts(self, sources, hypotheses, fields=None) -> list[str]:
        """The exact prompt texts that are scored (the in-process scorer's)."""
        return self._prompter.prompts(sources, hypotheses, fields)

    def score(
        self, sources, hypotheses, symmetric: bool = False, progress=None, fields=None, return_logprobs: bool = False
    ):
        """PLUIE score of each pair, in input order, as PluieScorer.score (symmetric: the mean of both
        directions; progress: True for a tqdm bar, or a callable ``progress(done, total)``)."""
        # PluieScorer's own body (prompts, directions, arithmetic), the log-probs read from the server
        return self._prompter._score(sources, hypotheses, symmetric, progress, fields, return_logprobs, self._logprobs)

    __call__ = score


class EndpointJudge(_Served):
    """An output-based LLM judge (pluie_core.judges: LLM-Yes/No, LLM-Likert, LLM-choice) whose model is served
    behind an OpenAI-compatible endpoint. The prompts are LLMJudge's, rendered on this side with the model's
    tokenizer and sent as token ids; the server generates the answer greedily (temperature 0, at most the
    template's ``max_new_tokens``, up to the model's end-of-sequence token), and it is parsed as in process.
    ``judge``: the LLMJudge to call (score, choose, prefer_first); the rest as EndpointScorer.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        kind: Optional[str] = None,
        template=None,
        *,
        api_key: Optional[str] = None,
        api_key_env: Optional[str] = None,
        tokenizer=None,
        concurrency: int = 8,
        timeout: float = 120.0,
        retries: int = 4,
        backoff: float = 1.0,
        max_new_tokens: Optional[int] = None,
        render_seconds: Optional[float] = None,
        check: bool = True,
    ):
        from pluie_core.judges import LLMJudge

        super().__init__(
            base_url,
            model,
            api_key=api_key,
            api_key_env=api_key_env,
            tokenizer=tokenizer,
            concurrency=concurrency,
            timeout=timeout,
            retries=retries,
            backoff=backoff,
        )
        self.judge = LLMJudge._without_weights(
            self.tokenizer, kind, template, self.model_name, max_new_tokens, render_seconds, self._generation_eos()
        )
        self.judge.generate = self.generate  # type: ignore[method-assign]  # the server answers; prompts and parsing stay LLMJudge's
        if check:
            self.check()

    def _generation_eos(self):
        """The model's own end-of-sequence ids (its generation_config.json beside the tokenizer), as in process."""
        folder = Path(str(getattr(self.tokenizer, "name_or_path", "") or ""))
        try:
            import json

            return json.loads((folder / "generation_config.json").read_text()).get("eos_token_id")
        except (OSError, ValueError):
            return None

    def check(self) -> None:
        """Ask the server whether it can judge: the same tokens for a probe prompt (where it has /tokenize), and
        one greedy answer generated; EndpointError with what to fix."""
        judge = self.judge
        probe = judge.prompt_text(
            judge.template.messages(
                *("The cat drinks water.",) * (3 if judge.kind == "choice" else 2),
                **{f: "" for f in judge.template.fields},
            )
        )
        ids = judge._encode(probe)
        self._same_tokens(probe, ids)
        self._ask([ids], 1)

    def _ask(self, prompts: list[list[int]], max_tokens: int) -> list[str]:
        # the generated tokens' ids where the server gives them (vLLM's return_token_ids), decoded here as in
        # process: a server's own text holds back a character whose bytes are cut by max_tokens, so it can differ
        body = {
            "model": self.model_name,
            "prompt": prompts,
            "max_tokens": max_tokens,
            "temperature": 0,
            "stop_token_ids": list(self.judge.eos_ids),
            "return_token_ids": True,
        }
        response = self._request("POST", f"{self.base_url}/completions", "a judging request", json=body)
        try:
            choices = sorted(response.json()["choices"], key=lambda c: c["index"])
            texts = [
                self.judge._answer_text([int(t) for t in c["token_ids"]])[0]
                if c.get("token_ids") is not None
                else str(c["text"]).strip()
                for c in choices[: len(prompts)]
            ]
        except (KeyError, TypeError, ValueError):
            raise EndpointError(
                f"The server at {self.root} did not answer its completions route as an "
                "OpenAI-compatible server does (choices with a text)."
            ) from None
        if len(texts) < len(prompts):
            raise EndpointError(f"The server at {self.root} answered {len(texts)} of {len(prompts)} prompts.")
        return texts

    def generate(self, prompts: list[list[int]], on_batch=lambda n: None) -> list[str]:
        """Greedy answers to token-id prompts, in input order: PAIRS_PER_REQUEST prompts a request, ``concurrency``
        requests in flight (LLMJudge.generate's contract)."""
        chunks = [prompts[i : i + PAIRS_PER_REQUEST] for i in range(0, len(prompts), PAIRS_PER_REQUEST)]
        texts: list[str] = []
        self.judge.last_run = {"prompts": len(prompts)}
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            futures = [pool.submit(self._ask, chunk, self.judge.max_new_tokens) for chunk in chunks]
            for future, chunk in zip(futures, chunks):
                texts += future.result()
                on_batch(len(chunk))
        return texts
