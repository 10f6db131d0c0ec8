"""The private APIs the code reaches (pluie_core/private_api.py: scipy's, torch's, crowd-kit's;
ui/base/private_api.py: Streamlit's):
on the pinned versions each coupling takes its private path, so an upgrade that removes one fails here,
naming the coupling and what its fallback costs, instead of slowing the app down unseen. Where a fallback
computes something, it gives the same result; a fallback says so in the log, once."""

from __future__ import annotations

import importlib.util
import logging
import sys
import types

import numpy as np
import pytest

from pluie_core import private_api as library_api
from pluie_core.private_api import FALLBACK, PRIVATE
from tests.paths import REPO
from ui.base import private_api as app_api

# each coupling, and the call that takes its path
CHECKS = {
    library_api.KENDALL_DIS: library_api.kendall_discordant,
    library_api.FLASH_ATTENTION: library_api.flash_attention_for_cpu,
    library_api.MKLDNN_LINEAR: library_api.mkldnn_linear_pointwise,
    library_api.MKLDNN_REORDER: library_api.mkldnn_reorder_linear_weight,
    library_api.TENSOR_VERSION: library_api.tensor_version,
    library_api.CROWDKIT_MACE: library_api.crowdkit_mace,
    app_api.RUNTIME: app_api.runtime_exists,
    app_api.PAGES_MANAGER: app_api.pages_manager,
    app_api.SCRIPT_RUN_CTX: app_api.script_run_ctx,
    app_api.STATIC_JS: lambda: app_api.static_js_files(("DataFrame", "BidiComponent")),
    app_api.MISSING_CONTEXT_LOG: app_api.missing_context_logger,
    app_api.AUTHLIB: app_api.authlib_installed,
    app_api.DRAWING: app_api.drawing_modules,
    app_api.STREAMLIT_CLI: app_api.streamlit_cli_main,
}


def test_every_coupling_is_checked_here():
    assert set(map(id, CHECKS)) == {id(c) for c in [*library_api.COUPLINGS.values(), *app_api.COUPLINGS.values()]}


@pytest.mark.parametrize("coupling", list(CHECKS), ids=lambda c: c.name)
def test_the_private_path_is_taken_on_the_pinned_versions(coupling):
    CHECKS[coupling]()
    assert coupling.taken == PRIVATE, coupling.message()


def test_the_pinned_versions_are_the_ones_checked():
    import importlib.metadata

    import scipy
    import streamlit
    import torch

    torch_version = torch.__version__.split("+")[0]  # 2.13.0+cpu: the CPU wheel of the pinned version
    crowdkit_version = importlib.metadata.version("crowd-kit")
    assert f"scipy {scipy.__version__}" == library_api.KENDALL_DIS.checked_on
    assert f"torch {torch_version}" == library_api.TORCH
    assert {
        c.checked_on
        for c in (
            library_api.FLASH_ATTENTION,
            library_api.MKLDNN_LINEAR,
            library_api.MKLDNN_REORDER,
            library_api.TENSOR_VERSION,
        )
    } == {library_api.TORCH}
    assert f"crowd-kit {crowdkit_version}" == library_api.CROWDKIT_MACE.checked_on
    assert f"Streamlit {streamlit.__version__}" == app_api.STREAMLIT
    pins = (REPO / "requirements.txt").read_text().replace(" ", "").lower().splitlines()
    assert f"streamlit=={streamlit.__version__}" in pins and f"scipy=={scipy.__version__}" in pins
    assert f"torch=={torch_version}" in pins and f"crowd-kit=={crowdkit_version}" in pins


def test_the_private_objects_are_the_ones_the_code_uses():
    from streamlit.runtime import Runtime
    from streamlit.runtime.pages_manager import PagesManager
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    assert app_api.runtime_exists() == Runtime.exists and app_api.runtime_exists()() is Runtime.exists()
    assert app_api.pages_manager() is PagesManager
    assert app_api.script_run_ctx() is get_script_run_ctx and get_script_run_ctx(suppress_warning=True) is None
    names = app_api.static_js_files(("DataFrame", "BidiComponent"))
    assert [name.split(".")[0] for name in names] == ["DataFrame", "BidiComponent"]
    assert all((app_api.static_js_folder() / name).is_file() for name in names)
    assert app_api.missing_context_logger() is logging.getLogger(app_api.MISSING_CONTEXT_LOGGER)
    assert app_api.authlib_installed() is True  # requirements.txt installs it
    assert app_api.drawing_modules() == app_api.DRAWING_MODULES
    import streamlit.web.cli

    assert app_api.streamlit_cli_main() is streamlit.web.cli.main


def test_the_library_s_private_objects_are_the_ones_the_code_uses(tiny_model_builder):
    import torch
    from crowdkit.aggregation import MACE
    from transformers import AutoModelForCausalLM

    from pluie_core.aggregation import mace_class
    from pluie_core.packed import packed_forward

    assert library_api.flash_attention_for_cpu() is torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
    assert library_api.mkldnn_linear_pointwise() is torch.ops.mkldnn._linear_pointwise
    assert library_api.mkldnn_reorder_linear_weight() is torch.ops.mkldnn._reorder_linear_weight
    weight = torch.zeros(2)
    version = library_api.tensor_version()
    before = version(weight)
    weight.mul_(2)
    assert version(weight) == weight._version == before + 1
    assert library_api.crowdkit_mace() is MACE and issubclass(mace_class(), MACE)
    # the packed pass holds what the couplings gave (the small model gets oneDNN's blocked copies)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_builder(arch="llama"), dtype=torch.float32)
    built = packed_forward(model, torch.device("cpu"))
    assert built.flash is torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
    assert built.onednn and built.prepacked and built.linear_pointwise is torch.ops.mkldnn._linear_pointwise
    assert built.reorder_linear_weight is torch.ops.mkldnn._reorder_linear_weight


def _without(monkeypatch, module: str, *names: str) -> None:
    """Make ``from module import name`` fail as it would on a version without those names."""
    real = importlib.import_module(module)
    bare = types.ModuleType(module)
    bare.__dict__.update({k: v for k, v in vars(real).items() if k not in names})
    monkeypatch.setitem(sys.modules, module, bare)


def _fresh(monkeypatch, coupling) -> None:
    monkeypatch.setattr(coupling, "taken", None)
    monkeypatch.setattr(coupling, "_warned", False)


def test_without_scipys_kendall_dis_the_bootstrap_gives_the_same_taus_and_says_so_once(monkeypatch, caplog):
    from pluie_core.evaluation.correlation import _rows_kendall, correlate

    rng = np.random.default_rng(11)
    x = rng.integers(0, 6, (200, 50)).astype(float)  # ties in x, in y and in both
    y = x + rng.integers(0, 4, (200, 50))
    x[0] = 3.0  # a constant row: NaN either way
    scores, reference = rng.normal(size=300), rng.integers(0, 5, 300).astype(float)
    fast, fast_table = _rows_kendall(x, y), correlate({"m": scores}, reference, ["kendall"], n_boot=200)
    assert library_api.KENDALL_DIS.taken == PRIVATE

    _fresh(monkeypatch, library_api.KENDALL_DIS)
    _without(monkeypatch, "scipy.stats._stats", "_kendall_dis")
    with caplog.at_level(logging.WARNING, logger="pluie_lab.private_api"):
        slow = _rows_kendall(x, y)
        slow_table = correlate({"m": scores}, reference, ["kendall"], n_boot=200)
    assert library_api.KENDALL_DIS.taken == FALLBACK
    assert np.isnan(fast[0]) and np.isnan(slow[0])
    np.testing.assert_allclose(slow, fast, rtol=0, atol=1e-12)
    np.testing.assert_allclose(
        slow_table[["r", "ci_low", "ci_high"]].to_numpy(float),
        fast_table[["r", "ci_low", "ci_high"]].to_numpy(float),
        rtol=0,
        atol=1e-12,
    )
    warnings = [r for r in caplog.records if "_kendall_dis" in r.getMessage()]
    assert len(warnings) == 1 and warnings[0].levelno == logging.WARNING  # once, not per call
    assert "kendalltau" in warnings[0].getMessage() and "1,000 pairs" in warnings[0].getMessage()


def test_without_streamlits_is_authlib_installed_an_installed_authlib_counts(monkeypatch, caplog):
    private = app_api.authlib_installed()
    _fresh(monkeypatch, app_api.AUTHLIB)
    _without(monkeypatch, "streamlit.auth_util", "is_authlib_installed")
    with caplog.at_level(logging.WARNING, logger="pluie_lab.private_api"):
        assert app_api.authlib_installed() is private is True
    assert app_api.AUTHLIB.taken == FALLBACK
    assert "is_authlib_installed" in caplog.text


@pytest.mark.parametrize(
    "module, names, call, coupling",
    [
        ("streamlit.runtime", ("Runtime",), app_api.runtime_exists, app_api.RUNTIME),
        ("streamlit.runtime.pages_manager", ("PagesManager",), app_api.pages_manager, app_api.PAGES_MANAGER),
        ("streamlit.runtime.scriptrunner", ("get_script_run_ctx",), app_api.script_run_ctx, app_api.SCRIPT_RUN_CTX),
    ],
    ids=["Runtime", "PagesManager", "get_script_run_ctx"],
)
def test_a_streamlit_without_the_internal_gives_none_and_a_warning(monkeypatch, caplog, module, names, call, coupling):
    _fresh(monkeypatch, coupling)
    _without(monkeypatch, module, *names)
    with caplog.at_level(logging.WARNING, logger="pluie_lab.private_api"):
        assert call() is None
        assert call() is None
    assert coupling.taken == FALLBACK
    assert [r.levelno for r in caplog.records if coupling.name in r.getMessage()] == [logging.WARNING]


def test_without_get_script_run_ctx_a_thread_off_a_page_is_not_let_through_as_open(monkeypatch):
    """The sign-in resolver's fallback fails closed: it asks for the session's person rather than saying
    "no session" (which the app's writer reads as OPEN on a store without accounts)."""
    from ui.access import signin

    assert signin.current_actor_or_none() is None  # private path: this test's thread is no page's run
    asked = []
    monkeypatch.setattr(signin, "signed_in_actor", lambda: asked.append(1) or signin.NOBODY)
    monkeypatch.setattr(app_api, "script_run_ctx", lambda: None)
    assert signin.current_actor_or_none() is signin.NOBODY and asked == [1]


def test_streamlit_files_and_modules_that_are_gone_are_left_out(monkeypatch, tmp_path):
    _fresh(monkeypatch, app_api.STATIC_JS)
    (tmp_path / "DataFrame.abc.js").write_text("")
    monkeypatch.setattr(app_api, "static_js_folder", lambda: tmp_path)
    assert app_api.static_js_files(("DataFrame", "BidiComponent")) == ("DataFrame.abc.js",)
    assert app_api.STATIC_JS.taken == FALLBACK

    _fresh(monkeypatch, app_api.DRAWING)
    monkeypatch.setattr(app_api, "DRAWING_MODULES", ("streamlit.emojis", "streamlit.no_such_module"))
    assert app_api.drawing_modules() == ("streamlit.emojis",)
    assert app_api.DRAWING.taken == FALLBACK


def _serve():
    spec = importlib.util.spec_from_file_location("serve", REPO / "scripts" / "serve.py")
    serve = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(serve)
    return serve


def test_a_broken_read_ahead_at_start_is_logged_with_its_traceback_and_the_server_goes_on(monkeypatch, caplog, capsys):
    """An ImportError in the read-ahead once hid a broken import: it is now a warning with the traceback."""
    from streamlit.runtime import Runtime

    serve = _serve()
    monkeypatch.setattr(Runtime, "exists", classmethod(lambda cls: True))  # as under `streamlit run`
    monkeypatch.setitem(sys.modules, "ui.views.read_ahead", None)  # `from ui.views.read_ahead import ...` fails
    with caplog.at_level(logging.WARNING):
        assert serve.read_ahead_at_start(timeout=5) is None  # no exception: the server stays up
    [record] = [r for r in caplog.records if "read-ahead" in r.getMessage()]
    assert record.levelno == logging.WARNING and record.exc_info and issubclass(record.exc_info[0], ImportError)
    assert "ui.views.read_ahead" in caplog.text  # the traceback names what broke
    assert serve.READ_AHEAD not in capsys.readouterr().err  # and it does not claim the figures are read


def test_the_warm_up_still_imports_streamlits_drawing_modules():
    assert {"pyarrow", "torch", *app_api.DRAWING_MODULES} <= set(_serve().page_imports())
    # and what the statistics import only where they compute, which the analysis pages' first figures need
    assert {"scipy.stats", "sklearn.metrics"} <= set(_serve().page_imports())


class _Without:
    """A torch.ops namespace without the ops ``names`` (as on a torch that lacks them); every other op is the
    real namespace's."""

    def __init__(self, real, *names: str):
        self._real, self._names = real, names

    def __getattr__(self, name: str):
        if name in self._names:
            raise AttributeError(f"'_OpNamespace' object has no attribute '{name}'")
        return getattr(self._real, name)


def _scores(path, **kwargs):
    """FS-DIRECT scores of test_packed's pairs, on a fresh load of the tiny model at ``path``, and the
    scorer's last_run and the model (its packed pass, if any, in ``_pluie_packed``)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from pluie_core.scorer import PluieScorer
    from tests.test_packed import HYPOTHESES, SOURCES

    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    scorer = PluieScorer((model, AutoTokenizer.from_pretrained(path)), template="fs-direct", **kwargs)
    return scorer.score(SOURCES, HYPOTHESES), scorer.last_run, model


def _one_warning(caplog, coupling) -> str:
    warnings = [r for r in caplog.records if coupling.name in r.getMessage()]
    assert [r.levelno for r in warnings] == [logging.WARNING]  # once, however many uses
    return warnings[0].getMessage()


def test_without_torchs_cpu_flash_attention_the_scorer_takes_its_generic_path_with_the_same_scores(
    tiny_model_builder, monkeypatch, caplog
):
    import torch

    from tests.test_packed import SOURCES

    path = tiny_model_builder(arch="llama")
    packed, last_run, _ = _scores(path)
    assert last_run["packed"] == len(SOURCES) and library_api.FLASH_ATTENTION.taken == PRIVATE

    _fresh(monkeypatch, library_api.FLASH_ATTENTION)
    monkeypatch.setattr(torch.ops, "aten", _Without(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu"))
    with caplog.at_level(logging.WARNING, logger="pluie_lab.private_api"):
        assert library_api.flash_attention_for_cpu() is None
        generic, last_run, model = _scores(path)
    assert "packed" not in last_run and getattr(model, "_pluie_packed", None) is None  # the model's own forward
    assert library_api.FLASH_ATTENTION.taken == FALLBACK
    np.testing.assert_allclose(generic, packed, atol=2e-5, rtol=0)
    assert "generic path" in _one_warning(caplog, library_api.FLASH_ATTENTION)


@pytest.mark.parametrize(
    "op, coupling",
    [
        ("_linear_pointwise", library_api.MKLDNN_LINEAR),
        ("_reorder_linear_weight", library_api.MKLDNN_REORDER),
    ],
    ids=["_linear_pointwise", "_reorder_linear_weight"],
)
def test_without_onednns_ops_the_packed_pass_multiplies_through_torch_with_the_same_scores(
    tiny_model_builder, monkeypatch, caplog, op, coupling
):
    import torch

    from tests.test_packed import SOURCES

    path = tiny_model_builder(arch="llama")
    fast, last_run, model = _scores(path)
    assert last_run["packed"] == len(SOURCES) and model._pluie_packed.onednn and coupling.taken == PRIVATE

    _fresh(monkeypatch, coupling)
    monkeypatch.setattr(torch.ops, "mkldnn", _Without(torch.ops.mkldnn, op))
    with caplog.at_level(logging.WARNING, logger="pluie_lab.private_api"):
        slow, last_run, model = _scores(path)
    built = model._pluie_packed
    assert last_run["packed"] == len(SOURCES) and not built.onednn and not built.prepacked  # torch's matmul
    assert coupling.taken == FALLBACK
    np.testing.assert_allclose(slow, fast, atol=2e-5, rtol=0)
    np.testing.assert_allclose(slow, _scores(path, packed=False)[0], atol=2e-5, rtol=0)  # the generic path's
    assert "1.1-1.2x MKL's rate" in _one_warning(caplog, coupling)


def test_without_tensor_versions_the_packed_pass_makes_no_blocked_copies_and_gives_the_same_scores(
    tiny_model_builder, monkeypatch, caplog
):
    import torch

    from tests.test_packed import SOURCES

    path = tiny_model_builder(arch="llama")
    blocked, _, model = _scores(path)
    assert model._pluie_packed.prepacked and library_api.TENSOR_VERSION.taken == PRIVATE

    _fresh(monkeypatch, library_api.TENSOR_VERSION)

    def no_count(tensor):
        raise AttributeError("'Tensor' object has no attribute '_version'")

    monkeypatch.setattr(torch.Tensor, "_version", property(no_count))
    with caplog.at_level(logging.WARNING, logger="pluie_lab.private_api"):
        plain, last_run, model = _scores(path)
        built = model._pluie_packed
        assert built.onednn and not built.prepacked and built.current()  # the model's own weights, always current
    assert last_run["packed"] == len(SOURCES) and library_api.TENSOR_VERSION.taken == FALLBACK
    np.testing.assert_allclose(plain, blocked, atol=2e-5, rtol=0)
    assert "no blocked oneDNN copies" in _one_warning(caplog, library_api.TENSOR_VERSION)


def _mace_labels():
    from tests.test_aggregation import crafted

    return crafted()


@pytest.fixture
def fresh_mace_class(monkeypatch):
    """mace_class() built again (it is cached) against crowd-kit's MACE as the test leaves it, and again after."""
    from pluie_core.aggregation import mace_class

    _fresh(monkeypatch, library_api.CROWDKIT_MACE)
    mace_class.cache_clear()
    yield
    mace_class.cache_clear()


def _calls_neither(self, data):
    return self


@pytest.mark.parametrize(
    "change, named",
    [
        (lambda MACE, monkeypatch: monkeypatch.delattr(MACE, "_initialize"), "MACE has no _initialize"),
        (
            lambda MACE, monkeypatch: monkeypatch.setattr(
                MACE, "_e_step", lambda self, annotation, tasks, workers: None
            ),
            "MACE._e_step takes (self, annotation, tasks, workers)",
        ),
        (
            lambda MACE, monkeypatch: monkeypatch.setattr(MACE, "fit", _calls_neither),
            "MACE.fit does not call self._e_step",
        ),
    ],
    ids=["no _initialize", "another _e_step", "fit calls neither"],
)
def test_a_crowd_kit_whose_mace_changed_refuses_mace_rather_than_compute_something_else(
    monkeypatch, caplog, fresh_mace_class, change, named
):
    from crowdkit.aggregation import MACE

    from pluie_core.aggregation import AggregationError, aggregate

    labels = _mace_labels()
    assert len(aggregate(labels, "mace", "binary", settings={"n_restarts": 2, "n_iter": 20}).pairs)
    assert library_api.CROWDKIT_MACE.taken == PRIVATE

    from pluie_core.aggregation import mace_class

    mace_class.cache_clear()
    change(MACE, monkeypatch)
    with caplog.at_level(logging.WARNING, logger="pluie_lab.private_api"):
        for _ in range(2):
            with pytest.raises(AggregationError) as refused:
                aggregate(labels, "mace", "binary", settings={"n_restarts": 2, "n_iter": 20})
    assert named in str(refused.value) and "crowd-kit 1.4.2" in str(refused.value)
    assert library_api.CROWDKIT_MACE.taken == FALLBACK
    assert "there is none that keeps the results" in _one_warning(caplog, library_api.CROWDKIT_MACE)
    assert len(aggregate(labels, "dawid_skene", "binary").pairs)  # the other methods do not reach it


def test_without_streamlits_cli_main_serve_starts_streamlit_as_python_m_streamlit(monkeypatch, caplog):
    """The fallback runs Streamlit's own ``__main__``, which on this version calls the same entry point with the
    same name: ``streamlit.web.cli.main(prog_name="streamlit")``."""
    import streamlit.web.cli

    called = []
    monkeypatch.setattr(streamlit.web.cli, "main", lambda **kwargs: called.append(kwargs))
    app_api.python_m_streamlit(prog_name="streamlit")
    assert called == [{"prog_name": "streamlit"}]

    _fresh(monkeypatch, app_api.STREAMLIT_CLI)
    _without(monkeypatch, "streamlit.web.cli", "main")
    with caplog.at_level(logging.WARNING, logger="pluie_lab.private_api"):
        assert app_api.streamlit_cli_main() is app_api.python_m_streamlit
        assert app_api.streamlit_cli_main() is app_api.python_m_streamlit
    assert app_api.STREAMLIT_CLI.taken == FALLBACK
    assert "python -m streamlit" in _one_warning(caplog, app_api.STREAMLIT_CLI)
