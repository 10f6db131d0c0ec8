"""The fields a person fills and the names they type (issue 38, items 1-3): each field is bounded and cleaned
in its one write or read path, the same on SQLite and PostgreSQL, with its own sentence (never the driver's
error, never the page's generic guard); the Pairs page's search is Unicode case-insensitive on both stores
alike; names are one name however they were typed (NFC, invisible characters removed) and refuse control
characters."""

from __future__ import annotations

import unicodedata

import pandas as pd
import pytest
import sqlalchemy as sa
from streamlit.testing.v1 import AppTest

from db import annotators, init_db, pairs, read_session
from db import campaigns as camp
from db.cli import main as db_main
from db.datasets import ImportRejected
from db.models import Adjudication, Dataset, ScoreRun
from db.pairs import PairSearch, browse_pairs
from db.preferences import import_preferences
from db.review import ReviewError, adjudicate
from db.runs import RunError, create_run
from tests.annotation_fixtures import make_dataset, numbered_pairs
from tests.test_annotation_pages import APP, store  # noqa: F401 (store: the pages' store fixture)
from tests.test_store_limits import _refused  # the sentence
from ui.base.page import PAGE_FAILED

BIG = 2**53 - 1  # the largest whole number a browser's number box sends exactly
ESC = "a\x1b[31m"  # an escape sequence: red text in a terminal that prints the log


# ---------------------------------------------------------------- item 1: numbers and NUL, both stores


def test_a_campaigns_numbers_past_their_bounds_are_a_sentence_on_both_stores(store_url):
    engine = init_db(store_url)
    ds, _ = make_dataset(engine, "d", numbered_pairs(12))
    create = lambda **kw: camp.create_campaign(engine, "C", [ds], **{"quota": 5, "n_training": 2, **kw})  # noqa: E731
    for kwargs, sentence in [
        ({"quota": BIG}, f"Pairs per annotator must be between 1 and 1,000,000; got {BIG}."),
        ({"quota": 0}, "Pairs per annotator must be between 1 and 1,000,000; got 0."),
        ({"overlap": 2**31}, "Annotators per pair must be between 1 and 1,000; got 2147483648."),
        ({"n_training": BIG}, f"Training pairs must be between 0 and 10,000; got {BIG}."),
        ({"seed": BIG}, f"The seed must be between 0 and 2,147,483,647; got {BIG}."),
        ({"seed": -1}, "The seed must be between 0 and 2,147,483,647; got -1."),
        ({"overlap_max": BIG}, f"The most annotators per pair must be between 1 and 1,000; got {BIG}."),
        ({"selection": {"sample": BIG}}, f"The sample must be between 0 and 2,147,483,647; got {BIG}."),
        ({"selection": {"start": BIG}}, f"The first pair must be between 1 and 2,147,483,647; got {BIG}."),
    ]:
        _refused(engine, camp.CampaignError, lambda: create(**kwargs), sentence)
    # at the bounds: stored as given
    cid = create(quota=1_000_000, seed=2**31 - 1, overlap_max=1000)
    assert (camp.get_campaign(engine, cid).quota, camp.get_campaign(engine, cid).seed) == (1_000_000, 2**31 - 1)
    engine.dispose()


def test_nul_and_control_characters_in_what_people_type_are_a_sentence_on_both_stores(store_url):
    engine = init_db(store_url)
    ds, ids = make_dataset(engine, "d", numbered_pairs(6))
    cid = camp.create_campaign(engine, "C", [ds], quota=2, n_training=0)
    _refused(
        engine,
        camp.CampaignError,
        lambda: annotators.create_annotators(engine, cid, ["ok", "a\x00b"]),
        "The annotator name “a\ufffdb…” contains a control character (U+0000); names are plain text on one line.",
    )
    aid, _ = annotators.create_annotator(engine, cid, "ann")
    with pytest.raises(camp.CampaignError) as caught:
        annotators.set_annotator_profile(engine, aid, "An\x00n", "good")
    assert str(caught.value) == ("Your name contains a control character (U+0000); names are plain text on one line.")
    assert annotators.annotator_view(engine, aid).display_name is None
    _refused(
        engine,
        ReviewError,
        lambda: adjudicate(engine, ids[0], 2, "Lena", note="because\x00"),
        "A note cannot hold a NUL character (U+0000): remove it, then decide again.",
    )
    _refused(
        engine,
        ReviewError,
        lambda: adjudicate(engine, ids[0], 2, "Le\x00na"),
        "The reviewer's name contains a control character (U+0000); names are plain text on one line.",
    )
    _refused(
        engine,
        ReviewError,
        lambda: adjudicate(engine, ids[0], 2, "Lena", note="n" * 2001),
        "A note has at most 2,000 characters.",
    )
    _refused(
        engine,
        RunError,
        lambda: create_run(engine, model="levenshtein", kind="baseline", name="r\x00"),
        "The run name contains a control character (U+0000); names are plain text on one line.",
    )
    _refused(
        engine,
        RunError,
        lambda: create_run(engine, model="org/m\x00del"),
        "The model contains a control character (U+0000): give a model id or a path on one line.",
    )
    _refused(
        engine,
        RunError,
        lambda: create_run(engine, model="org/model", answers=["Y\x00es", "No"]),
        "The answer words contain a control character (U+0000): give two plain words.",
    )
    _refused(
        engine,
        RunError,
        lambda: create_run(engine, model="org/model", answers=["Y" * 101, "No"]),
        "An answer word has 101 characters; the limit is 100.",
    )
    _refused(
        engine,
        RunError,
        lambda: create_run(engine, model="org/model", batch_size=BIG),
        f"The batch size must be between 1 and 100,000; got {BIG}.",
    )
    _refused(
        engine,
        RunError,
        lambda: create_run(engine, model="levenshtein", kind="baseline", options={"x": "\x00"}),
        "Option x contains a control character (U+0000): give its value on one line.",
    )
    items = pd.DataFrame({"source": ["s"], "candidate_a": ["a"], "candidate_b": ["b"], "preferred": ["A"]})
    _refused(
        engine,
        ImportRejected,
        lambda: import_preferences(engine, "p\x00", items),
        "The dataset name contains a control character (U+0000); names are plain text on one line.",
    )
    _refused(
        engine,
        ImportRejected,
        lambda: import_preferences(engine, "p", items, description="a\x00"),
        "The description cannot hold a NUL character (U+0000): remove it, then import again.",
    )
    # at the bounds and plain: stored
    assert adjudicate(engine, ids[0], 2, "Lena", note="n" * 2000) == 1
    engine.dispose()


def test_the_pairs_search_bounds_its_ids_and_text_on_both_stores(store_url):
    engine = init_db(store_url)
    ds, ids = make_dataset(engine, "d", numbered_pairs(4))
    with engine.begin() as conn:  # a file's own id that is a long number (beyond what a pair id can be)
        conn.execute(sa.text("UPDATE pairs SET external_id = '12345678901' WHERE id = :i"), {"i": ids[1]})

    def found(**search):
        return browse_pairs(engine, ds, PairSearch(**search)).rows["pair_id"].tolist()

    assert found(pair_ref="12345678901") == [ids[1]]  # the file's id still matches
    assert found(pair_ref="2147483648") == [] and found(pair_ref="9" * 30) == []  # no pair has that id
    assert found(pair_ref="²") == [] and found(pair_ref="٣") == []  # digits to str.isdigit, not ids
    assert found(pair_ref=str(ids[-1])) == [ids[-1]]  # a pair id (the file's ids are "0".."3")
    for search, sentence in [
        ({"text": "x" * 100_000}, "The text to find has 100,000 characters; the limit is 1,000."),
        ({"text": "milk\x00"}, "The text to find cannot hold a NUL character (U+0000)."),
        ({"pair_ref": "1" * 201}, "The id has 201 characters; the limit is 200."),
        ({"pair_ref": "1\x00"}, "The id cannot hold a NUL character (U+0000)."),
    ]:
        with pytest.raises(getattr(pairs, "PairSearchError", ValueError)) as caught:
            found(**search)
        assert str(caught.value) == sentence
    assert found(text="x" * 1000) == []  # at the limit: searched
    engine.dispose()


def test_gold_checks_by_id_bound_the_ids_typed_on_both_stores(store_url):
    from db import quality as qual

    engine = init_db(store_url)
    ds, ids = make_dataset(engine, "d", numbered_pairs(6))
    cid = camp.create_campaign(engine, "C", [ds], quota=2, n_training=0)

    def mark(ref):
        return qual.add_gold_pairs(engine, cid, pd.DataFrame({"pair": [ref], "level": [3]}))

    for ref in ("9" * 30, "2147483648", "pair:12345678901", "²"):
        shown = ref.removeprefix("pair:")
        with pytest.raises(camp.CampaignError, match=f"Line 1: (“{shown}” is neither|there is no pair {shown})"):
            mark(ref)
    with pytest.raises(camp.CampaignError, match=r"Line 1: .* NUL character \(U\+0000\)"):
        mark("1\x00")
    assert mark(str(ids[-1])) == 1
    engine.dispose()


# ---------------------------------------------------------------- item 2: case aside, beyond ASCII


def test_case_aside_is_unicode_on_sqlite_as_on_postgresql(store_url):
    engine = init_db(store_url)
    texts = [
        ("Été indien.", "x 0"),
        ("UN ÉTÉ CHAUD.", "x 1"),
        ("L'ÉCOLE.", "x 2"),
        ("Die Straße.", "x 3"),
        ("DIE STRASSE.", "x 4"),
        ("Ölçü ve ÇIZGI.", "x 5"),
        ("Ωmega ΣΟΦΊΑ.", "x 6"),
        ("50% off_", "x 7"),
    ]
    ds, ids = make_dataset(engine, "u", texts)

    def found(text):
        return [ids.index(i) for i in browse_pairs(engine, ds, PairSearch(text=text)).rows["pair_id"]]

    assert found("été") == [0, 1] and found("ÉTÉ") == [0, 1]
    assert found("école") == [2] and found("l'École") == [2]
    # lower() on both sides, as PostgreSQL's ILIKE: ß is its own lower case, so STRASSE stays apart
    assert found("straße") == [3] and found("STRASSE") == [4] and found("strasse") == [4]
    assert found("sofía") == [] and found("σοφία") == [6] and found("ΩMEGA") == [6]
    assert found("ölçü") == [5]
    assert found("50%") == [7] and found("%") == [7] and found("f_") == [7] and found("_") == [7]  # LIKE signs as text
    engine.dispose()


# ---------------------------------------------------------------- item 3: names that cannot impersonate


def test_names_are_one_name_however_typed_and_refuse_control_characters(store_url):
    engine = init_db(store_url)
    ds, ids = make_dataset(engine, "d", numbered_pairs(6))
    nfd = unicodedata.normalize("NFD", "Zoë")
    cid = camp.create_campaign(engine, "Pi\u200blot", [ds], quota=2, n_training=0)
    assert camp.get_campaign(engine, cid).name == "Pilot"
    _refused(
        engine,
        camp.CampaignError,
        lambda: camp.create_campaign(engine, "Pilot\u200d", [ds], quota=2, n_training=0),
        "A campaign called “Pilot” already exists.",
    )
    _refused(
        engine,
        camp.CampaignError,
        lambda: camp.create_campaign(engine, ESC, [ds]),
        "The campaign name contains a control character (U+001B); names are plain text on one line.",
    )

    made = annotators.create_annotators(engine, cid, ["sam", nfd])
    assert [name for _, name, _ in made] == ["sam", "Zoë"]  # NFC
    for same, taken in (("s\u200bam", "sam"), ("\ufeffSAM", "sam"), ("Zoë", "Zoë"), (nfd + "\u2060", "Zoë")):
        _refused(
            engine,
            camp.CampaignError,
            lambda: annotators.create_annotators(engine, cid, [same]),
            f"This campaign already has an annotator called “{taken}”: no link was created. "
            "Choose another name, or give them a new link under “Replace a lost link”.",
        )
    _refused(
        engine,
        camp.CampaignError,
        lambda: annotators.create_annotators(engine, cid, ["kim", "k\u200bim"]),
        "“kim” is in the list twice: give each annotator a name of their own.",
    )
    _refused(
        engine,
        camp.CampaignError,
        lambda: annotators.create_annotators(engine, cid, [ESC]),
        "The annotator name “a\ufffd[31m…” contains a control character (U+001B); names are plain text on one line.",
    )
    _refused(
        engine,
        camp.CampaignError,
        lambda: annotators.create_annotators(engine, cid, ["bell\x07"]),
        "The annotator name “bell\ufffd…” contains a control character (U+0007); names are plain text on one line.",
    )

    # display names: the same rule, so no one shows up as someone else
    (first, _), (second, _) = [(a, t) for a, _, t in made]
    annotators.set_annotator_profile(engine, first, nfd, "good")
    assert annotators.annotator_view(engine, first).display_name == "Zoë"
    with pytest.raises(camp.CampaignError, match="already goes by “Zoë”"):
        annotators.set_annotator_profile(engine, second, "Zo\u200bë", "good")
    with pytest.raises(camp.CampaignError, match=r"U\+001B"):
        annotators.set_annotator_profile(engine, second, ESC, "good")

    # reviewers and runs
    adjudicate(engine, ids[0], 2, "Le\u200bna" + "\u0301")  # NFC, zero-width space removed
    with read_session(engine) as session:
        assert session.scalar(sa.select(Adjudication.reviewer)) == "Len\u00e1"
    _refused(
        engine,
        ReviewError,
        lambda: adjudicate(engine, ids[1], 2, ESC),
        "The reviewer's name contains a control character (U+001B); names are plain text on one line.",
    )
    run = create_run(engine, model="levenshtein", kind="baseline", name=nfd)
    with read_session(engine) as session:
        assert session.get(ScoreRun, run).name == "Zoë"
    _refused(
        engine,
        RunError,
        lambda: create_run(engine, model="levenshtein", kind="baseline", name="Zoë\u200b"),
        "A run named 'Zoë' already exists; choose another name.",
    )
    _refused(
        engine,
        RunError,
        lambda: create_run(engine, model="levenshtein", kind="baseline", name=ESC),
        "The run name contains a control character (U+001B); names are plain text on one line.",
    )
    items = pd.DataFrame({"source": ["s"], "candidate_a": ["a"], "candidate_b": ["b"], "preferred": ["A"]})
    assert import_preferences(engine, "pr\u200bef" + nfd, items).dataset_name == "prefZoë"
    engine.dispose()


def test_the_command_line_finds_a_name_however_it_was_typed(engine, tmp_path, capsys):
    ds, _ = make_dataset(engine, "Zoë's set", numbered_pairs(4))
    url = str(engine.url)
    folder = tmp_path / "out"
    nfd = unicodedata.normalize("NFD", "Zoë's\u200b set")
    assert db_main(["publish", str(folder), "--licence", "mit", "--dataset", nfd, "--db", url]) == 0
    assert (folder / "README.md").is_file()
    assert db_main(["publish", str(tmp_path / "o2"), "--licence", "mit", "--dataset", ESC, "--db", url]) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == "error: The dataset name contains a control character (U+001B); names are plain text on one line."


# ---------------------------------------------------------------- the pages say it in a sentence


@pytest.fixture
def pairs_store(store):  # noqa: F811
    ds, ids = make_dataset(store, "cats", [("Un été.", "x"), ("ÉTÉ!", "y"), ("Hiver.", "z")])
    return store, ds, ids


def test_the_pairs_page_answers_a_long_id_and_a_long_query_with_a_sentence(pairs_store):
    engine, ds, ids = pairs_store
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("pages/pairs.py").run()
    at.text_input(key="pairs-id").input("9" * 30).run()
    assert not at.exception and PAGE_FAILED not in [e.value for e in at.error]
    assert [i.value for i in at.info] == ["No pair of this dataset matches: loosen the search or the filters."]
    at.text_input(key="pairs-id").input("").run()
    at.text_input(key="pairs-text").input("x" * 100_000).run()
    assert [e.value for e in at.error] == ["The text to find has 100,000 characters; the limit is 1,000."]
    at.text_input(key="pairs-text").input("été").run()
    assert not at.error and at.dataframe[0].value["pair_id"].tolist() == ids[:2]


def test_the_campaign_form_and_the_profile_form_say_what_is_out_of_bounds(store):  # noqa: F811
    make_dataset(store, "demo", numbered_pairs(20))
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("pages/campaigns.py").run()
    at.text_input[0].input("Pilot")
    at.multiselect[0].select(at.multiselect[0].options[0])
    number = {n.label: n for n in at.number_input}
    assert (number["Seed"].max, number["Pairs per annotator"].max) == (2**31 - 1, 1_000_000)
    number["Seed"].set_value(BIG)  # past the box's bound (a forged message): Streamlit keeps the bound's side
    next(b for b in at.button if b.label == "Create campaign").click().run()
    assert not at.exception and not at.error
    assert [(c.name, c.seed) for c in camp.list_campaigns(store)] == [("Pilot", 0)]

    ds = camp.dataset_choices(store)[0][0]
    cid = camp.create_campaign(store, "C", [ds], quota=2, n_training=0)
    _, token = annotators.create_annotator(store, cid, "ann")
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["token"] = token
    at.run()
    at.text_input[0].input("A\x00nn")
    at.radio[0].set_value("good")
    at.button[0].click().run()
    assert not at.exception
    assert [e.value for e in at.error] == [
        "Your name contains a control character (U+0000); names are plain text on one line."
    ]


def test_a_benchmarks_name_and_a_cards_title_are_bounded_and_clean_on_both_stores(store_url, tmp_path):
    """The Scorecard's benchmark name (a 200-character column: PostgreSQL refused a longer one with a driver
    error) and the Export page's card title follow a name's rules: the same sentence on both stores."""
    from db.evaluation import assign_challenge
    from db.publish import PublishError, publish_dataset

    engine = init_db(store_url)
    dataset_id, _ = make_dataset(engine, "d", numbered_pairs(6), label_kind="binary", gold=[i % 2 for i in range(6)])
    with pytest.raises(ValueError, match="The benchmark's name has 300 characters; the limit is 200"):
        assign_challenge(engine, dataset_id, "Classify!", "b" * 300)
    with pytest.raises(ValueError, match=r"control character \(U\+001B\)"):
        assign_challenge(engine, dataset_id, "Classify!", "bench\x1b[31m")
    with read_session(engine) as session:
        assert session.get(Dataset, dataset_id).benchmark is None  # nothing written
    assign_challenge(engine, dataset_id, "Classify!", "Ben\u200bch")
    with read_session(engine) as session:
        assert session.get(Dataset, dataset_id).benchmark == "Bench"
    with pytest.raises(PublishError, match=r"The title contains a control character \(U\+0007\)"):
        publish_dataset(engine, tmp_path / "out", licence="mit", title="My\x07 dataset")
    assert not (tmp_path / "out").exists()
