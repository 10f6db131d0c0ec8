"""The front door and the map stay true: the README is short and starts with the two commands, every
relative link in README.md, docs/, CHANGELOG.md and CONTRIBUTING.md points to a file that exists, and
docs/architecture.md names every module of pages/, ui/, db/, lab/, pluie_core/ and api/ (a newcomer finds where a page's
behaviour lives there, issue 41)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.paths import REPO

LINK = re.compile(r"\]\(([^)\s]+)\)")


def markdown_files() -> list[Path]:
    return [REPO / "README.md", REPO / "CHANGELOG.md", REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").rglob("*.md"))]


def broken_links(files: list[Path], root: Path = REPO) -> list[str]:
    broken = []
    for file in files:
        for target in LINK.findall(file.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue  # a web address, or a heading of the same file
            path = target.split("#", 1)[0]
            if not (file.parent / path).exists():
                broken.append(f"{file.relative_to(root)}: {target}")
    return broken


def modules_missing_from(doc: str, root: Path = REPO) -> list[str]:
    missing = []
    for folder in ("pages", "ui", "db", "lab", "pluie_core", "api"):
        for file in sorted((root / folder).rglob("*.py")):
            relative = file.relative_to(root)
            if file.stem == "__main__" or "migrations" in relative.parts or "templates" in relative.parts:
                continue
            if file.stem == "__init__":
                if file.parent.name == folder:
                    continue  # the layer itself
                name = f"{file.parent.relative_to(root)}/"
            else:
                name = str(relative)
            if f"`{name}`" not in doc:
                missing.append(name)
    return missing


def test_the_readme_is_a_front_door_that_starts_with_the_two_commands():
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) < 200
    assert lines[0] == "# PLUIE Lab" and lines[2] == "```bash"
    assert lines[3].startswith("make run ") and lines[4].startswith("make test ") and lines[5] == "```"


def test_every_relative_link_of_the_docs_points_to_a_file():
    assert broken_links(markdown_files()) == []


def test_the_link_check_sees_a_broken_link(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("[there](there.md) [web](https://example.org) [here](#top) [gone](gone.md#part)\n")
    (tmp_path / "there.md").write_text("x")
    assert broken_links([page], tmp_path) == ["page.md: gone.md#part"]


def test_architecture_names_every_module_of_the_pages_the_store_the_app_rules_and_the_library():
    doc = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert modules_missing_from(doc) == []


def test_a_new_module_missing_from_architecture_is_found(tmp_path):
    for folder in ("pages", "db", "lab", "pluie_core/stats"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "pages" / "new_page.py").write_text("")
    (tmp_path / "lab" / "rule.py").write_text("")
    (tmp_path / "db" / "__init__.py").write_text("")
    (tmp_path / "pluie_core" / "stats" / "__init__.py").write_text("")
    assert modules_missing_from("`pluie_core/stats/`", tmp_path) == ["pages/new_page.py", "lab/rule.py"]
