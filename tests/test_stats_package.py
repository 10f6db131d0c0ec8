"""pluie_core.stats is a package, one module per concern (issue 41): every name the single module had is
still importable from the package, each is defined in exactly one of its modules, and the modules import
one another in one direction only, never a private name."""

import ast
import importlib
import types

import pluie_core.stats as stats
from tests.paths import REPO

# the package's modules, lowest first: each may import only the modules before it
ORDER = ["errors", "matrices", "reliability", "versus", "thresholds", "balanced_draw", "per_class", "disagreeing_pairs"]

# what `from pluie_core.stats import X` gave when stats was one module (the app, tests and docs use these)
PUBLIC_BEFORE_THE_SPLIT = {
    "StatsError",
    "StatsWarning",
    "PerScore",
    "levels_to_matrix",
    "item_slots",
    "cell_table",
    "binarise_matrix",
    "majority_binary_vector",
    "category_counts",
    "percent_agreement",
    "kappa_from_confusion",
    "cohen_kappa",
    "PairwiseAgreement",
    "pairwise_kappa",
    "fleiss_kappa",
    "krippendorff_alpha",
    "krippendorff_alpha_ci",
    "krippendorff_alpha_ci_from_patterns",
    "human_vs_model",
    "human_vs_model_table",
    "human_vs_model_by_annotator",
    "positions_by",
    "threshold_curve",
    "best_threshold",
    "metrics_at",
    "roc_auc",
    "PAPER_PER_CLASS",
    "mixed_balanced_draw",
    "class_summary",
    "format_p",
    "edit_distance_correlation",
    "disagreements",
    "human_disagreements",
}


def _sibling_imports(name: str) -> list[tuple[int, str, list[str]]]:
    """(line, sibling module, names) of every import of another module of the package in stats/<name>.py."""
    path = REPO / "pluie_core" / "stats" / f"{name}.py"
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pluie_core.stats"):
            found.append((node.lineno, node.module.rpartition(".")[2], [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            found += [
                (node.lineno, a.name.rpartition(".")[2], [])
                for a in node.names
                if a.name.startswith("pluie_core.stats.")
            ]
    return found


def test_the_package_holds_one_module_per_concern_and_nothing_else():
    modules = {p.stem for p in (REPO / "pluie_core" / "stats").glob("*.py")} - {"__init__"}
    assert modules == set(ORDER)
    assert not (REPO / "pluie_core" / "stats.py").exists()
    for name in ORDER:
        assert importlib.import_module(f"pluie_core.stats.{name}").__doc__, f"stats/{name}.py has no docstring"


def test_every_name_of_the_single_module_is_importable_from_the_package_and_defined_once():
    assert PUBLIC_BEFORE_THE_SPLIT <= set(stats.__all__)
    assert len(stats.__all__) == len(set(stats.__all__))
    modules = {name: importlib.import_module(f"pluie_core.stats.{name}") for name in ORDER}
    for name in stats.__all__:
        value = getattr(stats, name)
        if isinstance(value, (type, types.FunctionType)):  # defined in one module of the package
            home = value.__module__.removeprefix("pluie_core.stats.")
            assert home in modules and getattr(modules[home], name) is value, (name, value.__module__)
        else:  # a constant or a type alias: held by exactly one module
            holders = [m for m, module in modules.items() if vars(module).get(name) is value]
            assert len(holders) == 1, (name, holders)
    # a module named like a function it holds would hide it: the package's names are the functions
    assert isinstance(stats.disagreements, types.FunctionType)
    assert isinstance(stats.human_vs_model, types.FunctionType)


def test_modules_import_only_modules_below_them_and_no_private_name():
    problems = []
    for position, module in enumerate(ORDER):
        for line, sibling, names in _sibling_imports(module):
            if sibling not in ORDER[:position]:
                problems.append(f"stats/{module}.py:{line} imports {sibling}, which is not below it")
            problems += [
                f"stats/{module}.py:{line} imports the private {n} from {sibling}" for n in names if n.startswith("_")
            ]
    assert not problems, problems
