"""The layer contract over every module of hpcopt (hpcopt/, models/, solvers/).

Every import statement counts, the lazy ones inside functions included (read with ``ast``):
a module imports only from its own layer or the layers below it, and no two modules import
each other, directly or through others (no file-level cycle).  A module in no layer fails
``test_every_module_has_a_layer``: add it to ``LAYERS`` below, where what it does puts it.

Layers, bottom to top (an entry is a module or a package with everything under it):

1. base: the package's front module ``hpcopt`` (``__version__``; its lazy names resolve
   through ``importlib`` on first use, not by import statements), ``errors``, ``datadir``,
   ``datasets`` (the catalogue of real data sets, their fetch and check), ``domain``,
   ``topology`` (the fat-tree of the allocation models), ``result`` (solver
   results and the outcome vocabulary), ``jsonsafe``, ``cliargs`` (argparse value types),
   ``envs`` (gymnasium registration by name).
2. traces: reading and writing workload traces (``hpcopt.traces.*``).
3. models: the declarative window models (``hpcopt.models.*``).
4. inputs: instance files (``instances``: they hold models), workload generators
   (``workloads``) and the assembly of a run's jobs and system from them (``scenario``).
5. agents: the runtime learned components (``hpcopt.agents.*``).  They need only the base,
   and sit below the solvers because the ``nsa`` backend loads the NSA repair operator.
6. solvers: the backends and their registry (``hpcopt.solvers.*``).
7. sim: the driver, resources, orders, metrics, the policy protocol, the simulation result,
   the one-pick environment (``hpcopt.sim.*``).
8. policies: every registered policy (``hpcopt.policies.*``).
9. application: what users run: ``api``, ``cloud``, ``batch``, ``sweep``, ``service``,
   ``executors`` (the stop/run engine under batch and sweep), ``workflows``, ``trainers``
   (they run episodes through the driver), ``slurm``, ``plots``.
10. cli: the command line (``hpcopt.cli``, a module or a package) and the subcommand
    modules that live beside their application package (``workflows.cli``, ``slurm.cli``).
"""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# where each top package's files are (pyproject.toml's package-dir)
SOURCES = {"hpcopt": ROOT / "hpcopt", "hpcopt.models": ROOT / "models",
           "hpcopt.solvers": ROOT / "solvers"}

LAYERS = [
    ("base", ["hpcopt", "hpcopt.errors", "hpcopt.datadir", "hpcopt.datasets", "hpcopt.domain",
              "hpcopt.topology",
              "hpcopt.result", "hpcopt.jsonsafe", "hpcopt.cliargs", "hpcopt.envs"]),
    ("traces", ["hpcopt.traces"]),
    ("models", ["hpcopt.models"]),
    ("inputs", ["hpcopt.instances", "hpcopt.workloads", "hpcopt.scenario"]),
    ("agents", ["hpcopt.agents"]),
    ("solvers", ["hpcopt.solvers"]),
    ("sim", ["hpcopt.sim"]),
    ("policies", ["hpcopt.policies"]),
    ("application", ["hpcopt.api", "hpcopt.cloud", "hpcopt.batch", "hpcopt.sweep",
                     "hpcopt.service", "hpcopt.executors", "hpcopt.workflows",
                     "hpcopt.trainers", "hpcopt.slurm", "hpcopt.plots"]),
    ("cli", ["hpcopt.cli", "hpcopt.workflows.cli", "hpcopt.slurm.cli"]),
]


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
    assert not missing, ("modules in no layer; add each to LAYERS in "
                         f"tests/test_import_layers.py where what it does puts it: {missing}")


def test_no_module_imports_from_a_layer_above_its_own():
    bad = []
    for module, found in imports().items():
        mine = layer_of(module)
        for target, line in found:
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


def test_no_module_of_the_old_layout_is_left_behind():
    for name in ("hpcopt.tjap", "hpcopt.learn"):
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
