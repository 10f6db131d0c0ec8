"""A model's chat template cannot pin the server or the worker (issue 38, item 5). The model check (run
by the Scoring form in the server's process) and the worker render a model's chat template in a child
process, each render bounded in time, and answer with one sentence when it runs out; pickle weights
that torch refuses are refused in our own words, without torch's advice to turn its safety off."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading

import pytest
import torch

from db import init_db
from db.engine import read_session
from db.models import ScoreRun
from db.runs import RunError, create_run
from tests.paths import REPO
from tests.store_fixtures import add_pairs, sentence_pairs
from tests.tiny_models import CHATML_TEMPLATE, INST_TEMPLATE, LLAMA2_TEMPLATE

# each loop is under the Jinja sandbox's cap on range(); together they take hours
LOOPING = "{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}"
TOO_SLOW = "took more than 2 s to render one prompt, so it cannot be used (a chat template renders in milliseconds)."


@pytest.fixture(scope="module")
def looping_model(tiny_model_builder, tmp_path_factory):
    copy = tmp_path_factory.mktemp("looping") / "model"
    shutil.copytree(tiny_model_builder(), copy)
    (copy / "chat_template.jinja").write_text(LOOPING + CHATML_TEMPLATE, encoding="utf-8")
    return copy


@pytest.fixture
def two_seconds(monkeypatch):
    import pluie_core.chat_render as bounds

    monkeypatch.setattr(bounds, "RENDER_SECONDS", 2.0)


def finished_within(seconds: float, call):
    """call() in a thread that may run on (the code before the bound spun for hours): its result, or a
    failed test after `seconds`."""
    out = {}

    def run():
        try:
            out["value"] = call()
        except Exception as exc:  # handed to the test
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s"
    if "error" in out:
        raise out["error"]
    return out["value"]


CHECK = """
import json, sys, time
import pluie_core.chat_render as bounds
from pluie_core.scorer import PluieError, check_model
bounds.RENDER_SECONDS = 2.0
check_model(sys.argv[2])  # a normal model first: imports done, a renderer started
start = time.monotonic()
normal = check_model(sys.argv[2])
normal_seconds = time.monotonic() - start
wall, cpu = time.monotonic(), time.process_time()
try:
    check_model(sys.argv[1])
    message = "accepted"
except PluieError as exc:
    message = str(exc)
print(json.dumps({"message": message, "wall": time.monotonic() - wall, "cpu": time.process_time() - cpu,
                  "normal": normal, "normal_seconds": normal_seconds}))
"""


def test_the_check_of_a_looping_template_answers_in_bounded_time_and_the_server_does_not_spin(
    looping_model, tiny_model_path
):
    # run as the server runs it: check_model in the calling process; that process's own CPU time shows
    # whether it was the one rendering
    done = subprocess.run(
        [sys.executable, "-c", CHECK, str(looping_model), str(tiny_model_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["message"] == f"The chat template of {looping_model} {TOO_SLOW}"
    assert 2.0 <= out["wall"] < 30.0, out
    assert out["cpu"] < 1.0, out  # the render spun in a child, not here
    # a normal model is still checked, at about the speed it was
    assert out["normal"][-2:] == ["its tokenizer has a chat template", "the answers 'Yes' and 'No' are one token each"]
    assert out["normal_seconds"] < 1.0, out


def test_creating_a_run_refuses_a_looping_template_with_the_sentence(store_url, looping_model, two_seconds):
    engine = init_db(store_url)
    add_pairs(engine, "d", sentence_pairs(3))
    with pytest.raises(RunError) as refused:
        finished_within(60, lambda: create_run(engine, model=str(looping_model), check_model=True))
    assert str(refused.value) == f"The chat template of {looping_model} {TOO_SLOW}"
    with read_session(engine) as session:
        assert session.query(ScoreRun).count() == 0  # nothing written
    engine.dispose()


def test_the_scoring_form_says_so(app_store, looping_model, two_seconds):
    from tests.store_fixtures import n_runs, open_page, widget

    add_pairs(app_store, "d", sentence_pairs(3))
    at = open_page("scoring")
    widget(at.text_input, "Model").input(str(looping_model))
    widget(at.button, "Create run").click()
    at.run(timeout=60)
    assert [e.value for e in at.error] == [f"The chat template of {looping_model} {TOO_SLOW}"]
    assert n_runs(app_store) == 0


@pytest.mark.parametrize("template", [CHATML_TEMPLATE, LLAMA2_TEMPLATE, INST_TEMPLATE])
def test_the_bounded_render_is_transformers_own(tiny_model_path, template):
    from transformers import AutoTokenizer

    from pluie_core import chat_render

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_path)
    tokenizer.chat_template = template
    turns = [
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Same meaning? é {{ x }}"}],
        [{"role": "user", "content": "A\nB"}, {"role": "assistant", "content": "Yes", "reasoning": None}],
    ]
    for generation in (True, False):
        assert chat_render.render(tokenizer, turns, generation, "tiny", seconds=5) == [
            tokenizer.apply_chat_template(t, tokenize=False, add_generation_prompt=generation) for t in turns
        ]


RENDERER_PROBE = """
import sys
sys.modules.update({broken})
from pluie_core.chat_render import _transformers_renderer
render = _transformers_renderer()
import transformers
print(json.dumps({{"file": render.__code__.co_filename, "name": render.__qualname__,
    "package_ran": hasattr(transformers, "__version__"), "torch": "torch" in sys.modules,
    "text": render([[{{"role": "user", "content": "hi"}}]], chat_template="{{{{ messages[0].content }}}}!")[0][0]}}))
"""


@pytest.mark.parametrize("broken", [{}, {"transformers.utils.logging": None}], ids=["bare", "fallback"])
def test_the_renderer_child_imports_transformers_chat_template_module_alone(broken):
    """The child's import (pluie_core.chat_render._transformers_renderer) is transformers' own function
    without the package's __init__ (its lazy table of every model: most of the child's start); when that
    import fails, the package is imported as usual and the function is the same."""
    probe = "import json\n" + RENDERER_PROBE.format(broken=broken)
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["file"].replace("\\", "/").endswith("transformers/utils/chat_template_utils.py")
    assert found["name"] == "render_jinja_template" and found["text"] == "hi!" and not found["torch"]
    assert found["package_ran"] == bool(broken)


def test_the_worker_fails_a_run_whose_template_loops(tmp_path, looping_model, two_seconds):
    from worker import ScoringWorker

    engine = init_db(f"sqlite:///{tmp_path / 'store.db'}")
    add_pairs(engine, "d", sentence_pairs(3))
    pluie = create_run(engine, name="pluie", model=str(looping_model), template="direct")
    judge = create_run(engine, name="judge", kind="llm-yes-no", model=str(looping_model))
    worker = ScoringWorker(engine, device="cpu", poll_seconds=0.1)
    finished_within(120, lambda: worker.run(exit_when_idle=True))
    with read_session(engine) as session:
        for run in (pluie, judge):
            failed = session.get(ScoreRun, run)
            assert failed.status == "failed" and failed.error == f"The chat template of {looping_model} {TOO_SLOW}"
    engine.dispose()


def test_each_pair_s_render_is_bounded_in_the_worker_s_scorer(tiny_model_path, tmp_path):
    from pluie_core.scorer import PluieError, PluieScorer

    # a template that loops only on some pairs: the check and the first render pass, that pair's render does not
    copy = tmp_path / "model"
    shutil.copytree(tiny_model_path, copy)
    (copy / "chat_template.jinja").write_text(
        "{% if 'Zanzibar' in messages[-1]['content'] %}" + LOOPING + "{% endif %}" + CHATML_TEMPLATE, encoding="utf-8"
    )
    sources, hypotheses = ["The cat drinks water.", "A river."], ["The cat drinks milk.", "A long river."]
    bounded = PluieScorer(str(copy), template="direct", device="cpu", render_seconds=2)
    here = PluieScorer(str(copy), template="direct", device="cpu")
    assert bounded.prompts(sources, hypotheses) == here.prompts(sources, hypotheses)
    assert list(bounded.score(sources, hypotheses)) == list(here.score(sources, hypotheses))
    with pytest.raises(PluieError) as refused:
        finished_within(30, lambda: bounded.score(["A trip to Zanzibar."], ["A journey to Zanzibar."]))
    assert str(refused.value) == f"The chat template of {copy} {TOO_SLOW}"
    assert list(bounded.score(sources, hypotheses)) == list(here.score(sources, hypotheses))  # and it goes on


# ------------------------------------------------------------------ pickle weights


@pytest.fixture(scope="module")
def pickle_models(tiny_model_path, tmp_path_factory):
    """The tiny model with its weights as a pickle file: tensors only (torch's safe loader reads it),
    and with a NumPy array too (which torch's safe loader refuses)."""
    from transformers import AutoModelForCausalLM

    weights = AutoModelForCausalLM.from_pretrained(tiny_model_path).state_dict()
    made = {}
    for name, extra in (("tensors", {}), ("more", {"note": __import__("numpy").arange(3)})):
        copy = tmp_path_factory.mktemp(f"pickle-{name}") / "model"
        shutil.copytree(tiny_model_path, copy, ignore=shutil.ignore_patterns("*.safetensors"))
        torch.save({**weights, **extra}, copy / "pytorch_model.bin")
        made[name] = copy
    return made


def test_pickle_weights_torch_refuses_are_refused_in_our_words(pickle_models):
    from pluie_core.scorer import PluieError, PluieScorer

    PluieScorer(str(pickle_models["tensors"]), device="cpu")  # tensors only: torch's safe loader reads them
    with pytest.raises(PluieError) as refused:
        PluieScorer(str(pickle_models["more"]), device="cpu")
    message = str(refused.value)
    assert message == (
        f"The weights of {pickle_models['more']} are a pickle file (pytorch_model.bin) that holds more than "
        "tensors; PLUIE Lab does not load such a file, since unpickling it can run code. If you trust its source, "
        "convert the weights to safetensors; otherwise choose another model."
    )
    for torch_advice in ("weights_only", "trust the source", "two options", "\x1b["):
        assert torch_advice not in message
