"""The layer contract over every module of hpcopt (hpcopt/, models/, solvers/).

The layers are declared once, as the import-linter contract in pyproject.toml
(``[tool.importlinter]``; docs/architecture.md draws them).  ``test_import_linter_contracts``
runs import-linter on them: the layers, the independence of sibling families, the modules
only the command line may import, no cycle between siblings.  import-linter reads every
import statement, the lazy ones inside functions included; it runs as anyone runs it, bare
``lint-imports`` at the repository root, where ``hpcopt/models`` and ``hpcopt/solvers`` are
links to the top-level ``models/`` and ``solvers/`` folders (pyproject's package-dir), so it
reads the package as installed.

The rest of this module checks, with its own reading of the sources (``ast``), the same
layers and what import-linter cannot see:

- every module is in a layer (a new module fails ``test_every_module_has_a_layer``: add it
  to the layers in pyproject.toml where what it does puts it);
- the package's front module ``hpcopt`` (``hpcopt/__init__.py``) is a layer of its own, on
  top: its public names resolve on first use through ``importlib``, from a table of module
  names; import-linter counts a package's ``__init__`` with the whole package;
- ``hpcopt.workflows.cli``, ``hpcopt.slurm.cli`` and ``hpcopt.testbed.cli`` are in the
  command-line layer;
- module names written as strings (``"hpcopt.models.scas:SCASModel"``) are links too, and
  obey the layers like import statements; ``importlib`` imports modules by a computed name
  only where such a table is read (``DYNAMIC_IMPORTS``);
- no two modules import each other, directly or through others (no file-level cycle).
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10: pytest's own dependency
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
# where each top package's files are (pyproject.toml's package-dir)
SOURCES = {"hpcopt": ROOT / "hpcopt", "hpcopt.models": ROOT / "models",
           "hpcopt.solvers": ROOT / "solvers"}
PYPROJECT = ROOT / "pyproject.toml"


def contracts() -> list[dict]:
    return tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]["contracts"]


def _declared_layers() -> list[list[str]]:
    """The layers of the import-linter contract, bottom to top, each a list of modules."""
    (layers,) = [c["layers"] for c in contracts() if c["type"] == "layers"]
    return [[m.strip() for m in re.split(r"[:|]", layer) if m.strip()]
            for layer in reversed(layers)]


# bottom to top: (name, entries); an entry is a module or a package with everything under
# it, the entry "hpcopt" the front module only
NAMES = ["base", "traces", "models", "inputs", "agents", "solvers", "sim", "policies",
         "application", "cli"]
LAYERS = list(zip(NAMES, _declared_layers(), strict=True))
LAYERS[-1][1].extend(["hpcopt.workflows.cli", "hpcopt.slurm.cli",
                      "hpcopt.testbed.cli"])  # the cli layer
LAYERS.append(("front", ["hpcopt"]))

# modules that import modules by a computed name -> the table of names they read
DYNAMIC_IMPORTS = {"hpcopt": "_LAZY", "hpcopt.models": "MODEL_KINDS",
                   "hpcopt.cli": "COMMANDS"}


@cache
def modules() -> dict[str, tuple[Path, bool]]:
    """Every module: dotted name -> (file, is a package's ``__init__``)."""
    out = {}
    for top, folder in SOURCES.items():
        for path in sorted(folder.rglob("*.py")):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if top == "hpcopt" and parts[0] in ("models", "solvers"):
                continue  # not part of the package (mapped from the top-level folders)
            init = parts[-1] == "__init__"
            out[".".join([top, *(parts[:-1] if init else parts)])] = (path, init)
    return out


def layer_of(module: str) -> int | None:
    """Index in ``LAYERS`` of the longest entry that is ``module`` or a package above it
    (the entry ``hpcopt`` is the front module only)."""
    best, index = "", None
    for i, (_, entries) in enumerate(LAYERS):
        for entry in entries:
            hit = module == entry or (entry != "hpcopt" and module.startswith(entry + "."))
            if hit and len(entry) > len(best):
                best, index = entry, i
    return index


def _known(name: str) -> str | None:
    """The module ``name`` refers to: itself, or the package whose attribute it is."""
    mods = modules()
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


@cache
def imports() -> dict[str, list[tuple[str, int]]]:
    """module -> [(imported hpcopt module, line)] for every import statement, at any depth."""
    out = {}
    for module, (path, init) in modules().items():
        package = module if init else module.rpartition(".")[0]
        found = []
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[:len(package.split(".")) - node.level + 1]
                    name = ".".join(base + ([node.module] if node.module else []))
                else:
                    name = node.module
                names = [name] + [f"{name}.{a.name}" for a in node.names]
            else:
                continue
            targets = {_known(n) for n in names if n.split(".")[0] == "hpcopt"}
            # "from pkg import sub" names the submodule; "from pkg import attr", the package
            if isinstance(node, ast.ImportFrom) and len(targets) > 1:
                targets.discard(_known(names[0]))
            found += [(t, node.lineno) for t in targets if t and t != module]
        out[module] = sorted(set(found))
    return out


def _where(module: str, line: int) -> str:
    return f"{modules()[module][0].relative_to(ROOT)}:{line}"


def test_the_scan_sees_lazy_imports_and_every_package():
    edges = {t for t, _ in imports()["hpcopt.solvers.dcas_nsa"]}
    assert "hpcopt.agents.nsa" in edges  # imported inside a function
    assert {"hpcopt.sim.driver", "hpcopt.policies.base", "hpcopt.solvers.registry",
            "hpcopt.models.knapsack", "hpcopt.traces.swf", "hpcopt.agents.dras"} <= set(modules())


def test_every_module_has_a_layer():
    missing = [f"{path.relative_to(ROOT)} ({name})" for name, (path, _) in modules().items()
               if layer_of(name) is None]
    assert not missing, ("modules in no layer; add each to the layers contract in "
                         f"pyproject.toml where what it does puts it: {missing}")


MODULE_NAME = re.compile(r"hpcopt(\.\w+)+(:\w+)?")


@cache
def string_links() -> dict[str, list[tuple[str, int]]]:
    """module -> [(hpcopt module, line)] for every string in its code (docstrings left out)
    that is a module name, ``"hpcopt.a.b"`` or ``"hpcopt.a.b:Name"``: a link to that module
    made by name (importlib, entry points)."""
    out = {}
    for module, (path, _) in modules().items():
        tree = ast.parse(path.read_text(), str(path))
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                           ast.AsyncFunctionDef))
                      and node.body and isinstance(node.body[0], ast.Expr)}
        found = {(_known(node.value.partition(":")[0]), node.lineno)
                 for node in ast.walk(tree)
                 if isinstance(node, ast.Constant) and isinstance(node.value, str)
                 and id(node) not in docstrings and MODULE_NAME.fullmatch(node.value)}
        out[module] = sorted((t, line) for t, line in found if t and t != module)
    return out


def test_the_string_scan_sees_names_in_tables():
    assert "hpcopt.models.scas" in {t for t, _ in string_links()["hpcopt.models"]}
    assert {t for t, _ in string_links()["hpcopt"]} >= {"hpcopt.api", "hpcopt.sim.driver"}


def test_no_module_imports_from_a_layer_above_its_own():
    bad = []
    for module, found in imports().items():
        mine = layer_of(module)
        for target, line in found + string_links()[module]:
            theirs = layer_of(target)
            if mine is not None and theirs is not None and theirs > mine:
                bad.append(f"{_where(module, line)}: {module} ({LAYERS[mine][0]}) imports "
                           f"{target} ({LAYERS[theirs][0]})")
    assert not bad, "upward imports:\n" + "\n".join(bad)


# cycles still to remove (none: the CP-SAT helpers are solvers/cpsat.py)
KNOWN_CYCLES: list[set] = []


def test_no_import_cycle_between_modules():
    graph = {m: sorted({t for t, _ in found}) for m, found in imports().items()}
    index, low, stack, on, cycles = {}, {}, [], set(), []

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    stale = [known for known in KNOWN_CYCLES if known not in map(set, cycles)]
    assert not stale, f"these cycles are gone: remove them from KNOWN_CYCLES: {stale}"
    cycles = [comp for comp in cycles if set(comp) not in KNOWN_CYCLES]
    assert not cycles, "import cycles:\n" + "\n".join(_one_cycle(c) for c in cycles)


def _one_cycle(members: list[str]) -> str:
    """A shortest cycle through the first of ``members`` (a strongly connected set), as the
    import statements that make it."""
    start, inside = members[0], set(members)
    back = {start: None}
    frontier = [start]
    while frontier:  # breadth first, until an edge comes back to start
        nxt = []
        for v in frontier:
            for t, line in imports()[v]:
                if t == start:
                    path = [(v, t, line)]
                    while back[v] is not None:
                        u, ln = back[v]
                        path.append((u, v, ln))
                        v = u
                    return " -> ".join(f"{_where(a, ln)} imports {b}" for a, b, ln in path[::-1])
                if t in inside and t not in back:
                    back[t] = (v, line)
                    nxt.append(t)
        frontier = nxt
    return ", ".join(members)  # pragma: no cover - members are strongly connected


def test_the_layer_table_names_only_real_places_or_placeholders():
    placeholders = {"hpcopt.slurm", "hpcopt.slurm.cli", "hpcopt.plots"}
    names = set(modules())
    unused = [e for _, entries in LAYERS for e in entries
              if e not in placeholders and not any(m == e or m.startswith(e + ".")
                                                   for m in names)]
    assert unused == []


def test_modules_import_by_a_computed_name_only_where_a_table_of_names_is_read():
    found = set()
    for module, (path, _) in modules().items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (isinstance(node, ast.Call) and not (node.args and isinstance(
                    node.args[0], ast.Constant)) and (
                    (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                    or (isinstance(node.func, ast.Name) and node.func.id == "__import__"))):
                found.add(module)
    assert found == set(DYNAMIC_IMPORTS)
    for module, table in DYNAMIC_IMPORTS.items():
        source = modules()[module][0].read_text()
        assert re.search(rf"^{table}\b.*=", source, re.M), (module, table)


LINT = """
import sys, grimp
from importlinter.cli import lint_imports
sys.path.insert(0, ".")  # as lint-imports does: the package is read from the source tree
graph = grimp.build_graph("hpcopt", cache_dir=None)
print(len(graph.modules), graph.direct_import_exists(importer="hpcopt.solvers.dcas_nsa",
                                                     imported="hpcopt.agents.nsa"))
sys.exit(lint_imports(no_cache=True, no_logo=True))
"""


def test_the_package_links_to_its_top_level_folders():
    for name in ("models", "solvers"):
        link = SOURCES["hpcopt"] / name
        assert link.is_symlink() and link.resolve() == SOURCES[f"hpcopt.{name}"].resolve()


def test_import_linter_contracts():
    """``lint-imports`` at the repository root, with pyproject's configuration, as documented."""
    if importlib.util.find_spec("importlinter") is None and not os.environ.get("CI"):
        pytest.skip("import-linter is not installed (the dev extra has it)")
    out = subprocess.run([sys.executable, "-c", LINT], capture_output=True, text=True,
                         cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Contracts: " in out.stdout and " broken" in out.stdout
    # the whole package, lazy imports inside functions included
    n_modules, lazy_seen = out.stdout.splitlines()[0].split()
    assert int(n_modules) == len(modules()) and lazy_seen == "True"


def test_no_module_of_the_old_layout_is_left_behind():
    for name in ("hpcopt.tjap", "hpcopt.learn", "hpcopt.cloud", "hpcopt.policies.cloud",
                 "hpcopt.policies.topology", "hpcopt.workloads.deferrable"):
        assert importlib.util.find_spec(name) is None, name
    assert not (ROOT / "hpcopt" / "learn").exists()


def _loaded(code: str) -> set[str]:
    """Run ``code`` in a fresh interpreter; the hpcopt/torch/matplotlib modules it loaded."""
    code += ("\nimport sys, json\nprint(json.dumps(sorted(m for m in sys.modules if "
             "m.split('.')[0] in ('hpcopt', 'torch', 'matplotlib'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


FORBIDDEN = ("hpcopt.sim", "hpcopt.sim.driver", "hpcopt.policies", "hpcopt.trainers",
             "hpcopt.trainers.nsa_train", "hpcopt.workloads", "hpcopt.api", "matplotlib")


def test_importing_the_solvers_loads_neither_driver_nor_agents_nor_torch():
    mods = _loaded("import hpcopt.solvers, hpcopt.solvers.dcas_nsa\n"
                   "hpcopt.solvers.get_solver('nsa')")
    assert not mods & {*FORBIDDEN, "hpcopt.agents.nsa", "torch"}


def test_the_nsa_backend_solves_without_driver_or_training():
    pytest.importorskip("torch")
    mods = _loaded(
        "import numpy as np\n"
        "from hpcopt.models.dcas import DCASModel\n"
        "from hpcopt.solvers import solve\n"
        "m = DCASModel('paper-1000', np.r_[0:37, 55:90, 300:333], [30, 12, 7])\n"
        "assert solve(m, 'nsa', seed=0, solver_options={'t_max': 5}).certificate.feasible\n")
    assert {"hpcopt.agents.nsa", "torch"} <= mods
    assert not mods & set(FORBIDDEN)
