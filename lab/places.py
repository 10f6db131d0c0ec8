"""Where the app keeps its files on the server, and which folders the web pages may write to.

The data folder is PLUIE_DATA_DIR (default ./data): the embedded store (pluie_lab.db), the
session secret, the worker's log and, by default, published datasets. A dataset folder written
from the web (Export → Publish as a dataset) must lie inside the data folder or inside one of the
folders the configuration allows: PLUIE_PUBLISH_DIRS (paths separated by the system's path
separator, ':' on Linux) or `[publish] folders = ["/srv/datasets"]` in pluie_lab.toml. Paths are
compared after resolving symbolic links, so neither `../` nor a link leads outside. A folder name
typed in the browser without a path ("my-dataset", "team/my-dataset") lies under the published
folder, <data folder>/published (typed_folder); a browser user other than an owner is never shown
the server's paths nor these configuration keys (outside_sentence).
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

CONFIG_FILE = "pluie_lab.toml"


def data_dir() -> Path:
    """The data folder: PLUIE_DATA_DIR, else ./data (relative to the working directory)."""
    return Path(os.environ.get("PLUIE_DATA_DIR") or "data")


def published_dir() -> Path:
    """Where datasets are published by default, and where a folder name typed on the Export page goes:
    <data folder>/published."""
    return data_dir() / "published"


def publish_roots() -> list[Path]:
    """The folders a dataset may be published under from the web: the data folder, then
    PLUIE_PUBLISH_DIRS, then pluie_lab.toml's `[publish] folders`."""
    roots = [data_dir()]
    roots += [Path(p) for p in os.environ.get("PLUIE_PUBLISH_DIRS", "").split(os.pathsep) if p.strip()]
    config = Path(CONFIG_FILE)
    if config.is_file():
        with config.open("rb") as fh:
            configured = tomllib.load(fh).get("publish", {}).get("folders", [])
        roots += [Path(p) for p in ([configured] if isinstance(configured, str) else configured)]
    return [root.expanduser() for root in roots]


def confined(folder, roots: list[Path]) -> Path:
    """`folder` (absolute, or relative to the working directory) with its links resolved, when it
    lies strictly inside one of `roots`; ValueError with a sentence otherwise, and for a folder
    that is itself a symbolic link."""
    path = Path(folder).expanduser()
    if path.is_symlink():
        raise ValueError(f"{folder} is a symbolic link: choose a new folder.")
    resolved = path.resolve()
    for root in roots:
        root = root.resolve()
        if resolved != root and resolved.is_relative_to(root):
            return resolved
    allowed = ", ".join(str(root) for root in roots)
    raise ValueError(
        f"{folder} is outside the folders the app may write to ({allowed}): choose a folder "
        "inside one of them (PLUIE_PUBLISH_DIRS or [publish] folders in pluie_lab.toml add more)."
    )


def typed_folder(text: str) -> Path:
    """The folder a name typed in the browser stands for: a relative one — a bare name such as
    "my-dataset", or "team/my-dataset" — under the published folder (published_dir); an absolute one
    (or one from ~) as typed, for `confined` to check against publish_roots. ValueError with a sentence
    for a relative name that climbs out of the published folder with "..", or names no folder."""
    path = Path(str(text).strip()).expanduser()
    if path.is_absolute():
        return path
    if ".." in path.parts:
        raise ValueError(f"“{text}” climbs out of the published folder (“..”): type a folder name such as my-dataset.")
    if not path.parts:
        raise ValueError("Name the folder to write.")
    return published_dir() / path


def outside_sentence(text: str) -> str:
    """What a browser user who is not an owner is told for a folder outside the folders the app may write
    to: no server path, no configuration key (those are the owner's, where they configure them)."""
    return (
        f"“{text}” is outside the folders the app may publish to: type a folder name such as my-dataset, "
        "which goes under the app's published folder (an owner can allow other folders)."
    )
