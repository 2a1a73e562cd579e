"""Scale-out: ``hpcopt solve`` and ``hpcopt sweep`` on a Dask LocalCluster (2 single-threaded
worker processes, one cluster for the module) and on the local process pool give the same
rows as a serial run (wall times aside); rows stream through the same writer, --resume works
the same, a worker that dies becomes error rows, and a missing Dask is a clear message."""

from __future__ import annotations

import json
import os
import sys

import pytest

from hpcopt.batch import RowWriter, instance_seed, run_batch
from hpcopt.cli import main
from hpcopt.executors import (
    DaskExecutor,
    PoolExecutor,
    SerialExecutor,
    dask_client,
    default_chunk,
    parse_dask,
)
from hpcopt.sweep import run_sweep

from .conftest import INSTANCES, default_signals

distributed = pytest.importorskip("distributed")
import cloudpickle  # noqa: E402  (comes with distributed)

KNAPSACK = INSTANCES / "knapsack"
DEMO = INSTANCES / "traces" / "demo.swf"
BACKENDS = ["dp", "greedy"]


@pytest.fixture(scope="module")
def client():
    # what --dask local:2 makes; a task that kills its worker is not retried on the other
    # one (Dask's default is 3 times)
    c, cluster = dask_client("local:2", allowed_failures=0)
    with c:
        yield c
    cluster.close()


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """The bundled knapsack instances (relative file names) and one unreadable file."""
    root = tmp_path_factory.mktemp("inst")
    for src in sorted(KNAPSACK.glob("*.json")):
        (root / src.name).write_bytes(src.read_bytes())
    (root / "zz_binary.json").write_bytes(bytes(range(256)))
    return root


def strip(rows):
    return [{k: v for k, v in r.items() if k != "wall_time_s"} for r in rows]


def read(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def serial(folder):
    return run_batch([str(folder / "*.json")], BACKENDS).rows


def test_solve_on_dask_and_a_pool_gives_the_serial_rows(client, folder):
    rows = serial(folder)
    assert len(rows) == 2 * 13 and sum(r["status"] == "ERROR" for r in rows) == 2
    assert all(r["seed"] == instance_seed(None, r["instance"]) for r in rows
               if r["status"] != "ERROR")
    on_dask = run_batch([str(folder / "*.json")], BACKENDS,
                        executor=DaskExecutor(client=client), chunk=4).rows
    assert strip(on_dask) == strip(rows)
    pooled = run_batch([str(folder / "*.json")], BACKENDS, workers=2, chunk=3).rows
    assert strip(pooled) == strip(rows)


def test_dask_rows_stream_to_the_writer_and_resume_skips_them(client, folder, tmp_path):
    out = tmp_path / "rows.jsonl"
    files = sorted(str(p) for p in folder.glob("*.json"))
    writer = RowWriter(out)
    run_batch(files[:5], BACKENDS, writer=writer, executor=DaskExecutor(client=client))
    writer.close()
    assert len(read(out)) == 10
    writer = RowWriter(out, resume=True)
    run = run_batch(files, BACKENDS, writer=writer, executor=DaskExecutor(client=client),
                    chunk=2)
    writer.close()
    assert run.skipped == 10
    rows = read(out)
    assert sorted((r["file"], r["backend"]) for r in rows) == \
        sorted((f, b) for f in files for b in BACKENDS)
    assert strip(sorted(rows, key=lambda r: (r["file"], r["backend"]))) == \
        strip(sorted(serial(folder), key=lambda r: (r["file"], r["backend"])))


def test_cli_solve_with_a_scheduler_address_and_chunks(client, folder, tmp_path, capsys):
    out = tmp_path / "rows.jsonl"
    code = main(["solve", str(folder / "ks1_*.json"), "--backend", "dp", "--no-progress",
                 "--dask", client.scheduler.address, "--chunk", "2", "--seed", "7",
                 "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    rows = read(out)
    assert len(rows) == 8 and all(r["status"] == "OPTIMAL" for r in rows)
    assert all(r["seed"] == instance_seed(7, r["instance"]) for r in rows)
    assert "solving on Dask" in capsys.readouterr().out


def crash_on_three(task):
    """Kills the process that runs task 3 (a segfault, out of memory ...)."""
    if task == 3:
        os._exit(13)
    return task * 10


def collect(executor, n=8, chunk=4):
    got = {}
    executor.run(crash_on_three, list(range(n)), lambda i, r, e: got.__setitem__(i, (r, e)),
                 chunk=chunk)
    return got


@pytest.mark.slow  # the slow tier (-m slow): a long check, run by CI after the default run
def test_a_worker_that_dies_is_an_error_for_its_task_only(client):
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    try:
        got = collect(DaskExecutor(client=client), n=10, chunk=2)
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    assert sorted(got) == list(range(10))
    assert all(got[i] == (i * 10, None) for i in got if i != 3)
    assert got[3][0] is None and got[3][1].startswith("worker lost")
    client.wait_for_workers(2, timeout=60)  # the nanny starts a new worker


@pytest.mark.parametrize("chunk", [1, 3])
def test_the_pool_survives_a_dead_worker_too(chunk):
    """Only the task that kills its worker is an error, not those that shared its pool."""
    got = collect(PoolExecutor(2), n=12, chunk=chunk)
    assert all(got[i] == (i * 10, None) for i in got if i != 3) and len(got) == 12
    assert got[3][0] is None and "worker lost" in got[3][1]


def test_sweep_on_dask_gives_the_serial_rows(client, tmp_path):
    spec = {"trace": str(DEMO), "jobs": 120, "policy": ["fcfs", "knapsack", "random"],
            "backend": ["dp", "greedy"], "window": [5, 10], "seed": [0, 1]}
    rows = run_sweep(spec).rows
    assert len(rows) == 2 * 2 + 2 * 2 * 2 + 2 * 2  # backend only multiplies knapsack
    out = tmp_path / "runs.jsonl"
    writer = RowWriter(out, columns=[], command="hpcopt sweep",
                       key=lambda r: r.get("run"))
    on_dask = run_sweep(spec, writer=writer, executor=DaskExecutor(client=client), chunk=3)
    writer.close()
    assert strip(on_dask.rows) == strip(rows)
    assert sorted(r["run"] for r in read(out)) == sorted(r["run"] for r in rows)


def test_seeds_are_stable_and_per_instance():
    assert instance_seed(None, "a") == instance_seed(0, "a") == 1595580616
    assert instance_seed(0, "b") != instance_seed(0, "a") != instance_seed(1, "a")
    assert all(0 <= instance_seed(s, "x") < 2**31 for s in range(50))


def test_chunks_and_dask_specs():
    assert default_chunk(2000, 2) == 125 and default_chunk(100_000, 2) == 200
    assert default_chunk(3, 4) == 1
    assert parse_dask("local:3") == ("local", 3)
    assert parse_dask("tcp://10.0.0.1:8786") == ("address", "tcp://10.0.0.1:8786")
    for bad in ("local", "local:0", "host:8786"):
        with pytest.raises(Exception, match="expected local:N"):
            parse_dask(bad)
    assert isinstance(SerialExecutor(), SerialExecutor)


def test_an_address_dask_cannot_parse_is_a_user_error(capsys):
    code = main(["solve", str(KNAPSACK / "ks1_tiny_5.json"), "--dask", "weird://x"])
    err = capsys.readouterr().err
    assert code == 2 and "--dask weird://x: not a scheduler address" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_missing_dask_is_a_clear_message(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import fails
    code = main(["solve", str(KNAPSACK / "ks1_tiny_5.json"), "--dask", "local:2"])
    err = capsys.readouterr().err
    assert code == 2 and 'pip install "hpcopt[dask]"' in err and "Traceback" not in err
    # without Dask, --workers keeps the local pool
    assert main(["solve", str(KNAPSACK / "ks1_tiny_5.json"), "--workers", "2",
                 "--no-progress"]) == 0


def test_ctrl_c_to_the_whole_process_group_keeps_the_rows_of_a_local_cluster(tmp_path):
    """Ctrl-C in a terminal reaches the LocalCluster's workers too: they ignore it, the
    batch stops after their current task, every row received stays, exit 130."""
    import shutil
    import signal
    import subprocess
    import time

    for i in range(30):
        shutil.copy(KNAPSACK / "ks2_random_60.json", tmp_path / f"f{i:02d}.json")
    out = tmp_path / "rows.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "hpcopt.cli", "solve", "f*.json",
                             "--backend", "dp", "--dask", "local:2", "--chunk", "2",
                             "--out", str(out), "--no-progress"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=default_signals)
    t0 = time.time()
    while not (out.exists() and out.read_text().count("\n") >= 2):
        assert proc.poll() is None and time.time() - t0 < 120, proc.communicate()
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    assert proc.returncode == 130, err
    assert err.strip().startswith("hpcopt: interrupted by SIGINT") and "Traceback" not in err
    rows = read(out)
    assert 2 <= len(rows) < 30 and all(r["status"] == "OPTIMAL" for r in rows)
