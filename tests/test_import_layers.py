"""The dependency direction of DESIGN.md, checked where it once was a cycle (issue #11):
``solvers -> learn.nsa -> tjap -> driver -> solvers``.

The ``nsa`` backend loads only the runtime operator (``hpcopt.agents.nsa``); training
(``hpcopt.trainers.nsa_train``) may use the driver, the policies and the solvers, but nothing on
the solving side imports it.  Checked twice: statically (every import statement, including
the lazy ones inside functions) and in fresh interpreters (``sys.modules``).
"""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# the driver/policy/CLI layer, and training modules: never imported by solvers or runtimes
UPPER = ("hpcopt.sim", "hpcopt.policies", "hpcopt.api", "hpcopt.cli", "hpcopt.workloads")


def _imports(path: Path, package: str) -> set[str]:
    """Every module named by an import statement of ``path`` (any depth), made absolute."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")
            if node.level:
                base = base[:len(base) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module
            out.add(name)
            out.update(f"{name}.{a.name}" for a in node.names)  # "from pkg import module"
    return out


def _hits(names: set[str], forbidden) -> list[str]:
    return sorted(n for n in names
                  if any(n == f or n.startswith(f + ".") for f in forbidden)
                  or n.startswith("hpcopt.trainers"))


def test_no_tjap_module_is_left_behind():
    assert importlib.util.find_spec("hpcopt.tjap") is None
    assert not (ROOT / "hpcopt" / "tjap.py").exists()


@pytest.mark.parametrize("path", sorted((ROOT / "solvers").glob("*.py")), ids=lambda p: p.name)
def test_solvers_never_import_the_driver_policies_or_training(path):
    assert _hits(_imports(path, "hpcopt.solvers"), UPPER) == []


def test_the_nsa_runtime_imports_no_solver_driver_or_training():
    names = _imports(ROOT / "hpcopt" / "agents" / "nsa.py", "hpcopt.agents")
    assert _hits(names, UPPER + ("hpcopt.solvers", "hpcopt.models")) == []
    # the training module is the one that uses them
    train = _imports(ROOT / "hpcopt" / "trainers" / "nsa_train.py", "hpcopt.trainers")
    assert {"hpcopt.agents.nsa", "hpcopt.policies.topology"} <= train


def _loaded(code: str) -> set[str]:
    """Run ``code`` in a fresh interpreter; the hpcopt/torch/matplotlib modules it loaded."""
    code += ("\nimport sys, json\nprint(json.dumps(sorted(m for m in sys.modules if "
             "m.split('.')[0] in ('hpcopt', 'torch', 'matplotlib'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


FORBIDDEN = ("hpcopt.sim", "hpcopt.sim.driver", "hpcopt.policies", "hpcopt.trainers.nsa_train",
             "hpcopt.workloads", "hpcopt.api", "matplotlib")


def test_importing_the_solvers_loads_neither_driver_nor_learn_nor_torch():
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


def test_importing_the_nsa_runtime_loads_no_solver_or_driver():
    pytest.importorskip("torch")
    mods = _loaded("import hpcopt.agents.nsa")
    assert not mods & {*FORBIDDEN, "hpcopt.solvers"}
