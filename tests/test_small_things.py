"""Issue 35, item 8, the smaller things that AppTest and plain calls can show: counts of one in the
singular ("1 exact duplicate pair", "installing 1 package"), the dataset description and the import
note apart on the home page, the PAWS-X preview's id and label columns in view. (The grey frame on
the labelling page and Live campaign's tiles at 800 px: tests/test_browser_small_things.py.)"""
from __future__ import annotations

import importlib.util
import io

import pandas as pd

from db.datasets import duplicates_note, import_pairs
from pluie_core.io import load_pairs
from pluie_core.wording import counted, one_line
from tests.paths import DATASETS, REPO
from tests.test_pages_data import app  # noqa: F401 (the app on a fresh store, a page at a time)



def test_counts_of_one_are_singular():
    assert [counted(n, "pair") for n in (0, 1, 2, 1000)] == ["0 pairs", "1 pair", "2 pairs", "1,000 pairs"]
    one = pd.DataFrame({"source": ["a", "c", "a"], "hypothesis": ["b", "d", "b"]})
    csv = io.BytesIO(one.to_csv(index=False).encode())
    csv.name = "one.csv"
    assert "1 exact duplicate pair was skipped (the first of each is kept)." in load_pairs(csv).attrs["warnings"]
    csv.seek(0)
    kept = load_pairs(csv, keep_duplicates=True).attrs["warnings"]
    assert "1 exact duplicate pair was kept (every row of the file is a pair)." in kept
    assert duplicates_note(True, 1, 1) == ("Imported 1 pair with duplicates kept: every row is a pair, "
                                           "1 exact repeat included.")
    assert duplicates_note(False, 1, 0).startswith("Imported 1 pair with duplicates skipped")
    assert duplicates_note(False, 3, 2).startswith("Imported 3 pairs with")


def test_the_installer_says_installing_1_package(monkeypatch, capsys):
    spec = importlib.util.spec_from_file_location("install_requirements", REPO / "scripts" / "install_requirements.py")
    installer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(installer)

    class Pip:  # what pip prints when it installs one package
        def __init__(self, lines):
            self.stdout = iter(lines)

        def wait(self):
            return 0

    for lines, said in ((["Collecting tqdm\n", "Installing collected packages: tqdm\n"], "installing 1 package..."),
                        (["Collecting a\n", "Collecting b\n", "Installing collected packages: a, b\n"],
                         "installing 2 packages...")):
        monkeypatch.setattr(installer.subprocess, "Popen", lambda *args, lines=lines, **kwargs: Pip(lines))
        assert installer.install("requirements.txt", "test tools") == 0
        assert f"  {said}\n" in capsys.readouterr().out


def test_the_home_page_keeps_the_description_and_the_import_note_apart(app, engine):
    pairs = pd.DataFrame({"source": ["a", "b", "a"], "hypothesis": ["x", "y", "x"]})
    import_pairs(engine, "pilot", pairs, description="Pairs from the pilot")
    shown = app().dataframe[0].value.set_index("dataset").loc["pilot", "description"]
    # a table cell draws no line break: "Pairs from the pilot  Imported 2 pairs..." ran together
    assert shown == ("Pairs from the pilot · Imported 2 pairs with duplicates skipped: an exact repeat of a pair is "
                     "imported once (1 skipped).")
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
