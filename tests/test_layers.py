"""The package's folders are its layers, and layers never reach up (ARCHITECTURE.md, "Folders that show the
layers"): every ``import headstats...`` in a module names its own layer or one below it, statistics never
import torch, matplotlib or rich, and plots never compute statistics."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "headstats"

#: Lowest first. Base modules (errors, registry, fields, provenance, measures, folders, hub, lazy) may be used by every
#: layer.
LAYERS = ["errors", "registry", "fields", "provenance", "measures", "folders", "hub", "lazy", "inputs", "model",
          "engine", "analyses", "stats", "config", "assignment", "plots", "report", "study", "cli", "api", "__init__"]
#: ``from headstats import __version__`` is the only use of the package root allowed below the API.
ROOT_NAMES = {"__version__"}
#: Options modules of upper layers that the protocol (config) composes; each imports only base modules (tested).
LEAF_OPTIONS = {"headstats.report.options"}
BASE = LAYERS[:LAYERS.index("inputs")]


def _layer(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "headstats":
        return None
    return "__init__" if len(parts) == 1 else parts[1]


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            out.extend((a.name, []) for a in node.names)
    return out


MODULES = sorted(SRC.rglob("*.py"))


def _name(path: Path) -> str:
    return ".".join(path.relative_to(SRC.parent).with_suffix("").parts).removesuffix(".__init__")


def test_every_module_is_in_a_known_layer():
    assert MODULES
    unknown = {_layer(_name(p)) for p in MODULES} - set(LAYERS)
    assert not unknown, f"add {unknown} to LAYERS in its place"


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_layers_never_reach_up(path):
    me = _name(path)
    mine = LAYERS.index(_layer(me))
    for module, names in _imports(path):
        other = _layer(module)
        if other is None or other == _layer(me):
            continue
        if other == "__init__" and set(names) <= ROOT_NAMES:
            continue
        if _layer(me) == "config" and module in LEAF_OPTIONS:  # the protocol composes each layer's options
            continue
        assert LAYERS.index(other) < mine, f"{me} imports {module}, a layer above its own"


@pytest.mark.parametrize("path", sorted((SRC / "stats").rglob("*.py")), ids=_name)
def test_statistics_import_no_torch_matplotlib_or_rich(path):
    banned = {"torch", "matplotlib", "rich", "transformers"}
    imports = _imports(path)
    assert not {m.split(".")[0] for m, _ in imports} & banned
    assert not [names for m, names in imports if m == "headstats.lazy" and set(names) & banned]  # not lazily either


@pytest.mark.parametrize("path", sorted((SRC / "plots").rglob("*.py")), ids=_name)
def test_plots_compute_no_statistics(path):
    assert not [m for m, _ in _imports(path) if m.startswith(("headstats.stats", "scipy", "statsmodels"))]


def test_tests_mirror_the_tree():
    """Every module in a layer folder has its test module in the same folder under tests/."""
    tests = Path(__file__).resolve().parent
    missing = []
    for path in MODULES:
        rel = path.relative_to(SRC)
        if len(rel.parts) == 1 or path.name == "__init__.py":
            continue
        if not (tests / rel.parent / f"test_{path.name}").exists():
            missing.append(str(rel))
    assert not missing, f"no test module for {missing}"


@pytest.mark.parametrize("module", sorted(LEAF_OPTIONS))
def test_leaf_options_import_only_base_modules(module):
    path = SRC.parent.joinpath(*module.split(".")).with_suffix(".py")
    inner = {_layer(m) for m, _ in _imports(path)} - {None}
    assert inner <= set(BASE), f"{module} imports {inner - set(BASE)}: the protocol could no longer compose it"
