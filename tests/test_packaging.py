"""An install that works outside a checkout (issue #12, part 4).

What the library reads at run time (the instance schema, the demo trace, the demo's knapsack
instances, the learned checkpoints) is package data; pyproject lists every package and maps
``hpcopt._bundled`` onto ``instances/``.  Checked here without building a wheel: setuptools'
``build_py`` lays the package out as a wheel would, and a fresh interpreter outside the checkout
imports it from there.  ``.ci/wheel-check`` builds and installs the real wheel.
"""

from __future__ import annotations

import glob
import importlib.resources
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10: pytest's own dependency
    import tomli as tomllib

from hpcopt.instances import FAMILIES, SCHEMA_PATH, bundled_path, load_instance, schema

from .conftest import REPO

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
SETUPTOOLS = PYPROJECT["tool"]["setuptools"]
RUNTIME_FILES = ["schema/hpcopt-instance.schema.json", "traces/demo.swf",
                 "knapsack/bb_table1.json"]


def _package_dir(package: str) -> Path:
    """The source folder of ``package`` under pyproject's ``package-dir`` mapping."""
    mapping = SETUPTOOLS["package-dir"]
    parts = package.split(".")
    for cut in range(len(parts), 0, -1):
        head = ".".join(parts[:cut])
        if head in mapping:
            return REPO / mapping[head] / Path(*parts[cut:])
    raise AssertionError(f"{package} is not under any package-dir entry")


def test_every_package_is_listed():
    """A package missing from pyproject's list is missing from the wheel (hpcopt.traces and
    hpcopt.workflows once were)."""
    listed = set(SETUPTOOLS["packages"])
    found = set()
    for name, folder in SETUPTOOLS["package-dir"].items():
        for init in (REPO / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(REPO / folder)
            found.add(".".join([name, *rel.parts]))
    assert found - listed == set()
    assert all(_package_dir(p).is_dir() for p in listed)


def test_package_data_covers_what_the_library_reads():
    data = SETUPTOOLS["package-data"]
    shipped = {Path(f).resolve() for package, patterns in data.items() for pattern in patterns
               for f in glob.glob(str(_package_dir(package) / pattern))}
    needed = [bundled_path(rel) for rel in RUNTIME_FILES]
    for family in FAMILIES:
        needed += [Path(p) for p in glob.glob(str(bundled_path(family) / "*.json"))]
    needed += list((REPO / "hpcopt" / "agents" / "checkpoints").iterdir())
    needed.append(REPO / "hpcopt" / "data_catalogue.json")  # hpcopt data list | fetch | verify
    needed.append(REPO / "hpcopt" / "slurm" / "job_submit.lua")  # hpcopt slurm job-submit-lua
    assert len(needed) >= 15
    assert [p for p in needed if p.resolve() not in shipped] == []
    # every family folder of instances/ is one FAMILIES lists (hpcopt instances), and no
    # generator script is shipped
    bundled = _package_dir("hpcopt._bundled").resolve()
    folders = {p.name for p in bundled.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == {"schema", "traces", *FAMILIES}
    assert {p.relative_to(bundled).parts[0] for p in shipped if bundled in p.parents} == folders
    assert not [p for p in shipped if p.suffix == ".py"]


def test_bundled_files_and_schema_load_here():
    assert SCHEMA_PATH == bundled_path("schema", "hpcopt-instance.schema.json")
    assert SCHEMA_PATH.is_file() and schema()["$id"] == "hpcopt-instance.schema.json"
    assert bundled_path("traces", "demo.swf").is_file()
    assert load_instance(bundled_path("knapsack", "bb_table1.json")).name == "bb_table1"
    # one schema (instances/schema/), no copy in the package folders
    assert SCHEMA_PATH.resolve() == REPO / "instances" / "schema" / SCHEMA_PATH.name
    for folder in ("hpcopt", "models", "solvers"):
        assert list((REPO / folder).rglob(SCHEMA_PATH.name)) == []


def test_license_matches_metadata():
    text = (REPO / "LICENSE").read_text()
    assert text.startswith("MIT License") and "hpcopt contributors" in text
    assert PYPROJECT["project"]["license"] == "MIT"
    assert PYPROJECT["project"]["license-files"] == ["LICENSE"]


def test_built_package_runs_outside_the_checkout(tmp_path):
    """``build_py`` output (the wheel's hpcopt/) imported from a folder outside the checkout:
    importlib.resources finds the schema, the demo trace and the knapsack instances in the
    package, and nothing is read from the checkout."""
    src = tmp_path / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc")
    for folder in {SETUPTOOLS["package-dir"][k] for k in SETUPTOOLS["package-dir"]}:
        shutil.copytree(REPO / folder, src / folder, ignore=ignore)
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO / name, src / name)
    lib = tmp_path / "lib"
    build = subprocess.run(
        [sys.executable, "-c", "from setuptools import setup; setup()", "-q", "build_py",
         "--build-lib", str(lib)], cwd=src, capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr[-3000:]
    assert not (lib / "instances").exists() and (lib / "hpcopt" / "_bundled").is_dir()

    probe = f"""
import glob, importlib.resources, json, sys
from pathlib import Path
import hpcopt, hpcopt.models, hpcopt.solvers
from hpcopt.cli import instances_dir
from hpcopt.datadir import data_dir
from hpcopt.datasets import catalogue
from hpcopt.errors import DataNotFoundError
from hpcopt.instances import SCHEMA_PATH, bundled_instances, bundled_path, load_instance, schema
from hpcopt.workloads import load_batsim
def no_data():
    try:
        load_batsim()
    except DataNotFoundError as err:
        return str(err)
lib, repo = Path({str(lib)!r}), Path({str(REPO)!r})
files = importlib.resources.files("hpcopt") / "_bundled"
found = {{rel: (files / rel).is_file() for rel in {RUNTIME_FILES!r}}}
paths = [hpcopt.__file__, hpcopt.models.__file__, hpcopt.solvers.__file__, SCHEMA_PATH,
         instances_dir(), bundled_path("traces", "demo.swf")]
print(json.dumps({{
    "found": found,
    "inside": all(lib in Path(p).resolve().parents for p in paths),
    "checkout": any(repo in Path(p).resolve().parents for p in paths),
    "schema": schema()["$id"],
    "knapsack": sorted(Path(p).name for p in glob.glob(str(instances_dir() / "knapsack/*.json"))),
    "loaded": load_instance(instances_dir() / "knapsack" / "ks1_tiny_5.json").name,
    "by_name": [load_instance(r["name"]).name for r in bundled_instances()],
    "data_dir": None if data_dir() is None else str(data_dir()),
    "no_data": no_data(),
    "catalogue": len(catalogue()),
}}))
"""
    run_dir = tmp_path / "elsewhere"
    run_dir.mkdir()
    proc = subprocess.run([sys.executable, "-c", probe], cwd=run_dir, capture_output=True,
                          text=True, timeout=120, env={**{k: v for k, v in os.environ.items()
                                                         if k != "HPCOPT_DATA"},
                                                      "PYTHONPATH": str(lib),
                                                      "XDG_DATA_HOME": str(tmp_path / "xdg")})
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["found"] == dict.fromkeys(RUNTIME_FILES, True)
    assert got["inside"] and not got["checkout"]
    assert got["schema"] == "hpcopt-instance.schema.json"
    assert got["knapsack"] == sorted(p.name for p in (REPO / "instances" / "knapsack").glob(
        "*.json"))
    assert got["loaded"] == "ks1_tiny_5"
    # every family by name; no data directory beside site-packages, and a clear line instead
    assert len(got["by_name"]) == len([p for f in FAMILIES for p in (REPO / "instances" / f)
                                       .glob("*.json")])
    assert got["data_dir"] is None
    assert "not found (no data directory is set)" in got["no_data"] and "HPCOPT_DATA" in \
        got["no_data"] and "hpcopt data fetch kopanski-bb" in got["no_data"]
    assert got["catalogue"] >= 20  # the data catalogue is package data


def test_resources_api_in_this_install():
    """In an editable install hpcopt/_bundled does not exist and bundled_path falls back to the
    checkout's instances/; in a wheel it is package data (the test above)."""
    packaged = importlib.resources.files("hpcopt") / "_bundled"
    expected = packaged if packaged.is_dir() else REPO / "instances"
    assert bundled_path() == expected
