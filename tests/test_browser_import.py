"""A real browser: upload a CSV, map its columns, import, and find the dataset on the home page.

The import tests share one server and its store (a server's start and first page take seconds): each
imports a file of its own into a dataset of its own name, and checks that dataset and what the store
gained by it, so that each passes alone and in any order."""

import pytest
from sqlalchemy import select

from db import init_db, read_session
from db.datasets import store_totals
from db.models import Dataset, Pair
from tests.browser import ARTIFACTS, start_app, stop_app, wait_for_app, wait_for_settled_app

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def import_app(tmp_path_factory, migrated_copy):
    """The app on a free port, against a SQLite file of this module's (PLUIE_NO_WORKER=1)."""
    directory = tmp_path_factory.mktemp("import_app")
    db_url = migrated_copy(f"sqlite:///{directory / 'store.db'}")
    init_db(db_url).dispose()
    server = start_app(db_url, directory / "streamlit.log")
    yield server
    stop_app(server)


def dataset_pairs(engine, name: str) -> list[tuple]:
    """(source, gold label) of the pairs of the dataset ``name``, in import order."""
    with read_session(engine) as session:
        return [
            tuple(r)
            for r in session.execute(
                select(Pair.source, Pair.gold_label)
                .join(Dataset, Dataset.id == Pair.dataset_id)
                .where(Dataset.name == name)
                .order_by(Pair.id)
            )
        ]


def test_upload_map_import_and_see_it_on_home(import_app, browser, tmp_path):
    app_server = import_app
    engine = init_db(app_server.db_url)
    before = store_totals(engine)
    csv = tmp_path / "team_pairs.csv"
    csv.write_text(
        "first,second,gold\n"
        "The cat drinks water.,The cat drinks milk.,0\n"
        "A man is sleeping.,A man sleeps.,1\n"
        "Have you ever seen a tsunami ?,Have you ever seen a tiramisu ?,0\n"
    )
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{app_server.url}/import_pairs")
    wait_for_settled_app(page)  # a fresh server's first page runs twice
    page.get_by_text("Import pairs").first.wait_for()
    page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(csv))
    page.get_by_text("2 · Map the columns").wait_for(timeout=30_000)

    def choose(label, option):
        page.get_by_role("combobox", name=label).click()
        page.get_by_role("option", name=option, exact=True).click()
        wait_for_app(page)

    choose("Source sentence (S)", "first")
    choose("Hypothesis sentence (H)", "second")
    choose("Gold label (optional)", "gold")
    page.get_by_text("3 · Validation").wait_for()
    name = page.get_by_label("Dataset name")
    name.fill("browser pairs")
    name.press("Enter")
    wait_for_app(page)
    page.get_by_role("button", name="Import").click()
    page.get_by_text("Imported 3 pairs").wait_for(timeout=30_000)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "import.png"), full_page=True)

    page.goto(app_server.url)
    wait_for_app(page)
    page.get_by_text("PLUIE Lab").first.wait_for()
    grid = page.locator("[data-testid='stDataFrame']")
    grid.wait_for(timeout=30_000)
    page.screenshot(path=str(ARTIFACTS / "home.png"), full_page=True)
    assert store_totals(engine)["pairs"] == before["pairs"] + 3
    assert len(dataset_pairs(engine, "browser pairs")) == 3
    engine.dispose()
    # the data grid draws on a canvas; its accessible table mirrors the cells
    cell = grid.locator("[role='gridcell']", has_text="browser pairs")
    cell.first.wait_for(state="attached", timeout=30_000)
    assert cell.count() == 1


def test_a_first_visit_to_a_page_url_goes_through_the_app_and_its_login(db_url, tmp_path, browser, migrated_copy):
    """Streamlit runs files of a pages/ folder on their own until app.py has run once; the first
    visit of a fresh server to /export must still meet the login, and without a password the frame."""
    init_db(migrated_copy(db_url)).dispose()
    server = start_app(db_url, tmp_path / "locked.log", extra_env={"PLUIE_ADMIN_PASSWORD": "s3cret"})
    try:
        page = browser.new_page()
        page.goto(f"{server.url}/export")
        page.get_by_label("Password", exact=True).wait_for(timeout=30_000)
        assert page.get_by_text("Nothing to export yet").count() == 0
        page.close()
    finally:
        stop_app(server)
    open_url = f"sqlite:///{tmp_path / 'open.db'}"  # the first start made the password the owner "admin"
    init_db(migrated_copy(open_url)).dispose()
    server = start_app(open_url, tmp_path / "open.log")
    try:
        page = browser.new_page()
        page.goto(f"{server.url}/thresholds")
        page.get_by_text("No dataset yet").wait_for(timeout=30_000)
        page.get_by_role("link", name="Import").wait_for(timeout=30_000)  # the app's menu is there
        page.close()
    finally:
        stop_app(server)


def test_a_benchmark_imported_with_every_row_kept(import_app, browser):
    """PARAPHRASUS's simp file through the import page with "Keep every row": its 600 pairs."""
    from tests.paths import DATASETS

    app_server = import_app
    engine = init_db(app_server.db_url)
    before = store_totals(engine)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{app_server.url}/import_pairs")
    wait_for_settled_app(page)  # a fresh server's first page runs twice
    page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(
        str(DATASETS / "paraphrasus" / "onestop_parallel_all_pairs.json")
    )
    page.get_by_text("1 · Validation").wait_for(timeout=30_000)  # a recognised format: no mapping steps
    page.get_by_text("Duplicates skipped").wait_for()
    page.get_by_text("Keep every row (for benchmarks)").click()
    wait_for_app(page)
    page.get_by_text("Duplicates kept").wait_for(timeout=30_000)
    page.get_by_role("button", name="Import").click()
    page.get_by_text("Imported 600 pairs").wait_for(timeout=30_000)
    assert store_totals(engine)["pairs"] == before["pairs"] + 600
    assert len(dataset_pairs(engine, "onestop_parallel_all_pairs")) == 600
    engine.dispose()


def test_nul_bytes_and_word_labels_are_said_in_the_preview(import_app, browser, tmp_path):
    """The preview names the line that lost a NUL and the label words read as 1 / 0; the import
    stores the clean pairs."""
    app_server = import_app
    engine = init_db(app_server.db_url)
    before = store_totals(engine)
    csv = tmp_path / "nul.csv"
    csv.write_bytes(
        b"sentence1,sentence2,label\nThe cat drinks water.,The cat drinks milk.,No\n"
        b"A man is\x00 sleeping.,A man sleeps.,yes\n"
    )
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{app_server.url}/import_pairs")
    wait_for_settled_app(page)  # a fresh server's first page runs twice
    page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(csv))
    page.get_by_text("NUL characters (0x00) were removed from line 3.").wait_for(timeout=30_000)
    page.get_by_text("The label is written as words, read as numbers: 'yes' as 1 and 'No' as 0.").wait_for()
    page.get_by_role("button", name="Import").click()
    page.get_by_text("Imported 2 pairs").wait_for(timeout=30_000)
    assert dataset_pairs(engine, "nul") == [("The cat drinks water.", 0.0), ("A man is sleeping.", 1.0)]
    assert store_totals(engine)["pairs"] == before["pairs"] + 2
    engine.dispose()


def test_an_excel_workbook_says_what_it_left_aside_and_a_zip_bomb_is_refused(import_app, browser, tmp_path):
    """Issue 23: a date column imports (ISO text in the metadata); the preview says which sheets and
    formula rows were left aside; a zip bomb named .xlsx gets one sentence, no traceback, no pair."""
    import datetime

    from tests.test_malformed_input import _bomb, _workbook

    app_server = import_app
    book = _workbook(
        tmp_path / "dated.xlsx",
        [
            ["source", "hypothesis", "when"],
            ["The cat drinks water.", "The cat drinks milk.", datetime.datetime(2024, 1, 5, 10, 30)],
            ["=A2", "=B2", None],
        ],
        extra_sheets=["Notes"],
    )
    engine = init_db(app_server.db_url)
    before = store_totals(engine)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{app_server.url}/import_pairs")
    wait_for_settled_app(page)  # a fresh server's first page runs twice
    upload = page.locator("[data-testid='stFileUploaderDropzoneInput']")
    upload.set_input_files(str(_bomb(tmp_path / "bomb.xlsx", 2 * 1024 * 1024)))
    page.get_by_text("it is refused as a zip bomb").wait_for(timeout=30_000)
    assert page.get_by_text("Traceback").count() == 0 and page.get_by_text("1 · Preview").count() == 0
    assert store_totals(engine) == before

    upload.set_input_files(str(book))
    page.get_by_text("1 · Preview").wait_for(timeout=30_000)
    page.get_by_text(
        "The workbook has 2 sheets: only the first, 'Sheet', was read ('Notes' was left aside)."
    ).wait_for()
    page.get_by_text("Row 3 held only formulas with no computed value and was left out").wait_for()
    page.get_by_role("button", name="Import").click()
    page.get_by_text("Imported 1 pair into").wait_for(timeout=30_000)
    with read_session(engine) as session:
        stored = session.execute(
            select(Pair.source, Pair.meta).join(Dataset, Dataset.id == Pair.dataset_id).where(Dataset.name == "dated")
        ).all()
    assert [tuple(r) for r in stored] == [("The cat drinks water.", {"when": "2024-01-05T10:30:00"})]
    assert store_totals(engine)["pairs"] == before["pairs"] + 1
    engine.dispose()


def test_import_steps_of_a_recognised_format_start_at_one_and_counts_have_separators(app_server, browser):
    from tests.browser import wait_for_app
    from tests.paths import DATASETS

    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{app_server.url}/import_pairs")
    wait_for_app(page)
    page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(
        str(DATASETS / "mrpc" / "msr_paraphrase_test.txt")
    )
    page.get_by_text("1 · Validation").wait_for(timeout=60_000)
    page.get_by_text("2 · Import").wait_for()
    assert page.get_by_text("3 · Validation").count() == 0 and page.get_by_text("Map the columns").count() == 0
    gold = page.locator("[data-testid='stMetric']", has_text="Gold labels")
    assert "1,725" in gold.inner_text()
    assert "1,725" in page.locator("[data-testid='stMetric']", has_text="Pairs").first.inner_text()
    page.close()
