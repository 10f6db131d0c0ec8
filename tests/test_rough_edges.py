"""Issue 14, the organiser's rough edges (points 3-7, 9, 10): each against a real SQLite store,
through the pages (Streamlit's AppTest) where the user sees it."""
from __future__ import annotations

import shutil

import pandas as pd
import pytest
from sqlalchemy import func, select
from streamlit.testing.v1 import AppTest

from db import annotators, campaigns as camp, serving
from db.datasets import import_pairs
from db.engine import read_session
from db.models import ScoreRun
from db.queue import fail_run
from db.runs import RunError, create_run, pause_run
from tests.paths import REPO
from tests.store_fixtures import add_pairs, sentence_pairs
from worker import ScoringWorker

APP = str(REPO / "app.py")


@pytest.fixture
def store(app_store):
    return app_store  # tests.store_fixtures: the app on this test's store


def open_page(page: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.switch_page(f"pages/{page}.py")
    at.run()
    assert not at.exception, at.exception
    return at


def rerun(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, at.exception
    return at


def texts(at: AppTest) -> str:
    parts = [e.value for kind in ("markdown", "caption", "error", "success", "info", "warning", "title", "subheader")
             for e in at.get(kind) if isinstance(getattr(e, "value", None), str)]
    parts += [str(getattr(p, "proto", "")) for p in at.get("progress")]
    return "\n".join(parts)


def widget(elements, label):
    return next(w for w in elements if w.label == label)


def score_everything(engine, run_id: int) -> None:
    ScoringWorker(engine, device="cpu", run_ids=[run_id], poll_seconds=0.1).run(exit_when_idle=True)


def n_runs(engine) -> int:
    with read_session(engine) as session:
        return session.scalar(select(func.count(ScoreRun.id)))


# ------------------------------------------------------------------ 3. failed runs and progress


def test_3_failed_and_cancelled_runs_leave_the_progress_and_the_choices(store, tmp_path):
    engine = store
    add_pairs(engine, "d", sentence_pairs(5))
    lev = create_run(engine, name="lev", kind="baseline", model="levenshtein")
    score_everything(engine, lev)
    broken = create_run(engine, name="broken", model=str(tmp_path / "no-model"))
    fail_run(engine, broken, "The model cannot be loaded.")
    cancelled = create_run(engine, name="chrf", kind="baseline", model="chrf")
    pause_run(engine, cancelled)
    from db.runs import cancel_run
    cancel_run(engine, cancelled)

    at = open_page("home")
    table = at.dataframe[0].value
    row = table[table["dataset"] == "d"].iloc[0]
    assert (row["scores"], row["scores queued"], row["scoring"]) == (5, 5, 1.0)  # was 5 of 10: "50 % scored"

    # the campaign's "most informative" order is offered only runs with scores: not the failed one
    assert camp.score_run_choices(engine) == []
    at = open_page("campaigns")
    picker = widget(at.selectbox, "PLUIE run for the “most informative” order")
    assert picker.options == []
    with pytest.raises(camp.CampaignError, match="no scores"):
        camp.create_campaign(engine, "c", [1], pair_order="informative", informative_run_id=broken, n_training=0)


def test_3_a_pluie_run_with_scores_is_offered_even_after_it_failed(store):
    from db.analysis import add_score_run

    engine = store
    add_pairs(engine, "d", sentence_pairs(4))
    run = add_score_run(engine, "pluie half", {1: 0.5, 2: -1.0}, kind="pluie")
    fail_run(engine, run, "out of memory")
    assert camp.score_run_choices(engine) == [(run, "pluie half")]


# ------------------------------------------------------------------ 4. model checked at creation


@pytest.fixture(scope="module")
def model_without_chat_template(tiny_model_builder, tmp_path_factory):
    copy = tmp_path_factory.mktemp("no-chat") / "model"
    shutil.copytree(tiny_model_builder(), copy)
    (copy / "chat_template.jinja").unlink()
    return copy


def test_4_a_model_that_cannot_work_is_refused_at_creation(store, tmp_path, tiny_model_path, model_without_chat_template):
    engine = store
    add_pairs(engine, "d", sentence_pairs(3))
    (tmp_path / "empty").mkdir()
    cases = {
        "nonexistent-org/no-such-model-xyz": "not in the local Hugging Face cache",
        str(tmp_path / "missing"): "does not exist",
        str(tmp_path / "empty"): "no config.json",
        str(model_without_chat_template): "no chat template",
    }
    for model, reason in cases.items():
        with pytest.raises(RunError, match=reason):
            create_run(engine, model=model, check_model=True)
    with pytest.raises(RunError, match="not a single token"):
        create_run(engine, model=str(tiny_model_path), answers=["Absolutely certainly", "No"], check_model=True)
    assert n_runs(engine) == 0

    at = open_page("scoring")
    widget(at.text_input, "Model").input("nonexistent-org/no-such-model-xyz")
    widget(at.button, "Create run").click()
    rerun(at)
    assert any("not in the local Hugging Face cache" in e.value for e in at.error), [e.value for e in at.error]
    assert "Checked when you create the run" in texts(at)
    assert n_runs(engine) == 0

    widget(at.text_input, "Model").input(str(tiny_model_path))
    widget(at.button, "Create run").click()
    rerun(at)
    assert not at.error, [e.value for e in at.error]
    assert n_runs(engine) == 1 and "passed the checks" in texts(at)


def test_4_a_hub_id_in_the_local_cache_passes_offline(store, tmp_path, tiny_model_path, monkeypatch):
    from huggingface_hub import constants

    from pluie_core.scorer import check_model

    # the hub cache's own layout: models--<org>--<name>/refs/main -> snapshots/<commit>/<files>
    repo = tmp_path / "hub" / "models--tiny-org--tiny-chat"
    snapshot = repo / "snapshots" / ("0" * 40)
    shutil.copytree(tiny_model_path, snapshot, ignore=shutil.ignore_patterns("*.safetensors"))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0" * 40)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    checked = check_model("tiny-org/tiny-chat", "fs-direct")
    assert checked[0] == "found in the local Hugging Face cache" and "one token each" in checked[-1]
    run = create_run(store, model="tiny-org/tiny-chat", check_model=True)
    assert n_runs(store) == 1 and run
    with pytest.raises(RunError, match="not in the local Hugging Face cache"):
        create_run(store, model="tiny-org/other-chat", check_model=True)


# ------------------------------------------------------------------ 6. finished runs


def test_6_a_finished_run_says_it_is_up_to_date(store):
    engine = store
    add_pairs(engine, "d", sentence_pairs(4))
    lev = create_run(engine, name="lev", kind="baseline", model="levenshtein")
    chrf = create_run(engine, name="chrf", kind="baseline", model="chrf")
    score_everything(engine, lev)
    shown = texts(open_page("scoring"))
    finished = next(line for line in shown.splitlines() if "**lev**" in line)
    assert "up to date" in finished and "waiting for new pairs" in finished and "time left" not in finished
    assert "4 / 4 scored" in finished
    waiting = next(line for line in shown.splitlines() if "**chrf**" in line)
    assert "active" in waiting and "0 / 4 scored" in waiting and "up to date" not in waiting
    assert chrf


# ------------------------------------------------------------------ 5. one default threshold


def test_5_every_page_uses_the_best_threshold_of_a_baseline_or_the_one_set(store):
    from db.analysis import labels_long, pairs_frame, scores_wide
    from pluie_core.analysis import Reference, reference_labels
    from pluie_core.stats import best_threshold, disagreements
    from tests.analysis_store import build_store

    engine = store
    built = build_store(engine, n_mrpc=120)
    pairs = pairs_frame(engine)
    pairs = pairs[pairs["dataset"] == "MRPC"]
    frame = pairs.join(scores_wide(engine, [built["lev_run"]]))
    frame["reference"] = reference_labels(pairs, labels_long(engine), Reference("gold"))
    name = "Levenshtein similarity"
    best = best_threshold(frame[name], frame["reference"])["threshold"]
    expected = disagreements(frame, name, "reference", best)
    median = disagreements(frame, name, "reference", frame[name].median())
    assert len(expected) != len(median)  # the old default (the median score) lists other pairs

    def choose(at):
        at.multiselect(key="analysis_datasets").set_value(["MRPC"])
        rerun(at)
        at.selectbox(key="analysis_run").set_value(name)
        return rerun(at)

    at = choose(open_page("disagreements"))
    assert len(at.dataframe[0].value) == len(expected)
    assert "a-posteriori best threshold against gold labels (as on the Thresholds page)" in texts(at)

    at.switch_page("pages/agreement.py")
    at = choose(rerun(at))
    shown = texts(at)
    assert f"paraphrase at score ≥ {best:g};" in shown and "a-posteriori best threshold" in shown

    # a threshold the user sets holds on every page, and the page says so
    at.number_input(key=f"agreement_threshold_{built['lev_run']}").set_value(0.5)
    rerun(at)
    assert "paraphrase at score ≥ 0.5;" in texts(at) and "set by you" in texts(at)
    at.switch_page("pages/disagreements.py")
    at = choose(rerun(at))
    assert len(at.dataframe[0].value) == len(disagreements(frame, name, "reference", 0.5))
    assert "set by you" in texts(at)
    at.button(key=f"disagreement_threshold_{built['lev_run']}_reset").click()
    rerun(at)
    assert len(at.dataframe[0].value) == len(expected)

    # PLUIE keeps its natural 0
    at.selectbox(key="analysis_run").set_value("PLUIE stand-in")
    assert "PLUIE's natural threshold 0" in texts(rerun(at))


# ------------------------------------------------------------------ 7. the export


def labelled_campaign(engine):
    """A campaign (2 training pairs, quota 3) answered by two annotators, and an imported annotator."""
    from db.engine import write_session
    from db.models import Label

    frame = pd.DataFrame(sentence_pairs(8), columns=["source", "hypothesis"])
    frame["annotator:imported"] = [0, 1, 2, 3, 4, None, None, None]
    result = import_pairs(engine, "d", frame, annotator_scale="levels")
    cid = camp.create_campaign(engine, "Pilot", [result.dataset_id], quota=3, n_training=2, overlap=2)
    people = []
    for link_name, display, english in (("first link", "Alice", "native"), ("second link", "Bob", "good")):
        aid, _ = annotators.create_annotator(engine, cid, link_name)
        annotators.set_annotator_profile(engine, aid, display, english)
        people.append(aid)
        while (item := serving.serve_next(engine, aid)) is not None:
            serving.record_label(engine, aid, item.position, (item.position % 4), 2.5)
    with write_session(engine) as session:
        n_labels = session.scalar(select(func.count(Label.id)))
    return result.dataset_id, people, n_labels


def test_7_the_long_export_has_every_label_and_the_wide_one_integers_and_the_pages_names(store):
    from db.analysis import labels_long
    from db.engine import read_session
    from db.export import export_frame, export_labels
    from db.models import Assignment, Label
    from pluie_core.export_format import to_csv_bytes, to_jsonl_bytes

    engine = store
    dataset_id, (alice, bob), n_labels = labelled_campaign(engine)
    assert n_labels == 5 + 2 * (2 + 3)

    wide = export_frame(engine)
    shown_names = set(labels_long(engine)["annotator"])  # the analysis pages' names
    columns = {c.removeprefix("annotator:") for c in wide.columns if c.startswith("annotator:")}
    assert columns == shown_names == {"Alice", "Bob", "imported"}
    assert str(wide["annotator:Alice"].dtype) == "Int64" and str(wide["majority_level"].dtype) == "Int64"
    csv = to_csv_bytes(wide).decode("utf-8-sig")
    assert ".0," not in csv and ".0\n" not in csv  # 2, never 2.0
    assert "n_training_labels" not in wide.columns
    with_training = export_frame(engine, include_training=True)
    assert with_training["n_training_labels"].sum() == 4  # two training pairs, two annotators

    long = export_labels(engine)
    assert len(long) == n_labels - 4 and not long["is_training"].any()
    long = export_labels(engine, include_training=True)
    assert len(long) == n_labels and long["is_training"].sum() == 4
    with read_session(engine) as session:
        stored = {(label.annotator_id, label.pair_id): label for label in session.scalars(select(Label))}
        on_top = {(a.annotator_id, a.pair_id): a.source_on_top for a in session.scalars(select(Assignment))}
    alice_rows = long[long["annotator"] == "Alice"]
    assert len(alice_rows) == 5
    assert set(alice_rows["display_name"]) == {"Alice"} and set(alice_rows["link_name"]) == {"first link"}
    assert set(alice_rows["campaign"]) == {"Pilot"} and set(alice_rows["english_level"]) == {"native"}
    for row in alice_rows.itertuples():
        label = stored[(alice, row.pair_id)]
        assert row.level == label.level
        assert row.is_training == label.is_training and row.seconds_spent == 2.5
        assert row.sentence_on_top == ("source" if on_top[(alice, row.pair_id)] else "hypothesis")
        assert row.created_at == label.created_at
    imported = long[long["annotator"] == "imported"]
    assert imported["campaign"].isna().all() and imported["sentence_on_top"].isna().all()
    assert imported["level"].tolist() == [0, 1, 2, 3, 4] and str(long["level"].dtype) == "Int64"
    jsonl = to_jsonl_bytes(long).decode()
    assert '"level": 2,' in jsonl and '"is_training": true' in jsonl and '"created_at": "20' in jsonl

    at = open_page("export")
    widget(at.radio, "Layout").set_value("long")
    rerun(at)
    # issue 35: the page opens on the campaign in progress, its labels only (the imported five aside)
    assert f"{n_labels - 4 - 5:,} labels" in texts(at)
    widget(at.selectbox, "Campaign").set_value(0)  # whole datasets: every label
    rerun(at)
    assert list(at.dataframe[0].value.columns) == list(long.columns)
    assert f"{n_labels - 4:,} labels" in texts(at)


# ------------------------------------------------------------------ 10. small things


def test_10_the_guidelines_mark_differences_as_the_labelling_view_does(store):
    from pluie_core.diff import MARK_STYLE, diff_html

    engine = store
    add_pairs(engine, "d", sentence_pairs(6))
    cid = camp.create_campaign(engine, "Pilot", [1], quota=2, n_training=1)
    _, token = annotators.create_annotator(engine, cid, "someone")
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["token"] = token
    rerun(at)
    shown = next(m for m in at.markdown if "drinks water" in m.value)
    assert shown.proto.allow_html
    live = diff_html("The cat drinks water.", "The cat eats kibble.")[0]
    assert f'style="{MARK_STYLE}">drinks water</mark>.' in live  # the labelling view's highlight...
    assert f'style="{MARK_STYLE}">drinks water</mark>.' in shown.value  # ...is the guidelines' one
    assert ":yellow-background[" not in shown.value and "drinks water</mark> ." not in shown.value

    # text an organiser writes is Markdown: HTML in it is shown, never run
    at = open_page("campaigns")
    guide = at.text_area(key=f"guide-{cid}")
    guide.input("Mind the :yellow-background[marks]. <img src=x onerror=alert(1)>")
    rerun(at)
    preview = next(m for m in at.markdown if "Mind the" in m.value)
    assert f'<mark class="pluie-diff" style="{MARK_STYLE}">marks</mark>.' in preview.value
    assert "<img" not in preview.value and "&lt;img" in preview.value


def test_10_the_kappa_heatmap_colour_bar_has_room_for_its_labels(store):
    from tests.figures import charts, trace

    engine = store
    frame = pd.DataFrame(sentence_pairs(6), columns=["source", "hypothesis"])
    frame["annotator:A"] = [0, 1, 2, 3, 3, 0]
    frame["annotator:B"] = [0, 1, 3, 3, 2, 1]
    import_pairs(engine, "two people", frame, annotator_scale="levels")
    at = open_page("agreement")
    heatmap = charts(at)["Cohen's κ per pair of annotators (five-level); n = items both labelled"]
    bar = trace(heatmap, "heatmap")["colorbar"]
    assert bar["tickvals"] == [-1, -0.5, 0, 0.5, 1]  # five labelled ticks, whatever the number of annotators
    # px between two labels of about 12 px: no overlap, though two annotators make a short plot
    assert bar["lenmode"] == "pixels" and bar["len"] / (len(bar["tickvals"]) - 1) >= 40
    assert heatmap["layout"]["height"] >= bar["len"] + 100  # the whole bar below the title, its labels in the figure


@pytest.mark.browser
def test_10_import_steps_of_a_recognised_format_start_at_one_and_counts_have_separators(app_server, browser):
    from tests.browser import wait_for_app
    from tests.paths import DATASETS

    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{app_server.url}/import_pairs")
    wait_for_app(page)
    page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(
        str(DATASETS / "mrpc" / "msr_paraphrase_test.txt"))
    page.get_by_text("1 · Validation").wait_for(timeout=60_000)
    page.get_by_text("2 · Import").wait_for()
    assert page.get_by_text("3 · Validation").count() == 0 and page.get_by_text("Map the columns").count() == 0
    gold = page.locator("[data-testid='stMetric']", has_text="Gold labels")
    assert "1,725" in gold.inner_text()
    assert "1,725" in page.locator("[data-testid='stMetric']", has_text="Pairs").first.inner_text()
    page.close()


# ------------------------------------------------------------------ 9. which pairs, and sharing the work


def queue_of(engine, campaign_id) -> set[int]:
    from db.models import CampaignPair, TrainingPair

    with read_session(engine) as session:
        queued = set(session.scalars(select(CampaignPair.pair_id).where(CampaignPair.campaign_id == campaign_id)))
        training = set(session.scalars(select(TrainingPair.pair_id).where(TrainingPair.campaign_id == campaign_id)))
    return queued | training


def test_9_select_pairs_by_range_gold_score_and_seeded_sample():
    from pluie_core.pair_selection import SelectionError, clean_selection, select_pairs

    pairs = pd.DataFrame({"pair_id": range(101, 121), "gold_label": [i % 2 for i in range(20)],
                          "score": [float(i) - 10 for i in range(20)]})
    pairs.loc[3, "gold_label"] = float("nan")
    assert select_pairs(pairs, None) == list(range(101, 121))
    assert select_pairs(pairs, {"start": 5, "end": 8}) == [105, 106, 107, 108]
    assert select_pairs(pairs, {"gold_min": 1, "gold_max": 1}) == [i for i in range(101, 121) if (i - 101) % 2 == 1
                                                                    and i != 104]
    assert select_pairs(pairs, {"score_run": 1, "score_min": -1.5, "score_max": 1}) == [110, 111, 112]
    sample = select_pairs(pairs, {"sample": 6, "seed": 3})
    assert len(sample) == 6 and sample == sorted(sample) and set(sample) <= set(range(101, 121))
    assert select_pairs(pairs, {"sample": 6, "seed": 3}) == sample != select_pairs(pairs, {"sample": 6, "seed": 4})
    combined = select_pairs(pairs, {"start": 2, "end": 15, "gold_min": 0, "gold_max": 0, "sample": 3, "seed": 0})
    assert len(combined) == 3 and all((i - 101) % 2 == 0 and 102 <= i <= 115 for i in combined)
    assert clean_selection({"start": 1, "end": 0, "sample": 0, "seed": 5}) is None
    with pytest.raises(SelectionError, match="reversed"):
        clean_selection({"gold_min": 3, "gold_max": 1})
    with pytest.raises(SelectionError, match="score run"):
        clean_selection({"score_min": 0})


def test_9_a_campaign_takes_a_sample_a_range_or_filtered_pairs(store):
    from db.analysis import add_score_run
    from tests.annotation_fixtures import make_dataset, numbered_pairs

    engine = store
    ds, pairs = make_dataset(engine, "gold", numbered_pairs(60), label_kind="binary", gold=[i % 2 for i in range(60)])
    sample = camp.create_campaign(engine, "sample", [ds], n_training=2, seed=7, selection={"sample": 12})
    again = camp.create_campaign(engine, "sample again", [ds], n_training=2, seed=7, selection={"sample": 12})
    other = camp.create_campaign(engine, "other seed", [ds], n_training=2, seed=8, selection={"sample": 12})
    assert len(queue_of(engine, sample)) == 12 and queue_of(engine, sample) == queue_of(engine, again)
    assert queue_of(engine, sample) != queue_of(engine, other)

    ranged = camp.create_campaign(engine, "range", [ds], n_training=1, selection={"start": 11, "end": 20})
    assert queue_of(engine, ranged) == set(pairs[10:20])
    gold = camp.create_campaign(engine, "paraphrases", [ds], n_training=1, selection={"gold_min": 1, "gold_max": 1})
    assert queue_of(engine, gold) == set(pairs[1::2])
    run = add_score_run(engine, "pluie", {p: float(i) for i, p in enumerate(pairs)}, kind="pluie")
    near = camp.create_campaign(engine, "near zero", [ds], n_training=0,
                               selection={"score_run": run, "score_min": 5, "score_max": 9.5})
    assert queue_of(engine, near) == set(pairs[5:10])
    with pytest.raises(camp.CampaignError, match="The selection keeps 5 pairs"):
        camp.create_campaign(engine, "too few", [ds], n_training=5, selection={"start": 1, "end": 5})
    assert camp.get_campaign(engine, sample).selection == {"sample": 12, "seed": 7}

    # a campaign of chosen pairs does not take later imports; one of whole datasets does
    whole = camp.create_campaign(engine, "whole", [ds], n_training=0)
    add_pairs(engine, "gold", sentence_pairs(3))
    assert len(queue_of(engine, whole)) == 63 and len(queue_of(engine, sample)) == 12


def test_9_annotators_share_the_work_by_default(store):
    from tests.annotation_fixtures import make_dataset, numbered_pairs

    engine = store
    ds, _ = make_dataset(engine, "many", numbered_pairs(100))

    def served(campaign_id, n=2):
        people = [annotators.create_annotator(engine, campaign_id, f"p{i}")[0] for i in range(n)]
        orders = {aid: [] for aid in people}
        for _ in range(15):  # they take turns, as people working at once do
            for aid in people:
                item = serving.serve_next(engine, aid)
                orders[aid].append(item.pair_id)
                serving.record_label(engine, aid, item.position, 2, 1.0)
        return list(orders.values())

    first, second = served(camp.create_campaign(engine, "shared", [ds], quota=15, overlap=2, n_training=0))
    assert set(first).isdisjoint(second)  # the default: different pairs while the queue has enough
    first, second = served(camp.create_campaign(engine, "together", [ds], quota=15, overlap=2, n_training=0,
                                               distribution="overlap"))
    assert first == second  # overlap first: the same pairs in the same order (as every campaign did before)

    # a queue too short for everyone: every pair gets one annotator, then the rest get a second
    small, _ = make_dataset(engine, "small", numbered_pairs(20, "small "))
    first, second = served(camp.create_campaign(engine, "short", [small], quota=15, overlap=2, n_training=0))
    assert len(set(first) | set(second)) == 20 and len(set(first) & set(second)) == 10

    at = open_page("campaigns")
    assert widget(at.radio, "Share the pairs among annotators").value == "share"


def test_9_the_campaign_form_takes_a_sample(store):
    engine = store
    add_pairs(engine, "d", sentence_pairs(40))
    at = open_page("campaigns")
    widget(at.text_input, "Name").input("Sampled")
    widget(at.multiselect, "Datasets").set_value([(1, "d", 40)])
    widget(at.number_input, "Random sample of (0 = every pair kept)").set_value(10)
    widget(at.number_input, "Seed").set_value(3)
    widget(at.button, "Create campaign").click()
    rerun(at)
    assert not at.error, [e.value for e in at.error]
    campaign = camp.list_campaigns(engine)[0]
    assert campaign.selection == {"sample": 10, "seed": 3} and campaign.distribution == "share"
    assert len(queue_of(engine, campaign.id)) == 10
    assert "a random sample of 10 (seed 3)" in texts(at) and "Share the work" in texts(at)


def test_9_campaigns_of_an_older_store_keep_how_they_served(db_url):
    import sqlalchemy as sa

    from db import init_db
    from db.engine import make_engine, migrate

    old = make_engine(db_url)
    migrate(old, "0002")
    with old.begin() as conn:
        for i, order in enumerate(("random", "least_labelled", "informative")):
            conn.exec_driver_sql(
                "INSERT INTO campaigns (id, name, quota, overlap, n_training, guidelines, pair_order, seed, active, "
                f"created_at) VALUES ({i + 1}, 'c{i}', 5, 2, 0, '', '{order}', 0, 1, '2026-01-01')")
    old.dispose()
    engine = init_db(db_url)
    with engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT pair_order, distribution, selection FROM campaigns ORDER BY id")).all()
    assert [tuple(r) for r in rows] == [("random", "overlap", None), ("least_labelled", "share", None),
                                        ("informative", "overlap", None)]
    engine.dispose()
