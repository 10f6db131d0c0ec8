"""Find any pair (issue 19, item 6): the pairs browser's query (text, ids, gold label, label state,
score range, pages), gold marking by the file's own ids, and the Pairs page (AppTest): find a pair,
mark it gold, open it in Review; the Export page restricted to a campaign."""

from __future__ import annotations

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from db import annotators, serving
from db import campaigns as camp
from db import quality as qual
from db.analysis import add_labels, add_score_run
from db.campaigns import CampaignError
from db.engine import read_session
from db.export import export_frame
from db.models import GoldPair
from db.pairs import PairSearch, browse_pairs
from db.review import adjudicate
from tests.annotation_fixtures import make_dataset
from tests.test_annotation_pages import APP, store  # noqa: F401 (store: the pages' store fixture)

TEXTS = [
    (f"The cat number {i} drinks {'50% milk' if i == 7 else 'water'}.", f"A_cat {i} is drinking.") for i in range(30)
]


def build(engine):
    """A dataset of 30 pairs (gold 0/1, external ids "0".."29"), labels on 0-5 (2 and 3 disagree, 4 only
    Don't know and a level), decisions on 5, a run scoring every pair i / 10, a second dataset."""
    ds, ids = make_dataset(engine, "cats", TEXTS, label_kind="binary", gold=[i % 2 for i in range(30)])
    make_dataset(engine, "dogs", [(f"Dog {i}.", f"Hound {i}.") for i in range(5)])
    levels = {0: [3, 3], 1: [0], 2: [0, 2], 3: [1, 3], 4: [4, 2], 5: [1, 2]}
    add_labels(
        engine,
        pd.DataFrame(
            [
                {"pair_id": ids[i], "annotator": name, "level": level}
                for i, row in levels.items()
                for name, level in zip("AB", row)
            ]
        ),
    )
    adjudicate(engine, ids[5], 1, "Lena")
    run = add_score_run(engine, "lev", {pid: i / 10 for i, pid in enumerate(ids)})
    return ds, ids, run


def found(engine, ds, page=0, page_size=50, **search) -> list[int]:
    return browse_pairs(engine, ds, PairSearch(**search), page=page, page_size=page_size).rows["pair_id"].tolist()


def test_the_browser_finds_pairs_by_text_id_gold_state_and_score(store_url):
    from db import init_db

    engine = init_db(store_url)  # a SQLite file, then PostgreSQL (ILIKE, the correlated filters)
    ds, ids, run = build(engine)
    assert ids == list(range(1, 31)) and found(engine, ds) == ids  # the dataset's pairs only, in pair id order
    assert found(engine, ds, text="CAT NUMBER 1") == [ids[1]] + ids[10:20]  # either sentence, case aside
    assert found(engine, ds, text="50%") == [ids[7]] and found(engine, ds, text="a_cat 2") == [ids[2]] + ids[20:30]
    assert found(engine, ds, text="hound") == []  # another dataset's text
    # an id: the pair id or the file's own id ("12" is pair 12, and the file's id of pair 13)
    assert found(engine, ds, pair_ref="12") == [12, 13] and found(engine, ds, pair_ref="30") == [30]
    assert found(engine, ds, pair_ref=" 0 ") == [1]
    assert found(engine, ds, pair_ref="no such id") == []
    assert found(engine, ds, gold="with", gold_min=1) == ids[1::2]
    assert found(engine, ds, gold="without") == []
    assert found(engine, ds, state="unlabelled") == ids[6:]
    assert found(engine, ds, state="labelled") == ids[:6]
    assert found(engine, ds, state="disagreement") == [ids[2], ids[3], ids[5]]  # Don't know aside: 4 agrees
    assert found(engine, ds, state="adjudicated") == [ids[5]]
    assert found(engine, ds, run_id=run, score_min=0.5, score_max=0.8) == ids[5:9]
    assert found(engine, ds, state="labelled", run_id=run, score_min=0.3) == ids[3:6]

    page = browse_pairs(engine, ds, PairSearch(run_id=run), page=4, page_size=7)
    assert (page.total, page.n_pages, page.page) == (30, 5, 4) and page.rows["pair_id"].tolist() == ids[28:]
    assert page.rows["score"].tolist() == pytest.approx([2.8, 2.9])
    assert browse_pairs(engine, ds, page=99, page_size=7).page == 4  # past the end: the last page
    rows = browse_pairs(engine, ds).rows.set_index("pair_id")
    assert rows.loc[ids[2], "state"] == "disagreement" and rows.loc[ids[5], "final_level"] == "Slightly similar"
    assert rows.loc[ids[0], "labels"] == 2 and rows.loc[ids[6], "state"] == "unlabelled"
    engine.dispose()


def test_gold_marking_takes_the_files_own_ids(engine):
    ds, ids = make_dataset(
        engine, "mrpc", [(f"S {i}.", f"H {i}.") for i in range(12)], label_kind="binary", gold=[1] * 12
    )
    with engine.begin() as conn:  # the file's own ids: MRPC-like numbers, one repeated, one that is a pair id
        for i, pid in enumerate(ids):
            conn.exec_driver_sql(f"UPDATE pairs SET external_id = '{1089874 + i}' WHERE id = {pid}")
        conn.exec_driver_sql(f"UPDATE pairs SET external_id = '1089874' WHERE id = {ids[1]}")
        conn.exec_driver_sql(f"UPDATE pairs SET external_id = '{ids[2]}' WHERE id = {ids[9]}")
    cid = camp.create_campaign(engine, "C", [ds], quota=3, n_training=0)

    def gold() -> dict:
        with read_session(engine) as s:
            return {g.pair_id: g.level for g in s.query(GoldPair)}

    for refs, message in [
        (["1089874"], "names 2 pairs"),
        ([str(ids[2])], f"write pair:{ids[2]} or id:{ids[2]}"),
        (["1089880", "4242"], "Line 2: “4242” is neither a pair id nor the file's id"),
        (["pair:4242"], "no pair 4242"),
        ([""], "Line 1: give a pair id"),
    ]:
        with pytest.raises(CampaignError, match=message):
            qual.add_gold_pairs(engine, cid, pd.DataFrame({"pair": refs, "level": [3] * len(refs)}))
        assert gold() == {}  # all or nothing
    assert (
        qual.add_gold_pairs(
            engine,
            cid,
            pd.DataFrame(
                {"pair": ["1089880", f"pair:{ids[2]}", f"id:{ids[2]}", str(ids[3])], "level": [3, 0, 1, "Same meaning"]}
            ),
        )
        == 4
    )
    assert gold() == {ids[6]: 3, ids[2]: 0, ids[9]: 1, ids[3]: 3}


@pytest.fixture
def pages_store(store):  # noqa: F811 (the pages' store fixture: PLUIE_DB_URL set for AppTest)
    ds, ids, run = build(store)
    cid = camp.create_campaign(store, "Pilot", [ds], quota=3, overlap=1, n_training=0, seed=1)
    return store, ds, ids, cid


def test_the_pairs_page_finds_a_pair_marks_it_gold_and_opens_it_in_review(pages_store):
    engine, ds, ids, cid = pages_store
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("pages/pairs.py").run()
    assert not at.exception and at.dataframe[0].value["pair_id"].tolist() == ids  # 30 of 30: one page
    at.text_input(key="pairs-text").input("50% milk").run()
    table = at.dataframe[0].value
    assert table["pair_id"].tolist() == [ids[7]] and table["source"].tolist() == [TEXTS[7][0]]
    assert at.caption[0].value.startswith("1 pair matches")
    assert at.text[0].value == f"Source:     {TEXTS[7][0]}\nHypothesis: {TEXTS[7][1]}"  # user text as text
    at.selectbox(key="pairs-state").set_value("unlabelled").run()
    assert at.dataframe[0].value["pair_id"].tolist() == [ids[7]]

    answer = next(s for s in at.selectbox if s.label == "Known answer")
    answer.set_value(0)
    next(b for b in at.button if b.label == "Mark as gold").click().run()
    assert not at.exception and f"Pair {ids[7]} is a gold check now" in at.success[0].value
    assert at.dataframe[0].value["gold check in"].tolist() == ["Pilot"]
    with read_session(engine) as s:
        assert [(g.campaign_id, g.pair_id, g.level) for g in s.query(GoldPair)] == [(cid, ids[7], 0)]
    # a pair already served as an ordinary pair cannot become a check: a sentence, nothing changed
    aid, _ = annotators.create_annotator(engine, cid, "ann")
    annotators.set_annotator_profile(engine, aid, "Ann", "good")
    served = serving.serve_next(engine, aid).pair_id
    at.text_input(key="pairs-text").input("").run()
    at.selectbox(key="pairs-state").set_value("any").run()
    at.text_input(key="pairs-id").input(str(served)).run()
    at.selectbox(key="pairs-pick-0").set_value(served).run()
    next(b for b in at.button if b.label == "Mark as gold").click().run()
    assert not at.exception and "already been served as an ordinary pair" in at.error[0].value

    # open a pair in Review: one the queue lists (it disagrees) at its place, one it does not on its own
    at.text_input(key="pairs-id").input("").run()
    at.selectbox(key="pairs-state").set_value("disagreement").run()
    at.selectbox(key="pairs-pick-0").set_value(ids[3]).run()
    at.button(key="pairs-open-review").click().run()
    assert not at.exception and at.title[0].value == "Review"
    assert at.caption[0].value.startswith(f"Pair {ids[3]} · cats") and not at.info
    at.switch_page("pages/pairs.py").run()
    at.selectbox(key="pairs-state").set_value("any").run()
    at.text_input(key="pairs-text").input("50% milk").run()
    at.button(key="pairs-open-review").click().run()
    assert at.title[0].value == "Review" and f"Pair {ids[7]} is not among the pairs listed" in at.info[0].value
    assert at.caption[0].value.startswith(f"Pair {ids[7]} · cats")
    at.switch_page("pages/review.py")  # AppTest's own page is still Pairs: stay on Review for the next click
    next(b for b in at.button if b.label == "Back to the list").click().run()
    assert not at.info and at.caption[0].value.startswith(f"Pair {ids[3]} · cats")  # back where the queue was


def test_the_export_page_restricts_to_a_campaign_and_its_labelled_pairs(pages_store):
    engine, ds, ids, cid = pages_store
    aid, _ = annotators.create_annotator(engine, cid, "ann")
    annotators.set_annotator_profile(engine, aid, "Ann", "good")
    for _ in range(2):
        item = serving.serve_next(engine, aid)
        serving.record_label(engine, aid, item.position, 3, 2.0)
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("pages/export.py").run()
    # issue 35: the page opens on the campaign in progress (its queue: every pair of cats), not every dataset
    assert not at.exception and len(at.dataframe[0].value) == 30
    at.selectbox(key="scope_campaign").set_value(0).run()  # whole datasets: every pair of the store
    assert len(at.dataframe[0].value) == 35
    at.selectbox(key="scope_campaign").set_value(cid).run()
    assert len(at.dataframe[0].value) == 30
    at.radio[0].set_value("labelled").run()
    frame = at.dataframe[0].value
    assert frame["pair_id"].tolist() == export_frame(engine, campaign_id=cid, pairs="labelled")["pair_id"].tolist()
    assert len(frame) == 2 and [c for c in frame.columns if c.startswith("annotator:")] == ["annotator:Ann"]
    assert any(c.value.startswith("2 pairs") for c in at.caption)  # the scope's own caption comes first
    assert at.text_input[1].value == "Pilot"  # the publish form's title
