"""AppTest: the home, import and export pages against a real SQLite file."""

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from db.datasets import import_pairs, store_totals
from pluie_core.wording import one_line
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


def upload(at, name, data: bytes):
    at.file_uploader[0].set_value((name, data, "application/octet-stream"))
    at.run()
    assert not at.exception, at.exception
    return at


def press(at, label):
    [b for b in at.button if b.label == label][0].click().run()
    assert not at.exception, at.exception
    return at


def test_import_page_maps_columns_of_a_generic_csv(app, engine):
    csv = b"left,right,verdict,uid\nThe cat drinks water.,The cat drinks milk.,0,p1\nA man sleeps.,A man is sleeping.,1,p2\n"
    at = upload(app("pages/import_pairs.py"), "mine.csv", csv)
    selects = {s.label: s for s in at.selectbox}
    selects["Source sentence (S)"].set_value("left")
    selects["Hypothesis sentence (H)"].set_value("right")
    selects["Gold label (optional)"].set_value("verdict")
    selects["Pair id (optional)"].set_value("uid")
    at.run()
    assert [m.value for m in at.metric][:3] == ["2", "0", "2"]
    at.text_input[0].set_value("my pairs")
    press(at, "Import")
    assert "Imported 2 pairs" in at.success[0].value
    assert store_totals(engine)["pairs"] == 2
    home = app()
    assert "my pairs" in home.dataframe[0].value["dataset"].tolist()


def test_import_page_reads_mrpc_as_is(app, engine):
    data = (DATASETS / "mrpc" / "msr_paraphrase_test.txt").read_bytes()
    at = upload(app("pages/import_pairs.py"), "msr_paraphrase_test.txt", data)
    assert "mrpc" in text_of(at)
    assert at.metric[0].value == "1,725"
    press(at, "Import")
    assert store_totals(engine)["pairs"] == 1725


@pytest.mark.parametrize(
    "name, data, message",
    [
        ("bad.csv", b"source,hypothesis\nok,fine\n,empty source\n", "empty"),
        ("bad.jsonl", b'{"source": "a", "hypothesis": "b"}\n{"source": "a"\n', "line 2"),
        ("bad.csv", b"\xff\xfe\xfa not text", "UTF-8"),
    ],
)
def test_import_page_shows_clear_errors_and_stores_nothing(app, engine, name, data, message):
    at = upload(app("pages/import_pairs.py"), name, data)
    if not at.error and at.selectbox:  # generic file: the problem shows once columns are mapped
        selects = {s.label: s for s in at.selectbox}
        selects["Source sentence (S)"].set_value("source")
        selects["Hypothesis sentence (H)"].set_value("hypothesis")
        at.run()
    assert at.error, text_of(at)
    assert message.lower() in at.error[0].value.lower()
    assert store_totals(engine)["pairs"] == 0


def test_import_page_refuses_a_name_already_taken(app, engine):
    import_pairs(engine, "taken", pd.DataFrame({"source": ["a"], "hypothesis": ["b"], "label": [1]}))
    csv = b"source,hypothesis\nx,y\n"
    at = upload(app("pages/import_pairs.py"), "taken.csv", csv)
    press(at, "Import")
    assert "already exists" in at.error[0].value
    assert store_totals(engine)["pairs"] == 1


def test_export_page_downloads_what_the_store_holds(app, engine):
    df = pd.DataFrame({"source": ["=1+1", "b"], "hypothesis": ["x", "y"], "label": [1, 0]})
    df["annotator:A"] = [3, 4]
    import_pairs(engine, "toy", df, annotator_scale="levels")
    at = app("pages/export.py")
    table = at.dataframe[0].value
    assert table["source"].tolist() == ["=1+1", "b"]
    assert table["majority_label"].tolist() == ["Same meaning", ""]
    assert [m for m in at.multiselect[0].value] == ["toy"]


ADMIN_PAGES = [
    "home",
    "import_pairs",
    "export",
    "scoring",
    "campaigns",
    "agreement",
    "thresholds",
    "distributions",
    "disagreements",
    "scorecard",
    "correlation",
    "preferences",
    "review",
    "pairs",
]


@pytest.mark.parametrize("name", ADMIN_PAGES)
def test_every_admin_page_refuses_visitors_on_its_own(name, engine, db_url, monkeypatch):
    """Streamlit can run a file of pages/ without app.py (first visit of a fresh server): each
    organiser's page must keep its door shut by itself."""
    import pandas as pd

    import_pairs(engine, "secret pairs", pd.DataFrame({"source": ["a"], "hypothesis": ["b"], "label": [1]}))
    monkeypatch.setenv("PLUIE_DB_URL", db_url)
    monkeypatch.setenv("PLUIE_NO_WORKER", "1")
    monkeypatch.setenv("PLUIE_ADMIN_PASSWORD", "s3cret")
    page = AppTest.from_file(str(REPO / "pages" / f"{name}.py"), default_timeout=60).run()
    assert not page.exception
    assert [t.label for t in page.text_input] == ["Account", "Password"]  # the sign-in form, and nothing else
    assert "secret pairs" not in text_of(page) and not page.dataframe and [b.label for b in page.button] == ["Sign in"]
    token = AppTest.from_file(str(REPO / "pages" / f"{name}.py"), default_timeout=60)
    token.query_params["token"] = "anything"
    token.run()
    assert [e.value for e in token.error] == ["This link opens the labelling view only."]


def export_page_reads(app, engine, monkeypatch, sources: list[str]):
    """The Export page on a dataset of these sources, and the ``limit`` of each export_frame read it made."""
    import db.export

    import_pairs(
        engine,
        "exported",
        pd.DataFrame({"source": sources, "hypothesis": [f"h-{s}" for s in sources], "label": [1] * len(sources)}),
    )
    real, limits = db.export.export_frame, []

    def recording(*args, **kwargs):
        limits.append(kwargs.get("limit"))
        return real(*args, **kwargs)

    monkeypatch.setattr(db.export, "export_frame", recording)
    return app("pages/export.py"), limits


def test_export_page_previews_without_building_the_whole_table(app, engine, monkeypatch):
    """At 100,000 pairs the whole wide table took seconds on every visit: the page counts the rows and
    reads the first 50 only; the files are built when a download is clicked."""
    at, limits = export_page_reads(app, engine, monkeypatch, [f"s{i}" for i in range(60)])
    assert limits == [50]
    assert len(at.dataframe[0].value) == 50 and at.dataframe[0].value["source"].tolist()[:2] == ["s0", "s1"]
    assert any(c.value.startswith("60 pairs ·") for c in at.caption)
    assert any("The first 50 pairs; the files hold all 60" in c.value for c in at.caption)
    # the files are made on the click: the buttons hold a deferred call, not bytes
    assert all(b.proto.deferred_file_id and not b.proto.url for b in at.get("download_button"))


def test_a_small_export_is_read_once_and_its_files_come_with_the_page(app, engine, monkeypatch):
    """Up to 50 rows the preview is the whole export: one read, and the buttons hold the files (a deferred
    call goes with the run that made it, and a click racing a rerun lost one in CI)."""
    at, limits = export_page_reads(app, engine, monkeypatch, ["a", "b", "c"])
    assert limits == [None]
    assert at.dataframe[0].value["source"].tolist() == ["a", "b", "c"]
    buttons = at.get("download_button")
    assert len(buttons) == 3 and all(b.proto.url and not b.proto.deferred_file_id for b in buttons)


def test_the_wide_export_of_a_crowd_leaves_out_its_annotator_columns_and_says_so(app, engine):
    """A column per annotator: 6,030 annotators over 100,000 pairs made a 603,000,000-cell table (53 s and
    13 GB to build, minutes more to encode) on a download's click. Beyond WIDE_ANNOTATOR_COLUMNS the wide
    file keeps every other column; the long layout has every label."""
    from db.analysis import add_labels
    from db.export import WIDE_ANNOTATOR_COLUMNS, export_annotator_count, export_frame

    sources = [f"s{i}" for i in range(60)]
    import_pairs(
        engine, "crowd", pd.DataFrame({"source": sources, "hypothesis": [f"h-{s}" for s in sources], "label": [1] * 60})
    )
    people = WIDE_ANNOTATOR_COLUMNS + 1
    add_labels(
        engine,
        pd.DataFrame(
            {
                "pair_id": [1 + i % 60 for i in range(people)],
                "annotator": [f"p{i:03d}" for i in range(people)],
                "level": [3] * people,
            }
        ),
    )
    assert export_annotator_count(engine) == people
    whole, slim = export_frame(engine), export_frame(engine, annotator_columns=False)
    kept = [c for c in whole.columns if not c.startswith("annotator:")]
    assert len(whole.columns) - len(kept) == people and list(slim.columns) == kept
    pd.testing.assert_frame_equal(slim, whole[kept])

    at = app("pages/export.py")
    assert any(f"labels from {people:,} annotators" in i.value for i in at.info)
    preview = at.dataframe[0].value
    assert not [c for c in preview.columns if c.startswith("annotator:")]
    assert preview["n_labels"].tolist() == whole["n_labels"].tolist()[:50]
    layout = next(r for r in at.radio if r.label == "Layout")
    layout.set_value("long").run()
    assert not at.info and len(at.dataframe[0].value) == 50 and "annotator" in at.dataframe[0].value.columns


def test_home_page_counts_new_labels_at_once(app, engine):
    """The Datasets page's figures are cached on the store's state: a label written after a visit
    shows on the next run of the page."""
    from db.analysis import add_labels

    import_pairs(engine, "toy", pd.DataFrame({"source": ["a", "b"], "hypothesis": ["x", "y"], "label": [1, 0]}))
    at = app()
    assert next(m.value for m in at.metric if m.label == "Labels") == "0"
    add_labels(engine, pd.DataFrame({"pair_id": [1, 2], "annotator": "late", "level": [3, 0]}))
    at.run()
    assert next(m.value for m in at.metric if m.label == "Labels") == "2"
    assert at.dataframe[0].value["labels"].tolist() == [2]


def test_csv_downloads_of_small_tables_come_with_the_page_and_large_ones_on_the_click():
    def page():
        import pandas as pd

        from ui.views.tables import SMALL_DOWNLOAD_ROWS, download_csv

        download_csv(pd.DataFrame({"a": range(SMALL_DOWNLOAD_ROWS)}), "small.csv")
        download_csv(pd.DataFrame({"a": range(SMALL_DOWNLOAD_ROWS + 1)}), "large.csv")

    at = AppTest.from_function(page, default_timeout=60).run()
    assert not at.exception
    small, large = at.get("download_button")
    assert small.proto.url and not small.proto.deferred_file_id
    assert large.proto.deferred_file_id and not large.proto.url


def test_the_home_page_keeps_the_description_and_the_import_note_apart(app, engine):
    pairs = pd.DataFrame({"source": ["a", "b", "a"], "hypothesis": ["x", "y", "x"]})
    import_pairs(engine, "pilot", pairs, description="Pairs from the pilot")
    shown = app().dataframe[0].value.set_index("dataset").loc["pilot", "description"]
    # a table cell draws no line break: "Pairs from the pilot  Imported 2 pairs..." ran together
    assert shown == (
        "Pairs from the pilot · Imported 2 pairs with duplicates skipped: an exact repeat of a pair is "
        "imported once (1 skipped)."
    )
    assert one_line("a\n\n b \n") == "a · b" and one_line(None) == ""


def test_the_paws_x_preview_shows_its_id_and_label_first(app):
    path = DATASETS / "paraphrasus" / "paws-x-test.json"
    at = app("pages/import_pairs.py")
    at.file_uploader[0].set_value((path.name, path.read_bytes(), "application/json"))
    at.run()
    assert not at.exception, at.exception
    preview = at.dataframe[-1].value  # the pairs as they will be imported (after the duplicates' list)
    assert list(preview.columns[:2]) == ["external_id", "label"], list(preview.columns)
    assert {"source", "hypothesis"} <= set(preview.columns) and len(preview) == 10
    assert any("6 exact duplicate pairs were skipped" in w.value for w in at.warning)
