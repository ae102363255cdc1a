"""The package's folders are its layers, and layers never reach up (ARCHITECTURE.md, "Folders that show the
layers"): every reference from a module to another of headstats names its own layer or one below it, and no
references close a circle. A reference is any import (at the top or inside a function, absolute or relative), an
``importlib.import_module("headstats...")`` and a ``"headstats.module:attribute"`` string (a registry's lazy
entry, :meth:`headstats.registry.Registry.register_lazy`, or a part of an analysis' spec). Statistics never import
torch, matplotlib or rich, and plots never compute statistics.

Each analysis is a package ``analyses/<name>/`` whose files have fixed roles, and a file's role is its layer: its
tables (``tables.py``, the declared specs) just above the base modules; the options and the collector sit with the
registry, above the engine; ``finish.py`` and ``claims.py`` above the statistics toolkit; ``figures.py`` above the
plots toolkit; ``section.py`` above the report toolkit; the spec (``__init__.py``) above them all, naming only its own
package. Its claims, finish step and section name its tables by their specs, never by a string. The horizontal folders (the toolkits, the study
and the report) name no analysis: they reach one only through the registry.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "headstats"

#: Lowest first. Base modules (errors, registry, fields, provenance, measures, folders, hub, lazy, tables) may be used
#: by every layer. The ``analysis.*`` layers are the files of an analysis package by their role (:data:`ROLES`):
#: ``analysis.tables`` (each package's ``tables.py``) sits just above the base modules and imports only
#: ``headstats.tables`` (tested).
LAYERS = ["errors", "registry", "fields", "provenance", "measures", "folders", "hub", "lazy", "tables",
          "analysis.tables", "inputs", "model", "engine", "analyses", "stats", "analysis.statistics", "config",
          "study", "plots", "analysis.figures", "report", "analysis.section", "analysis.spec", "cli",
          "api", "testing", "__init__"]
#: The file roles of an analysis package ``analyses/<name>/`` and the layer of each.
ROLES = {"__init__": "analysis.spec", "tables": "analysis.tables", "options": "analyses", "collect": "analyses",
         "finish": "analysis.statistics", "claims": "analysis.statistics", "figures": "analysis.figures",
         "section": "analysis.section"}
ANALYSES_DIR = SRC / "analyses"
#: ``from headstats import __version__`` is the only use of the package root allowed below the API.
ROOT_NAMES = {"__version__"}
#: Options modules of upper layers that the protocol (config) composes; each imports only base modules (tested).
LEAF_OPTIONS = {"headstats.report.options"}
BASE = LAYERS[:LAYERS.index("tables") + 1]


def _analysis_package(module: str) -> str | None:
    """The analysis package a module belongs to (``headstats.analyses.<name>...``), else None."""
    parts = module.split(".")
    if len(parts) >= 3 and parts[:2] == ["headstats", "analyses"] and (ANALYSES_DIR / parts[2]).is_dir():
        return parts[2]
    return None


def _layer(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "headstats":
        return None
    if _analysis_package(module) is not None:
        return ROLES.get(parts[3] if len(parts) > 3 else "__init__", "unknown role")
    return "__init__" if len(parts) == 1 else parts[1]


#: A module's reference to another written as a string: ``"headstats.a.b"`` or ``"headstats.a.b:attribute"``.
REFERENCE = re.compile(r"headstats(\.[A-Za-z_]\w*)+(:[A-Za-z_]\w*)?")

#: Known exceptions, each with the issue that removes it.
KNOWN_UPWARD: set[tuple[str, str]] = set()
KNOWN_CIRCLES: set[frozenset[str]] = set()


def _package_of(path: Path) -> str:
    name = _name(path)
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """(module, names) of every reference in ``path``: imports anywhere in the file (relative ones made
    absolute), ``importlib.import_module("headstats...")`` and ``"headstats.module:attribute"`` strings."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = _package_of(path).split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            out.append((module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            out.extend((a.name, []) for a in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and REFERENCE.fullmatch(node.value):
            module, _, attribute = node.value.partition(":")
            out.append((module, [attribute] if attribute else []))
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
    known = {_name(p) for p in MODULES}
    for module, names in _imports(path):
        if names and all(f"{module}.{n}" in known for n in names):  # ``from package import module``
            module = f"{module}.{names[0]}"
        other = _layer(module)
        if other is None or other == _layer(me):
            continue
        if other == "__init__" and set(names) <= ROOT_NAMES:
            continue
        if (me, module) in KNOWN_UPWARD:
            continue
        if _layer(me) == "config" and module in LEAF_OPTIONS:  # the protocol composes each layer's options
            continue
        assert LAYERS.index(other) < mine, f"{me} refers to {module}, a layer above its own"


PACKAGES = sorted(p.parent for p in ANALYSES_DIR.glob("*/__init__.py"))


def _of_role(*roles: str) -> list[Path]:
    """The files of every analysis package that have one of ``roles``: ``<role>.py``, or the modules of a
    subpackage ``<role>/`` (a role whose code is large)."""
    return [f for pkg in PACKAGES for f in sorted(pkg.rglob("*.py"))
            if f.relative_to(pkg).parts[0].removesuffix(".py") in roles]


STATISTICS = sorted((SRC / "stats").rglob("*.py")) + _of_role("finish", "claims", "options")
FIGURES = sorted((SRC / "plots").rglob("*.py")) + _of_role("figures")


@pytest.mark.parametrize("path", STATISTICS, ids=_name)
def test_statistics_import_no_torch_matplotlib_or_rich(path):
    """The statistics toolkit, and an analysis' finish step, claims and options (which the protocol composes)."""
    banned = {"torch", "matplotlib", "rich", "transformers"}
    imports = _imports(path)
    assert not {m.split(".")[0] for m, _ in imports} & banned
    assert not [names for m, names in imports if m == "headstats.lazy" and set(names) & banned]  # not lazily either


@pytest.mark.parametrize("path", FIGURES, ids=_name)
def test_plots_compute_no_statistics(path):
    """The plots toolkit and every analysis' figures draw; they compute no statistics."""
    assert not [m for m, _ in _imports(path) if m.startswith(("headstats.stats", "scipy", "statsmodels"))]


def test_every_file_of_an_analysis_package_has_a_known_role():
    """A file of an analysis package is named by its role, or sits in a subpackage named by it (``claims/``)."""
    assert PACKAGES
    odd = [str(f.relative_to(SRC)) for pkg in PACKAGES for f in pkg.iterdir()
           if f.suffix == ".py" and f.stem not in ROLES or f.is_dir() and f.name not in ("__pycache__", *ROLES)]
    assert not odd, f"an analysis package holds only {sorted(ROLES)}: {odd}"
    nested = [str(f.relative_to(SRC)) for pkg in PACKAGES for f in pkg.glob("*/*/*.py")]
    assert not nested, f"a role's subpackage holds modules, not folders: {nested}"


def _registry():
    from headstats.analyses import ANALYSES, list_analyses

    list_analyses()  # imports every analysis package
    return dict(ANALYSES.items())


#: The folders that name no analysis: the toolkits (statistics, plots, engine), the study and the report.
HORIZONTAL = ("stats", "plots", "engine", "study", "report")


def _strings(path: Path) -> set[str]:
    """The string constants of a module that are not docstrings."""
    tree = ast.parse(path.read_text())
    docs = {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)) and node.body
            and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return {node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs}


@pytest.mark.parametrize("path", [p for folder in HORIZONTAL for p in sorted((SRC / folder).rglob("*.py"))], ids=_name)
def test_no_horizontal_folder_names_an_analysis(path):
    """No module of the toolkits, the study or the report refers to an analysis package, or names a registered
    analysis or a table one declares in a string: it reaches analyses only through the registry."""
    specs = _registry()
    names = set(specs) | {table for spec in specs.values() for table in spec.tables}
    referred = [m for m, _ in _imports(path) if _analysis_package(m) is not None]
    assert not referred, f"{_name(path)} refers to {referred}"
    named = sorted(_strings(path) & names)
    assert not named, f"{_name(path)} names the analyses or their tables {named}"


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.name)
def test_a_spec_refers_only_to_its_own_package(package):
    own = f"headstats.analyses.{package.name}"
    outside = [m for m, _ in _imports(package / "__init__.py")
               if m.startswith("headstats.") and m != "headstats.analyses" and not (m == own or m.startswith(own + "."))]
    assert not outside, f"the spec of {package.name} refers to {outside}"


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.name)
def test_an_analysis_uses_another_only_through_a_declared_dependency(package):
    specs = {spec.name: spec for spec in _registry().values()}
    mine = [spec for spec in specs.values() if isinstance(spec.collector, str)
            and spec.collector.startswith(f"headstats.analyses.{package.name}.")]
    declared = {r for spec in mine for r in spec.requires}
    used = {_analysis_package(m) for f in package.rglob("*.py") for m, _ in _imports(f)} - {None, package.name}
    assert used <= declared, f"{package.name} uses {sorted(used - declared)} without declaring it (requires=...)"


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.name)
def test_a_packages_tables_import_only_the_tables_base_module(package):
    """``tables.py`` declares the package's tables (:func:`headstats.tables.declare_tables`) and nothing else, so
    that every other file of the package, the collector included, can import it."""
    path = package / "tables.py"
    if not path.is_file():
        pytest.skip(f"{package.name} declares no tables of its own")
    imported = {m for m, _ in _imports(path)} - {"__future__"}
    assert imported <= {"headstats.tables"}, f"{_name(path)} imports {sorted(imported - {'headstats.tables'})}"



@pytest.mark.parametrize("path", sorted(ANALYSES_DIR.rglob("*.py")), ids=_name)
def test_no_analysis_loads_a_model(path):
    """The runner owns every model load and pass (``engine/runner.py``): an analysis declares what it needs of its
    model (``needs_task_model``, ``needs_gradients``, ``needs_ablations``, ``needs_input_embeddings``) and reads it
    from its context; no module under ``analyses/`` refers to ``load_model`` or to transformers' loaders."""
    tree = ast.parse(path.read_text())
    named = {a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for a in node.names}
    named |= {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    named |= {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    loaders = named & {"load_model", "from_pretrained", "from_config"}
    assert not loaders, f"{_name(path)} loads a model ({sorted(loaders)}); declare what it needs of it instead"

#: The files of a package that read or return its tables; each names them by their specs (``tables[ENTROPY]``).
TABLE_READERS = ("claims", "finish", "section")


def _table_literals(path: Path, names: set[str]) -> list[tuple[int, str]]:
    """``(line, string)`` of each string constant of ``path`` that names one of the tables ``names``: any string
    equal to one, except one that is also a column of them (the ``entropy`` table's ``entropy`` column), which is
    read as a table only where it is one: ``tables[...]``, ``tables.get(...)``, a ``tables=`` argument, or a key
    (subscript or dict literal) of what a finish step returns."""
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        key = None
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in ("tables", "out"):
            key = node.slice
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
              and isinstance(node.func.value, ast.Name) and node.func.value.id == "tables" and node.args):
            key = node.args[0]
        elif isinstance(node, ast.keyword) and node.arg == "tables":
            found += [(c.lineno, c.value) for c in ast.walk(node.value)
                      if isinstance(c, ast.Constant) and c.value in names]
        elif isinstance(node, ast.Return) and isinstance(node.value, ast.Dict):
            found += [(k.lineno, k.value) for k in node.value.keys if isinstance(k, ast.Constant) and k.value in names]
        if isinstance(key, ast.Constant) and key.value in names:
            found.append((key.lineno, key.value))
    return found


def _columns_of(specs) -> set[str]:
    return {column for spec in specs for column in spec.columns}


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.name)
def test_an_analysis_names_its_own_tables_by_their_specs(package):
    """No claims.py, finish.py or section.py of a package names one of its own declared tables in a string: it
    imports the table's spec from its ``tables.py`` (``tables=(DEPENDENCY_TABLE,)``, ``tables[DEPENDENCY_TABLE]``,
    ``{DEPENDENCY_TABLE.name: frame}``), so that a renamed or mistyped table fails at import, not in a run."""
    specs = [spec for spec in _registry().values() if isinstance(spec.collector, str)
             and spec.collector.startswith(f"headstats.analyses.{package.name}.")]
    declared = [table for spec in specs for table in spec.tables.values()]
    names = {table.name for table in declared}
    strict = names - _columns_of(declared)
    named = []
    for role in TABLE_READERS:
        path = package / f"{role}.py"
        if path.is_file():
            anywhere = [(node.lineno, node.value) for node in ast.walk(ast.parse(path.read_text()))
                        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in strict]
            named += [f"{path.name}:{line} {value!r}" for line, value in sorted(set(anywhere)
                                                                                | set(_table_literals(path, names)))]
    assert not named, f"{package.name} names its tables by string: {named}; import their specs from its tables.py"


def test_the_table_names_scan_sees_every_way_of_naming_a_table(tmp_path):
    """The scan of the test above finds a table named in each place a claim, finish step or section names one, and
    leaves a column of the same name alone."""
    path = tmp_path / "section.py"
    path.write_text('register_claim("k", tables=("t_tests",))\n'
                    'a = tables["t"]\n'
                    'b = tables.get("t")\n'
                    'out["t"] = a\n'
                    'c = a["t"].mean()\n'
                    'def finish(tables):\n'
                    '    return {"t": tables.get("u")}\n')
    assert sorted(_table_literals(path, {"t", "t_tests"})) == [(1, "t_tests"), (2, "t"), (3, "t"), (4, "t"), (7, "t")]


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


def _graph() -> dict[str, set[str]]:
    """Module -> the headstats modules it refers to (``from a.b import c`` names module ``a.b.c`` when there is
    one, else ``a.b``)."""
    known = {_name(p) for p in MODULES}
    graph: dict[str, set[str]] = {}
    for path in MODULES:
        me = _name(path)
        edges = graph.setdefault(me, set())
        for module, names in _imports(path):
            if _layer(module) is None or (module == "headstats" and set(names) <= ROOT_NAMES):
                continue  # ``from headstats import __version__`` reads a constant, not the API
            targets = [f"{module}.{n}" for n in names if f"{module}.{n}" in known] or [module]
            edges.update(t for t in targets if t in known and t != me)
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    import sys

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return out


def test_no_circles():
    """No modules refer to each other in a circle, by any kind of reference (lazy imports and registry strings
    included): each module can be read, tested and imported after the ones it uses."""
    circles = [c for c in _circles(_graph()) if frozenset(c) not in KNOWN_CIRCLES]
    assert not circles, f"modules that refer to each other in a circle: {circles}"


def test_the_scan_sees_every_kind_of_reference(tmp_path):
    """A function-level import, a relative import, import_module and a registry string are all references."""
    sample = SRC / "analyses" / "_layers_sample.py"
    text = (
        "def f():\n    from headstats.report import builder\n"
        "from . import roles\nfrom ..stats import corrections\n"
        "import importlib\nimportlib.import_module('headstats.study.run')\n"
        "REF = 'headstats.cli.main:app'\nDOC = 'see headstats.report for more'\n"
    )
    path = tmp_path / "sample.py"
    path.write_text(text)
    seen = dict(_imports_as(path, sample))
    assert seen == {"headstats.report": ["builder"], "headstats.analyses": ["roles"],
                    "headstats.stats": ["corrections"], "importlib": [], "headstats.study.run": [],
                    "headstats.cli.main": ["app"]}
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _imports_as(path: Path, pretend: Path) -> list[tuple[str, list[str]]]:
    """``_imports`` of the file ``path`` as if it lived at ``pretend`` (for relative imports)."""
    global _package_of
    real = _package_of
    _package_of = lambda p: real(pretend)  # noqa: E731
    try:
        return _imports(path)
    finally:
        _package_of = real


def test_known_exceptions_are_still_needed():
    """An exception listed above that the code no longer has is removed from the list (keeps the list honest)."""
    graph = _graph()
    for me, other in KNOWN_UPWARD:
        assert other in graph.get(me, set()) or any(
            m == other for m, _ in _imports(SRC.parent / (me.replace(".", "/") + ".py"))), f"drop {(me, other)}"
    circles = {frozenset(c) for c in _circles(graph)}
    for circle in KNOWN_CIRCLES:
        assert circle in circles, f"drop {sorted(circle)} from KNOWN_CIRCLES: it is no circle any more"


#: Public names defined in two modules on purpose: the CLI's commands are named after the API functions they
#: call, and the API's functions are the library's imported at first use (``hs.test_roles`` and
#: ``hs.role_table`` add the provenance to ``.attrs``).
SAME_NAME_ON_PURPOSE = {"finetune": {"model/finetune/train.py", "cli/finetune_command.py"},
                        "run": {"api.py", "cli/study_commands.py"}, "score": {"api.py", "cli/study_commands.py"},
                        "read_records": {"api.py", "inputs/readers.py"},
                        "test_roles": {"api.py", "stats/onesample/entry.py"},
                        "role_table": {"api.py", "analyses/pande_roles/finish/role_assignment.py"}}


def test_one_meaning_per_public_name():
    """A public function or class is defined in one module only. The drift this catches: tau_warnings,
    check_device, check_dtype, check_family, family_labels, heads_per_role_per_layer and verdict were each
    defined twice with different behaviour; import the one, or give the other its own name."""
    where: dict[str, set[str]] = {}
    for path in MODULES:
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                where.setdefault(node.name, set()).add(str(path.relative_to(SRC)))
    twice = {n: sorted(m) for n, m in where.items() if len(m) > 1 and SAME_NAME_ON_PURPOSE.get(n) != m}
    assert not twice, f"names defined in more than one module: {twice}"


@pytest.mark.parametrize("module", sorted(LEAF_OPTIONS))
def test_leaf_options_import_only_base_modules(module):
    path = SRC.parent.joinpath(*module.split(".")).with_suffix(".py")
    inner = {_layer(m) for m, _ in _imports(path)} - {None}
    assert inner <= set(BASE), f"{module} imports {inner - set(BASE)}: the protocol could no longer compose it"
