"""Every fenced code block of README.md and docs/*.md runs here, one test per block.

The rules (what a documentation writer can rely on):

- ```python blocks run in order, in one namespace per file, with the current directory a
  fresh temporary folder per file (shared with that file's console blocks).
- ```console blocks: each line starting with ``$ `` is a command run with bash in that
  folder (``hpcopt`` and ``python`` of this environment first on PATH; a command ending
  with a backslash continues on the next line). The lines after a command, up to the next
  ``$ `` line, are its expected standard output, compared line by line after stripping
  trailing spaces: a line ``...`` matches any number of lines, and ``...`` inside a line
  matches any text. A command must exit 0.
- Blocks in other languages (text, json, ini, ...) are shown, not run.
- An HTML comment on the line before a block gates it: ``<!-- doctest: needs slurm -->``
  (runs where Slurm's ``sbatch`` is installed), ``<!-- doctest: needs data -->`` (runs where
  the data directory holds every data set of the catalogue; the environment variable
  HPCOPT_DATA points at it),
  ``<!-- doctest: needs ml -->`` (runs where torch, the ``ml`` extra, is installed; needs
  combine: ``needs ml data``), ``<!-- doctest: needs slow -->`` (runs in the slow tier,
  ``-m slow``: a long run, such as training), ``<!-- doctest: skip (reason) -->``. Without
  ``needs data``, HPCOPT_DATA is unset.

A block runs the file's earlier blocks first when they have not run yet, so each block is
also a test of its own (file:line) in any order.  Blocks that need Slurm start real testbeds:
they are in the slow tier too.  A block outside the slow tier runs none of its blocks first.
Every testbed a page starts (``hpcopt slurm testbed start DIR``) and does not stop is stopped
by the harness as soon as one of the page's blocks fails, and in any case when this module
ends.  The pages must also stay free of what users cannot use: issue numbers, commit hashes,
paths outside the project.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import traceback
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from hpcopt.datadir import data_root
from hpcopt.datadir import missing_data as _missing_data

REPO = Path(__file__).resolve().parents[1]
# the data directory in force, read as tests/conftest.py reads it: this module also runs alone,
# against an installed wheel outside the checkout (.ci/wheel-check), without the conftest
DATA_DIR = data_root()


def missing_data(*relpaths: str) -> str | None:
    """Why a block reading these data-directory files cannot run, or None."""
    return _missing_data(*relpaths, root=DATA_DIR)
COMMAND_TIMEOUT_S = 120
RUN_LANGUAGES = ("python", "console")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
GATE = re.compile(r"<!--\s*doctest:\s*(needs(?:\s+(?:slurm|data|ml|slow))+|skip\b[^>]*?)\s*-->")
SLOW = {"slurm", "slow"}  # blocks that need one of these are in the slow tier
TESTBED = re.compile(r"\bhpcopt\s+slurm\s+testbed\s+(start|stop)\s+([^\s;&|]+)")


def doc_files() -> list[Path]:
    return [REPO / "README.md"] + sorted((REPO / "docs").glob("*.md"))


@dataclass
class Block:
    path: Path
    line: int          # 1-based line of the opening fence
    language: str
    text: str
    gate: str = ""     # "", "needs slurm", "needs data", "needs ml", "needs ml data", "skip (...)"

    @property
    def needs(self) -> set[str]:
        """What the block needs: ``slurm``, ``data`` (the real-data folder), ``ml`` (torch),
        ``slow`` (the slow tier)."""
        return set(self.gate.split()[1:]) if self.gate.startswith("needs") else set()

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def parse_blocks(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown file, with the gate comment right before each."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, language = m.groups()
        start = i
        body = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            line = lines[i]
            body.append(line[len(indent):] if line.startswith(indent) else line.lstrip())
            i += 1
        i += 1  # the closing fence
        before = start - 1
        while before >= 0 and not lines[before].strip():
            before -= 1
        gate = GATE.search(lines[before]) if before >= 0 else None
        blocks.append(Block(path, start + 1, language.lower(), "\n".join(body) + "\n",
                            " ".join(gate.group(1).split()) if gate else ""))
    return blocks


@functools.cache
def _partial_data() -> bool:
    """Whether the data directory lacks some file of the catalogue (the pages' data blocks
    read several data sets: they run on a whole copy only, and skip on a partial one)."""
    from hpcopt.datasets import by_path

    return missing_data(*by_path()) is not None


def gate_reason(block: Block) -> str | None:
    """Why the block does not run here, or None when it runs."""
    if block.gate.startswith("skip"):
        return f"{block.where}: {block.gate}"
    needs = block.needs
    if "slurm" in needs and shutil.which("sbatch") is None:
        return f"{block.where}: needs Slurm (sbatch not on PATH)"
    if "slurm" in needs and importlib.util.find_spec("hpcopt.slurm") is None:
        return f"{block.where}: needs the Slurm adapter (hpcopt.slurm)"
    if "data" in needs and _partial_data():
        return f"{block.where}: needs every data set in the data directory {DATA_DIR}: " \
               "hpcopt data fetch --all"
    if "ml" in needs and importlib.util.find_spec("torch") is None:
        return f"{block.where}: needs the ml extra (torch)"
    return None


# -- console blocks ----------------------------------------------------------------------

def parse_console(text: str) -> list[tuple[str, list[str]]]:
    """(command, expected output lines) pairs of a console block."""
    steps: list[tuple[str, list[str]]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("$ "):
            command = line[2:]
            while command.endswith("\\") and i + 1 < len(lines):
                i += 1
                command = command + "\n" + lines[i]
            steps.append((command, []))
        elif steps:
            steps[-1][1].append(line.rstrip())
        elif line.strip():
            raise ValueError(f"text before the first '$ ' command: {line!r}")
        i += 1
    return steps


def _line_matches(pattern: str, line: str) -> bool:
    if "..." not in pattern:
        return pattern == line
    regex = ".*".join(re.escape(part) for part in pattern.split("..."))
    return re.fullmatch(regex, line) is not None


def output_matches(expected: list[str], actual: list[str]) -> bool:
    """Line-by-line match where a line '...' stands for any number of lines."""
    while expected and not expected[-1]:
        expected = expected[:-1]
    while actual and not actual[-1]:
        actual = actual[:-1]

    def match(e: int, a: int) -> bool:
        if e == len(expected):
            return a == len(actual)
        if expected[e] == "...":
            return any(match(e + 1, k) for k in range(a, len(actual) + 1))
        return a < len(actual) and _line_matches(expected[e], actual[a]) and match(e + 1, a + 1)

    return match(0, 0)


def track_testbeds(command: str, testbeds: set[str]) -> None:
    """Note the testbed folders ``command`` starts (before it runs: a start that fails half
    way may leave daemons) or stops."""
    for verb, folder in TESTBED.findall(command):
        (testbeds.add if verb == "start" else testbeds.discard)(folder)


def stop_testbed(folder: str, cwd: Path, env: dict) -> None:
    subprocess.run([sys.executable, "-m", "hpcopt.cli", "slurm", "testbed", "stop", folder],
                   cwd=cwd, env=env, capture_output=True, text=True, timeout=180)


def run_console(block: Block, cwd: Path, env: dict, testbeds: set[str] | None = None) -> None:
    for command, expected in parse_console(block.text):
        if testbeds is not None:
            track_testbeds(command, testbeds)
        try:
            proc = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, text=True,
                                  capture_output=True, timeout=COMMAND_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{block.where}: `{command}` ran past {COMMAND_TIMEOUT_S} s")
        actual = [line.rstrip() for line in proc.stdout.splitlines()]
        report = (f"{block.where}: `{command}`\n--- exit {proc.returncode}, stdout:\n"
                  f"{proc.stdout}--- stderr:\n{proc.stderr[-4000:]}")
        if proc.returncode != 0:
            pytest.fail(f"{report}--- failed (exit {proc.returncode})", pytrace=False)
        if expected and not output_matches(expected, actual):
            pytest.fail(report + "--- expected:\n" + "\n".join(expected), pytrace=False)


# -- python blocks -----------------------------------------------------------------------

def run_python(block: Block, namespace: dict) -> None:
    # padded so that a traceback names the Markdown file and its line
    code = compile("\n" * block.line + block.text, str(block.path), "exec")
    try:
        exec(code, namespace)
    except Exception:  # noqa: BLE001 - reported with the block's place
        pytest.fail(f"{block.where}: python block failed\n{traceback.format_exc(limit=-6)}",
                    pytrace=False)


# -- one runner per file: blocks run once, in order -------------------------------------

@dataclass
class FileRun:
    blocks: list[Block]
    cwd: Path
    namespace: dict = field(default_factory=lambda: {"__name__": "__doc__"})
    done: dict = field(default_factory=dict)    # block index -> None (ok) or failure text
    testbeds: set = field(default_factory=set)  # testbed folders started and not yet stopped

    def stop_testbeds(self) -> None:
        """Stop every testbed this page started and has not stopped."""
        env = _env(Block(Path(), 0, "console", ""))
        for folder in sorted(self.testbeds):
            try:
                stop_testbed(folder, self.cwd, env)
            except (OSError, subprocess.SubprocessError):
                pass  # the next folder still gets its stop
        self.testbeds.clear()


_RUNS: dict[Path, FileRun] = {}


def _env(block: Block) -> dict:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.pop("HPCOPT_DATA", None)
    if "data" in block.needs:
        env["HPCOPT_DATA"] = str(DATA_DIR)
    env.setdefault("MPLBACKEND", "Agg")
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def _run_one(block: Block, run: FileRun, monkeypatch) -> None:
    env = _env(block)
    if block.language == "console":
        run_console(block, run.cwd, env, run.testbeds)
        return
    with monkeypatch.context() as m:
        m.chdir(run.cwd)
        m.delenv("HPCOPT_DATA", raising=False)
        if "data" in block.needs:
            m.setenv("HPCOPT_DATA", str(DATA_DIR))
        run_python(block, run.namespace)


def run_through(run: FileRun, index: int, monkeypatch) -> None:
    """Run the file's runnable blocks up to ``index`` that have not run; fail ``index`` if
    it fails, or if an earlier block it may depend on failed."""
    slow_tier = bool(run.blocks[index].needs & SLOW)
    for i in range(index + 1):
        block = run.blocks[i]
        if i in run.done or block.language not in RUN_LANGUAGES or gate_reason(block):
            continue
        if block.needs & SLOW and not slow_tier:
            continue  # a block of the slow tier; a block outside it does not depend on it
        try:
            _run_one(block, run, monkeypatch)
            run.done[i] = None
        except BaseException as exc:  # pytest's Failed is a BaseException
            run.done[i] = str(exc)
            run.stop_testbeds()  # the page's later blocks (its `testbed stop`) will not run
            if i == index:
                raise
            pytest.fail(f"{run.blocks[index].where}: an earlier block of the file failed "
                        f"({block.where}):\n{exc}", pytrace=False)
    if run.done.get(index):
        pytest.fail(run.done[index], pytrace=False)


def _cases():
    cases = []
    for path in doc_files():
        if not path.exists():
            continue
        for index, block in enumerate(parse_blocks(path)):
            if block.language in RUN_LANGUAGES:
                marks = [pytest.mark.slow] if block.needs & SLOW else []
                cases.append(pytest.param(path, index, id=block.where, marks=marks))
    return cases


@pytest.fixture(scope="module", autouse=True)
def _stop_testbeds_left():
    yield
    for run in _RUNS.values():
        run.stop_testbeds()


@pytest.mark.parametrize("path,index", _cases())
def test_doc_block(path: Path, index: int, tmp_path_factory, monkeypatch):
    if path not in _RUNS:
        _RUNS[path] = FileRun(parse_blocks(path), tmp_path_factory.mktemp(path.stem))
    run = _RUNS[path]
    reason = gate_reason(run.blocks[index])
    if reason:
        pytest.skip(reason)
    run_through(run, index, monkeypatch)


# -- what user pages must not contain ----------------------------------------------------

FORBIDDEN = [
    (re.compile(r"(?<![\w&/])#\d+\b"), "an issue number"),
    (re.compile(r"\bissues?\s+#?\d+", re.I), "an issue number"),
    (re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b"), "a commit hash"),
    (re.compile(r"\.\./shared|/work/|\bshared/data\b"), "a path outside the project"),
]


@pytest.mark.parametrize("path", [p for p in doc_files() if p.exists()],
                         ids=lambda p: str(p.relative_to(REPO)))
def test_doc_page_speaks_to_users(path: Path):
    problems = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        for pattern, what in FORBIDDEN:
            m = pattern.search(line)
            if m:
                problems.append(f"{path.relative_to(REPO)}:{number}: {what}: {m.group(0)!r}")
    assert not problems, "\n".join(problems)


def test_readme_is_a_front_door():
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) < 200, f"README.md has {len(lines)} lines; the rest belongs in docs/"
    # CI runs this line as it stands
    assert 'pip install -e ".[dev]" && python -m pytest -q' in lines


LINK = re.compile(r"\[[^\]]*\]\(([^)\s#]+)(#[^)]*)?\)")


@pytest.mark.parametrize("path", [p for p in doc_files() if p.exists()],
                         ids=lambda p: str(p.relative_to(REPO)))
def test_doc_links_resolve(path: Path):
    if not (REPO / "pyproject.toml").is_file():
        pytest.skip("links are checked in a checkout (the pages were copied out alone)")
    missing = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        for m in LINK.finditer(line):
            target = m.group(1)
            if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
                continue
            if not (path.parent / target).exists():
                missing.append(f"{path.relative_to(REPO)}:{number}: {target}")
    assert not missing, "links to files that do not exist:\n" + "\n".join(missing)


# -- the harness itself ------------------------------------------------------------------

def test_console_matching_rules():
    assert output_matches(["a", "...", "z"], ["a", "b", "c", "z"])
    assert output_matches(["a", "...", "z"], ["a", "z"])
    assert output_matches(["wrote ... rows"], ["wrote 24 rows"])
    assert not output_matches(["a", "z"], ["a", "b", "z"])
    assert not output_matches(["a"], ["a", "b"])
    assert output_matches(["a", ""], ["a"])
    steps = parse_console("$ echo a \\\n  b\na b\n$ true\n")
    assert steps == [("echo a \\\n  b", ["a b"]), ("true", [])]


def test_parse_blocks_reads_gates(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("text\n\n<!-- doctest: needs data -->\n```console\n$ true\n```\n\n"
                    "```text\nshown\n```\n<!-- doctest: skip (slow) -->\n```python\nx = 1\n```\n"
                    "<!-- doctest: needs ml data -->\n```python\ny = 2\n```\n"
                    "<!-- doctest: needs ml slow -->\n```console\n$ true\n```\n")
    blocks = parse_blocks(page)
    assert [(b.line, b.language, b.gate) for b in blocks] == [
        (4, "console", "needs data"), (8, "text", ""), (12, "python", "skip (slow)"),
        (16, "python", "needs ml data"), (20, "console", "needs ml slow")]
    assert [b.needs for b in blocks] == [{"data"}, set(), set(), {"ml", "data"}, {"ml", "slow"}]
    assert blocks[2].text == "x = 1\n"


def test_the_harness_tracks_testbeds_and_stops_those_a_failed_page_left(tmp_path, monkeypatch):
    testbeds: set[str] = set()
    track_testbeds("hpcopt slurm testbed start tb --nodes 8", testbeds)
    track_testbeds("SLURM_CONF=$PWD/tb/slurm.conf sbatch --wrap true", testbeds)
    assert testbeds == {"tb"}
    track_testbeds("hpcopt slurm testbed stop tb", testbeds)
    assert testbeds == set()

    page = tmp_path / "page.md"  # a block fails before its own `testbed stop` line
    page.write_text("```console\n$ echo hpcopt slurm testbed start tb1\n"
                    "hpcopt slurm testbed start tb1\n$ false\n"
                    "$ hpcopt slurm testbed stop tb1\n```\n")
    stopped = []
    monkeypatch.setitem(globals(), "stop_testbed", lambda folder, cwd, env: stopped.append(folder))
    blocks = [replace(b, path=REPO / "docs" / "page.md") for b in parse_blocks(page)]
    run = FileRun(blocks, tmp_path)
    with pytest.raises(pytest.fail.Exception):
        run_through(run, 0, monkeypatch)
    assert stopped == ["tb1"] and run.testbeds == set()
