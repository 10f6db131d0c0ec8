"""Folder names a file system takes (issue 56, item 4): a dataset named "..", a 200-character CJK name and a NUL
in a typed folder give a safe suggested folder or a sentence, never a hidden folder, a 616-byte name or
"embedded null byte"; nothing is written on a refusal."""

from __future__ import annotations

import pytest

from db.publish import NAME_BYTES, STEM_BYTES, PublishError, default_folder, folder_stem, publish_dataset
from tests.test_signin import app_env  # noqa: F401 - a fixture, used by name


def test_a_name_becomes_a_stem_no_file_system_refuses_and_no_folder_hides():
    assert folder_stem("..") == "pluie_lab_export" and folder_stem(".hidden") == "hidden"
    assert folder_stem("../etc/passwd") == "etc_passwd"
    assert folder_stem("STS-B dev (2017)") == "STS-B_dev_2017"
    cjk = "语义相似度数据集" * 25  # 200 characters, 600 bytes
    stem = folder_stem(cjk)
    assert len(stem.encode("utf-8")) <= STEM_BYTES and cjk.startswith(stem) and stem
    folder = default_folder(cjk)
    assert len(folder.name.encode("utf-8")) <= NAME_BYTES and not folder.name.startswith(".")
    assert not default_folder("..").name.startswith(".")


def test_a_typed_folder_with_a_nul_or_a_name_too_long_is_a_sentence(engine, tmp_path):
    parent = tmp_path / "published"
    parent.mkdir()
    with pytest.raises(PublishError, match="holds a NUL character"):
        publish_dataset(engine, str(parent / "out\x00put"), licence="mit")
    long = "数" * 100  # 300 bytes
    with pytest.raises(PublishError, match="is 300 bytes long in UTF-8; a file system takes at most 255"):
        publish_dataset(engine, str(parent / long), licence="mit")
    assert list(parent.iterdir()) == []  # nothing written


# ------------------------------------------------- issue 56 item 7: a bare name, and no server path in the browser


def export_as(engine, name: str, role: str):
    """The Export page through the app (AppTest), signed in for real as a new account with ``role``."""
    from tests.test_signin import signed_in_on

    return signed_in_on(engine, "pages/export.py", "Export", name, role, timeout=60)


def publish_from(at, folder: str):
    boxes = {box.label: box for box in at.text_input}
    box = next(b for label, b in boxes.items() if label.startswith("Folder"))
    box.set_value(folder)
    next(b for label, b in boxes.items() if label.startswith("Licence")).set_value("cc-by-4.0")
    next(b for b in at.button if b.label == "Write the dataset folder").click()
    return at.run()


def page_text(at) -> str:
    return " ".join(
        str(getattr(e, "value", ""))
        for e in (*at.caption, *at.error, *at.success, *at.markdown, *at.text_input, *at.info, *at.warning)
    )


def test_an_organiser_publishes_a_bare_name_under_the_published_folder_and_sees_no_server_path(app_env, tmp_path):
    from tests.test_publish import build

    build(app_env)
    at = export_as(app_env, "olga", "organiser")
    suggested = next(b for b in at.text_input if b.label.startswith("Folder")).value
    assert "/" not in suggested and suggested.startswith("pluie_lab_export-")  # a name, not the server's path
    publish_from(at, "my-dataset")
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert "36 pairs written to “my-dataset”" in at.success[0].value
    assert (tmp_path / "published" / "my-dataset" / "README.md").is_file()  # the data folder is tmp_path (app_env)
    for refused, sentence in [
        (str(tmp_path.parent / "elsewhere"), "is outside the folders the app may publish to"),
        ("/etc/pluie", "is outside the folders the app may publish to"),
        ("../../escape", "climbs out of the published folder"),
        ("my-dataset", "already exists and is not an empty folder"),
    ]:
        publish_from(at, refused)
        assert not at.exception and sentence in at.error[0].value, (refused, [e.value for e in at.error])
        shown = page_text(at)
        # no absolute path of the server but what the person typed, no configuration key
        assert (
            str(tmp_path) not in shown.replace(refused, "") and "PLUIE_" not in shown and "pluie_lab.toml" not in shown
        )
    assert not (tmp_path.parent / "elsewhere").exists() and not (tmp_path.parent / "escape").exists()


def test_an_owner_sees_where_the_folder_goes_and_which_keys_allow_more(app_env, tmp_path):
    from tests.test_publish import build

    build(app_env)
    at = export_as(app_env, "owen", "owner")
    assert any(str(tmp_path.resolve() / "published") in c.value and "PLUIE_PUBLISH_DIRS" in c.value for c in at.caption)
    publish_from(at, "team/my-dataset")
    assert str(tmp_path.resolve() / "published" / "team" / "my-dataset") in at.success[0].value
    publish_from(at, "/etc/pluie")
    assert "outside the folders the app may write to" in at.error[0].value and "PLUIE_PUBLISH_DIRS" in at.error[0].value
