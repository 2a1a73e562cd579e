"""Every import inside a function is there for a reason.

An import belongs at the top of its module unless lifting it would cost something: each
import statement inside a function (in hpcopt/, models/ and solvers/) must be one of

- a heavy or optional library (``HEAVY``): torch, pyomo, pandas, ... load only when used, so
  ``import hpcopt`` stays fast and a missing extra is a one-line error;
- a module of the package that loads such a library when imported (found here by following
  the module-level imports);
- an import that would close a cycle at import time if it were at the top (the imported
  module already imports this one, through module-level imports);
- an entry of ``ALLOWED`` with its reason.

Anything else fails with the file and line: move the import to the top of its module, or add
an entry that says why it cannot be there.
"""

from __future__ import annotations

import ast
from functools import cache

from .test_import_layers import ROOT, modules

#: libraries imported only where used (import time, or an optional extra)
HEAVY = {"torch", "pyomo", "ortools", "pymoo", "pyscipopt", "highspy", "scipy", "pandas",
         "matplotlib", "networkx", "gymnasium", "distributed", "dask", "tqdm", "jsonschema"}

COST = "import time: {}; loaded only by the code that uses it"
CLI = ("a subcommand's code: every hpcopt command builds the whole parser, so each subcommand "
       "module loads what it runs only when it runs")
MODEL = ("a model, loaded where it is solved: hpcopt.policies (every policy), the driver and "
         "the service load no model they do not use")

#: (file, imported module) -> why the import stays inside a function; "*" matches any file
#: (a module that is costly to import wherever it is used) or any module of the package (every
#: own-module import of that file); a file pattern ending in "*" matches a folder
ALLOWED: dict[tuple[str, str], str] = {
    ("*", "hpcopt.solvers"): COST.format("registers every backend, 22 modules"),
    ("*", "hpcopt.solvers.registry"): COST.format("its package registers every backend"),
    ("*", "hpcopt.policies"): COST.format("registers every policy, 17 modules"),
    ("*", "hpcopt.policies.base"): COST.format("its package registers every policy"),
    ("*", "hpcopt.sim.driver"): COST.format("the driver, 12 modules"),
    ("*", "hpcopt.sim.decide"): COST.format("the decision core over the driver, 13 modules"),
    ("*", "hpcopt.traces"): COST.format("every trace reader, 13 modules"),
    ("*", "hpcopt.traces._text"): COST.format("its package loads every trace reader"),
    ("*", "hpcopt.traces.slurm"): COST.format("its package loads every trace reader"),
    ("*", "hpcopt.traces.convert"): COST.format("its package loads every trace reader"),
    ("*", "hpcopt.workloads"): COST.format("every workload generator with the Azure and "
                                           "fat-tree readers, 21 modules"),
    ("*", "hpcopt.workloads.tjap"): COST.format("its package loads every workload generator"),
    ("*", "hpcopt.workloads.osdec"): COST.format("its package loads every workload generator"),
    ("*", "hpcopt.datasets"): COST.format("the data-set catalogue and its download stack "
                                          "(urllib.request, http.client)"),
    ("*", "hpcopt.models"): MODEL,
    ("*", "hpcopt.models.knapsack"): MODEL,
    ("*", "hpcopt.models.bbsched"): MODEL,
    ("*", "hpcopt.models.osdec"): MODEL,
    ("*", "hpcopt.models.pareto_rules"): MODEL,
    ("hpcopt/cli/*", "*"): CLI,
    # the parsers of `hpcopt slurm` and `hpcopt workflow`, built with every command
    ("hpcopt/slurm/cli.py", "*"): CLI,
    ("hpcopt/workflows/cli.py", "*"): CLI,
    ("hpcopt/testbed/cli.py", "*"): CLI,
}
#: standard-library imports inside functions: (file, module) -> why
ALLOWED_STDLIB: dict[tuple[str, str], str] = {
    ("hpcopt/cli/*", "*"): CLI,
    ("hpcopt/errors.py", "difflib"): COST.format("every command loads the errors; a "
                                                 "suggestion for a misspelt name only"),
    ("hpcopt/traces/tables.py", "zoneinfo"): COST.format("zoneinfo loads sysconfig, 4 ms of "
                                                         "every trace read; a named zone only"),
}


def _resolve(module: str, init: bool, node: ast.ImportFrom | ast.Import) -> list[str]:
    """The absolute names an import statement names (a from-import: the module, and each
    imported name as a submodule where one exists)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    package = module if init else module.rpartition(".")[0]
    if node.level:
        parts = package.split(".")
        base = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module
                                                               else []))
    else:
        base = node.module
    subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules()]
    return subs or [base]


def _own(name: str) -> str | None:
    """The module of the package that ``name`` is (or is an attribute of)."""
    while name and name not in modules():
        name = name.rpartition(".")[0]
    return name or None


def _import_statements(module: str, path, init: bool) -> list[tuple[int, str, bool]]:
    """[(line, imported name, inside a function)] of one module (those under
    ``if TYPE_CHECKING:`` left out: they never run)."""
    found = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            if (isinstance(child, ast.If) and isinstance(child.test, ast.Name)
                    and child.test.id == "TYPE_CHECKING"):
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                found.extend((child.lineno, n, in_function)
                             for n in _resolve(module, init, child))
            visit(child, in_function or isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(ast.parse(path.read_text(), str(path)), False)
    return found


@cache
def statements() -> dict[str, list[tuple[int, str, bool]]]:
    """module -> [(line, imported name, inside a function)] for every import statement."""
    return {module: _import_statements(module, path, init)
            for module, (path, init) in modules().items()}


def _parents(module: str) -> list[str]:
    """The packages whose ``__init__`` runs before ``module`` (``hpcopt.a.b``: hpcopt,
    hpcopt.a)."""
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


@cache
def loads_at_import(module: str) -> frozenset[str]:
    """Every own module and every top-level library that importing ``module`` runs or
    loads (module-level imports, followed; parent packages included)."""
    seen, libs, todo = set(), set(), [module]
    while todo:
        m = todo.pop()
        for p in [*_parents(m), m]:
            if p in seen or p not in modules():
                continue
            seen.add(p)
            for _, name, in_function in statements()[p]:
                if in_function:
                    continue
                own = _own(name) if name.split(".")[0] == "hpcopt" else None
                if own:
                    todo.append(own)
                else:
                    libs.add(name.split(".")[0])
    return frozenset(seen | libs)


def _reason(module: str, name: str) -> str | None:
    """Why ``name`` may be imported inside a function of ``module``, or None."""
    top = name.split(".")[0]
    if top in HEAVY:
        return "heavy library"
    if top != "hpcopt":  # the standard library and numpy: at the top
        return _allowed(module, name, ALLOWED_STDLIB)
    target = _own(name)
    if target is None or target == module:
        return "itself"
    heavy = HEAVY & loads_at_import(target)
    if heavy:
        return f"loads {sorted(heavy)[0]}"
    if module in loads_at_import(target):
        return "cycle at import time"
    return _allowed(module, target, ALLOWED)


def _file(module: str) -> str:
    return str(modules()[module][0].relative_to(ROOT))


USED: set[tuple[str, str]] = set()  # the ALLOWED and ALLOWED_STDLIB entries that gave a reason


def _allowed(module: str, target: str, table: dict) -> str | None:
    """The reason of the first entry of ``table`` that matches, or None."""
    path = _file(module)
    for (file, name), reason in table.items():
        if name in ("*", target) and (file == path or file == "*" or (
                file.endswith("*") and path.startswith(file[:-1]))):
            USED.add((file, name))
            return reason
    return None


def function_imports() -> list[tuple[str, int, str, str | None]]:
    """(file, line, imported name, reason or None) of every import inside a function."""
    rows = []
    for module, found in statements().items():
        path = str(modules()[module][0].relative_to(ROOT))
        rows += [(path, line, name, _reason(module, name))
                 for line, name, in_function in found if in_function]
    return rows


def test_every_import_inside_a_function_has_a_reason():
    bad = [f"{path}:{line}: {name}" for path, line, name, reason in function_imports()
           if reason is None]
    assert not bad, ("imports inside functions with no reason to be there: move each to the "
                     "top of its module, or add an entry to ALLOWED in "
                     "tests/test_function_imports.py that says why:\n" + "\n".join(bad))


def test_every_allowed_entry_is_used():
    function_imports()
    stale = sorted((set(ALLOWED) | set(ALLOWED_STDLIB)) - USED)
    assert not stale, f"allowed entries that give no import its reason: {stale}"


def test_the_scan_sees_the_known_cases():
    rows = {(path, name): reason for path, _, name, reason in function_imports()}
    assert rows[("solvers/dcas_nsa.py", "hpcopt.agents.nsa")] == "loads torch"
    assert rows[("hpcopt/envs.py", "hpcopt.trainers.dras_env")] == "loads gymnasium"
    assert "torch" in loads_at_import("hpcopt.trainers.nsa_train")
    assert "hpcopt.sim.driver" not in loads_at_import("hpcopt.solvers")
