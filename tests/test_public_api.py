"""pluie_core's public API is explicit (issue 57): ``__all__`` names it, static tools read it from the
``if TYPE_CHECKING:`` imports of pluie_core/__init__.py, and at run time each name comes from its module
the first time it is read, so ``import pluie_core`` stays cheap (no pandas, numpy or torch)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from importlib import import_module

import pytest

import pluie_core
from tests.paths import REPO


def _type_checking_imports() -> dict[str, str]:
    """{name: module} of the imports under ``if TYPE_CHECKING:`` in pluie_core/__init__.py, read with ast."""
    tree = ast.parse((REPO / "pluie_core" / "__init__.py").read_text(encoding="utf-8"))
    blocks = [
        node for node in tree.body if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING"
    ]
    assert len(blocks) == 1
    return {
        alias.asname or alias.name: node.module
        for node in blocks[0].body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }


def test_the_static_and_the_runtime_lists_are_one():
    static = _type_checking_imports()
    assert sorted(pluie_core.__all__) == pluie_core.__all__  # kept sorted
    assert set(pluie_core.__all__) == set(static) == set(pluie_core._PUBLIC)
    assert static == pluie_core._PUBLIC  # each name from the same module either way
    assert {"PluieScorer", "load_pairs", "LLMJudge", "BASELINES"} <= set(pluie_core.__all__)


@pytest.mark.parametrize("name", sorted(pluie_core._PUBLIC))
def test_each_public_name_is_its_modules_object(name):
    assert getattr(pluie_core, name) is getattr(import_module(pluie_core._PUBLIC[name]), name)
    assert name in dir(pluie_core)


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="has no attribute 'PluieScore'"):
        pluie_core.PluieScore
    assert not hasattr(pluie_core, "_LAZY")


def test_importing_the_package_imports_none_of_its_modules():
    """What the web pages and the worker pay for ``import pluie_core`` (every ``pluie_core.x`` import runs
    it first): no submodule, and none of the heavy libraries; then a name brings its module only."""
    probe = (
        "import json, sys\n"
        "import pluie_core\n"
        "before = sorted(m for m in sys.modules if m.startswith('pluie_core.') or m in ('pandas', 'numpy', 'torch', 'transformers'))\n"
        "pluie_core.diff_html\n"
        "after = sorted(m for m in sys.modules if m.startswith('pluie_core.') or m in ('pandas', 'numpy', 'torch'))\n"
        "print(json.dumps([before, after, pluie_core.__version__]))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    before, after, version = json.loads(done.stdout)
    assert before == []
    assert "pluie_core.diff" in after and not {"pandas", "numpy", "torch"} & set(after)  # the word diff needs none
    assert "pluie_core.io" not in after  # nor the modules of the other names
    assert version == pluie_core.__version__
