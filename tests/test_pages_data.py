"""AppTest: the home, import and export pages against a real SQLite file."""
import io
import json

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from db.datasets import import_pairs, store_totals
from tests.paths import DATASETS, REPO

APP = str(REPO / "app.py")


@pytest.fixture
def app(db_url, engine, monkeypatch):
    monkeypatch.setenv("PLUIE_DB_URL", db_url)
    monkeypatch.setenv("PLUIE_NO_WORKER", "1")

    def make(page=None):
        at = AppTest.from_file(APP, default_timeout=60)
        at.run()
        if page:
            at.switch_page(page)
            at.run()
        assert not at.exception, at.exception
        return at

    return make


def text_of(at):
    parts = [e.value for e in at.markdown] + [e.value for e in at.caption] + [str(e.value) for e in at.info]
    parts += [e.value for e in at.success] + [e.value for e in at.error] + [e.value for e in at.warning]
    return "\n".join(str(p) for p in parts)


def test_home_page_empty_store_invites_an_import(app):
    at = app()
    assert at.title[0].value == "PLUIE Lab"
    assert any("No dataset yet" in i.value for i in at.info)


def test_home_page_lists_datasets_with_progress(app, engine):
    df = pd.DataFrame({"source": ["a", "b", "c"], "hypothesis": ["x", "y", "z"], "label": [1, 0, None]})
    df["annotator:A"] = [1, None, 2]
    import_pairs(engine, "toy", df, annotator_scale="levels")
    at = app()
    table = at.dataframe[0].value
    row = table[table["dataset"] == "toy"].iloc[0]
    assert (row["pairs"], row["gold labels"], row["labelled pairs"], row["labels"]) == (3, 2, 2, 2)
    assert [m.value for m in at.metric][:3] == ["1", "3", "2"]


def test_home_page_deletes_a_dataset_only_when_confirmed(app, engine):
    import_pairs(engine, "toy", pd.DataFrame({"source": ["a"], "hypothesis": ["b"], "label": [1]}))
    at = app()
    at.selectbox[0].set_value("toy").run()
    delete = [b for b in at.button if b.label == "Delete"][0]
    assert delete.disabled
    at.checkbox[0].check().run()
    [b for b in at.button if b.label == "Delete"][0].click().run()
    assert store_totals(engine)["datasets"] == 0
