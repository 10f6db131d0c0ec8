"""The private APIs the code reaches (pluie_core/private_api.py: scipy's; pages/private_api.py: Streamlit's):
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

from pages import private_api as app_api
from pluie_core import private_api as library_api
from pluie_core.private_api import FALLBACK, PRIVATE
from tests.paths import REPO

# each coupling, and the call that takes its path
CHECKS = {
    library_api.KENDALL_DIS: library_api.kendall_discordant,
    app_api.RUNTIME: app_api.runtime_exists,
    app_api.PAGES_MANAGER: app_api.pages_manager,
    app_api.SCRIPT_RUN_CTX: app_api.script_run_ctx,
    app_api.STATIC_JS: lambda: app_api.static_js_files(("DataFrame", "PlotlyChart")),
    app_api.MISSING_CONTEXT_LOG: app_api.missing_context_logger,
    app_api.AUTHLIB: app_api.authlib_installed,
    app_api.DRAWING: app_api.drawing_modules,
}


def test_every_coupling_is_checked_here():
    assert set(map(id, CHECKS)) == {id(c) for c in [*library_api.COUPLINGS.values(), *app_api.COUPLINGS.values()]}


@pytest.mark.parametrize("coupling", list(CHECKS), ids=lambda c: c.name)
def test_the_private_path_is_taken_on_the_pinned_versions(coupling):
    CHECKS[coupling]()
    assert coupling.taken == PRIVATE, coupling.message()


def test_the_pinned_versions_are_the_ones_checked():
    import scipy
    import streamlit

    assert f"scipy {scipy.__version__}" == library_api.KENDALL_DIS.checked_on
    assert f"Streamlit {streamlit.__version__}" == app_api.STREAMLIT
    pins = (REPO / "requirements.txt").read_text().replace(" ", "").lower().splitlines()
    assert f"streamlit=={streamlit.__version__}" in pins and f"scipy=={scipy.__version__}" in pins


def test_the_private_objects_are_the_ones_the_code_uses():
    from streamlit.runtime import Runtime
    from streamlit.runtime.pages_manager import PagesManager
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    assert app_api.runtime_exists() == Runtime.exists and app_api.runtime_exists()() is Runtime.exists()
    assert app_api.pages_manager() is PagesManager
    assert app_api.script_run_ctx() is get_script_run_ctx and get_script_run_ctx(suppress_warning=True) is None
    names = app_api.static_js_files(("DataFrame", "PlotlyChart"))
    assert [name.split(".")[0] for name in names] == ["DataFrame", "PlotlyChart"]
    assert all((app_api.static_js_folder() / name).is_file() for name in names)
    assert app_api.missing_context_logger() is logging.getLogger(app_api.MISSING_CONTEXT_LOGGER)
    assert app_api.authlib_installed() is True  # requirements.txt installs it
    assert app_api.drawing_modules() == app_api.DRAWING_MODULES


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
    np.testing.assert_allclose(slow_table[["r", "ci_low", "ci_high"]].to_numpy(float),
                               fast_table[["r", "ci_low", "ci_high"]].to_numpy(float), rtol=0, atol=1e-12)
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


@pytest.mark.parametrize("module, names, call, coupling", [
    ("streamlit.runtime", ("Runtime",), app_api.runtime_exists, app_api.RUNTIME),
    ("streamlit.runtime.pages_manager", ("PagesManager",), app_api.pages_manager, app_api.PAGES_MANAGER),
    ("streamlit.runtime.scriptrunner", ("get_script_run_ctx",), app_api.script_run_ctx, app_api.SCRIPT_RUN_CTX),
], ids=["Runtime", "PagesManager", "get_script_run_ctx"])
def test_a_streamlit_without_the_internal_gives_none_and_a_warning(monkeypatch, caplog, module, names, call,
                                                                  coupling):
    _fresh(monkeypatch, coupling)
    _without(monkeypatch, module, *names)
    with caplog.at_level(logging.WARNING, logger="pluie_lab.private_api"):
        assert call() is None
        assert call() is None
    assert coupling.taken == FALLBACK
    assert [r.levelno for r in caplog.records if coupling.name in r.getMessage()] == [logging.WARNING]


def test_without_get_script_run_ctx_a_thread_off_a_page_is_not_let_through_as_open(monkeypatch):
    """The sign-in resolver's fallback fails closed: it asks for the session's person rather than saying
    "no session" (which db.access reads as OPEN, everything allowed)."""
    from pages import signin

    assert signin.current_actor_or_none() is None  # private path: this test's thread is no page's run
    asked = []
    monkeypatch.setattr(signin, "signed_in_actor", lambda: asked.append(1) or signin.NOBODY)
    monkeypatch.setattr(app_api, "script_run_ctx", lambda: None)
    assert signin.current_actor_or_none() is signin.NOBODY and asked == [1]


def test_streamlit_files_and_modules_that_are_gone_are_left_out(monkeypatch, tmp_path):
    _fresh(monkeypatch, app_api.STATIC_JS)
    (tmp_path / "DataFrame.abc.js").write_text("")
    monkeypatch.setattr(app_api, "static_js_folder", lambda: tmp_path)
    assert app_api.static_js_files(("DataFrame", "PlotlyChart")) == ("DataFrame.abc.js",)
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


def test_a_broken_read_ahead_at_start_is_logged_with_its_traceback_and_the_server_goes_on(monkeypatch, caplog,
                                                                                          capsys):
    """An ImportError in the read-ahead once hid a broken import: it is now a warning with the traceback."""
    from streamlit.runtime import Runtime

    serve = _serve()
    monkeypatch.setattr(Runtime, "exists", classmethod(lambda cls: True))  # as under `streamlit run`
    monkeypatch.setitem(sys.modules, "pages.read_ahead", None)  # `from pages.read_ahead import ...` fails
    with caplog.at_level(logging.WARNING):
        assert serve.read_ahead_at_start(timeout=5) is None  # no exception: the server stays up
    [record] = [r for r in caplog.records if "read-ahead" in r.getMessage()]
    assert record.levelno == logging.WARNING and record.exc_info and issubclass(record.exc_info[0], ImportError)
    assert "pages.read_ahead" in caplog.text  # the traceback names what broke
    assert serve.READ_AHEAD not in capsys.readouterr().err  # and it does not claim the figures are read


def test_the_warm_up_still_imports_streamlits_drawing_modules():
    assert {"pyarrow", "torch", *app_api.DRAWING_MODULES} <= set(_serve().page_imports())
