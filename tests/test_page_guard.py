"""The frame's one guard (app.py → ui.base.page.run_page): an unexpected exception on any page is one
sentence on the page and a log line with its traceback on the server, never a stack trace."""

import logging

import pytest
from streamlit.testing.v1 import AppTest

from db import annotators, serving
from db import campaigns as camp
from tests.annotation_fixtures import make_dataset, numbered_pairs
from tests.test_annotation_links import APP, store  # noqa: F401 (fixture)
from ui.base.page import PAGE_FAILED


@pytest.mark.page_error
def test_a_page_that_raises_shows_one_sentence_and_logs_its_traceback(store, monkeypatch, _no_page_error):  # noqa: F811
    import db.datasets

    def broken(engine):  # what two script runs racing through transformers' first import raised
        raise ImportError("cannot import name 'AutoTokenizer' from 'transformers'")

    monkeypatch.setattr(db.datasets, "datasets_overview", broken)
    at = AppTest.from_file(APP, default_timeout=30).run()
    assert not at.exception  # no stack trace on the page...
    assert [e.value for e in at.error] == [PAGE_FAILED]  # ...one sentence
    assert any(link.label == "Import" for link in at.get("page_link"))  # the frame (its menu) is drawn
    (record,) = _no_page_error  # ...and one log line with the traceback, on the server
    assert record.levelno == logging.ERROR and record.getMessage() == "The page 'Datasets' failed"
    assert "AutoTokenizer" in logging.Formatter().formatException(record.exc_info)
    at.switch_page("pages/import_pairs.py").run()  # the other pages are unharmed
    assert not at.exception and not at.error

    # the annotators' page runs inside the same guard
    ds, _ = make_dataset(store, "demo", numbered_pairs(6))
    campaign = camp.create_campaign(store, "Pilot", [ds], n_training=0, quota=2)
    aid, token = annotators.create_annotator(store, campaign, "a")
    annotators.set_annotator_profile(store, aid, "Ann", "good")
    monkeypatch.setattr(serving, "serve_next", lambda engine, annotator_id: 1 / 0)
    annotator = AppTest.from_file(APP, default_timeout=30)
    annotator.query_params["token"] = token
    annotator.run()
    assert not annotator.exception and [e.value for e in annotator.error] == [PAGE_FAILED]
    assert len(_no_page_error) == 2 and "ZeroDivisionError" in logging.Formatter().formatException(
        _no_page_error[1].exc_info
    )
