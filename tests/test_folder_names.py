"""Folder names a file system takes (issue 56, item 4): a dataset named "..", a 200-character CJK name and a NUL
in a typed folder give a safe suggested folder or a sentence, never a hidden folder, a 616-byte name or
"embedded null byte"; nothing is written on a refusal."""
from __future__ import annotations

import pytest

from db.publish import NAME_BYTES, STEM_BYTES, PublishError, default_folder, folder_stem, publish_dataset


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
