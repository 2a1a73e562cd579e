"""Slurm's JSON as the live clusters print it: 22.05.8 (Debian 12, OpenAPI v0.0.38) and
24.11.5 (Debian 13, data_parser v0.0.42), and the testbed of either version.

The documents in tests/data/slurm/VERSION/ were captured from the testbed (4 nodes, both
partitions): job 1 held in ``batch``, job 2 running on n1-n2 in ``debug``, job 3 a user's
(``useradd``) released and running on n3, node n4 drained; ``squeue --json``,
``sinfo --json``, ``scontrol show job --json`` and ``scontrol show node --json`` (24.11 only:
22.05's scontrol has no --json), and the jobcomp log after ``scancel``.  Every shape is read
into the same records for both versions; a shape the reader does not know is a one-line
error naming the Slurm version and the field.

The slow tests start small testbeds of each version: a user made with ``useradd`` submits
through the testbed's client commands; ``stop`` ends every process of the testbed, busy
slurmd and jobs of the other partition included, and leaves nothing mounted.
"""

from __future__ import annotations

import copy
import json
import os
import pwd
import subprocess
import time
from pathlib import Path

import pytest

from hpcopt import load_trace, testbed
from hpcopt.slurm.state import SlurmCommandError, parse_sinfo, parse_squeue

from .slurm_fixtures import VERSIONS, _chroot, _requirements

DATA = Path(__file__).parent / "data" / "slurm"
LIVE = {"22.05": "22.05.8", "24.11": "24.11.5"}


def doc(version: str, name: str) -> dict:
    return json.loads((DATA / version / f"{name}.json").read_text())


def jobs_seen(jobs) -> dict:
    return {j.id: (j.state, j.reason if j.state == "PENDING" else "", j.priority == 0,
                   j.partition, j.nodes, j.node_names) for j in jobs}


EXPECTED_JOBS = {1: ("PENDING", "JobHeldUser", True, "batch", 1, ()),
                 2: ("RUNNING", "", False, "debug", 2, ("n1", "n2")),
                 3: ("RUNNING", "", False, "batch", 1, ("n3",))}


@pytest.mark.parametrize("version", sorted(LIVE))
def test_squeue_live_documents(version):
    jobs = parse_squeue(doc(version, "squeue"))
    assert jobs_seen(jobs) == EXPECTED_JOBS
    by_id = {j.id: j for j in jobs}
    assert by_id[1].limit == 300 and by_id[3].limit is None  # -t 5; no limit
    assert all(j.submit > 1.7e9 for j in jobs) and by_id[2].start >= by_id[2].submit
    assert by_id[1].start == 0 or by_id[1].start >= by_id[1].submit  # pending: expected start


@pytest.mark.parametrize("version", sorted(LIVE))
def test_sinfo_live_documents(version):
    nodes = {n.name: n for n in parse_sinfo(doc(version, "sinfo"))}
    assert sorted(nodes) == ["n1", "n2", "n3", "n4"]
    assert all(n.partitions == ("batch", "debug") for n in nodes.values())
    assert [nodes[f"n{i}"].state for i in (1, 2, 3)] == ["allocated"] * 3
    assert nodes["n4"].state == "idle" and "DRAIN" in nodes["n4"].flags
    assert not nodes["n4"].usable and all(nodes[f"n{i}"].usable for i in (1, 2, 3))


def test_scontrol_live_documents_read_as_squeue_and_sinfo():
    """24.11's scontrol --json: jobs as squeue's, nodes one record each (with partitions)."""
    assert jobs_seen(parse_squeue(doc("24.11", "scontrol-job"))) == EXPECTED_JOBS
    a = parse_sinfo(doc("24.11", "scontrol-node"))
    b = parse_sinfo(doc("24.11", "sinfo"))
    assert sorted(a, key=lambda n: n.name) == sorted(b, key=lambda n: n.name)


def test_24_11_sinfo_is_grouped_by_partition_and_state():
    """The live 24.11 shape: no ``nodes`` list, a ``sinfo`` list of groups (the reason the
    22.05 reader saw no nodes at all)."""
    d = doc("24.11", "sinfo")
    assert "nodes" not in d and len(d["sinfo"]) == 4
    assert {(g["partition"]["name"], tuple(g["node"]["state"])) for g in d["sinfo"]} == \
        {(p, s) for p in ("batch", "debug") for s in (("ALLOCATED",), ("IDLE", "DRAIN"))}


def _one_line_error(d: dict, parse) -> str:
    with pytest.raises(SlurmCommandError) as e:
        parse(d)
    text = str(e.value)
    assert "\n" not in text
    return text


@pytest.mark.parametrize("version", sorted(LIVE))
def test_unknown_shapes_fail_loudly_with_the_version(version):
    release = LIVE[version]
    d = doc(version, "sinfo")
    key = "sinfo" if version == "24.11" else "nodes"
    moved = {("node_groups" if k == key else k): v for k, v in d.items()}  # a renamed list
    text = _one_line_error(moved, parse_sinfo)
    assert f"Slurm {release}" in text and "unreadable nodes" in text
    lost = copy.deepcopy(d)  # nodes there, but the partitions moved: never "no nodes"
    if version == "24.11":
        for g in lost["sinfo"]:
            g["partition_info"] = g.pop("partition")
        assert "partition.name" in _one_line_error(lost, parse_sinfo)
    else:
        for n in lost["nodes"]:
            n["partition_names"] = n.pop("partitions")
        text = _one_line_error(lost, parse_sinfo)
        assert "partitions" in text and f"Slurm {release}" in text
    q = doc(version, "squeue")
    text = _one_line_error({k: v for k, v in q.items() if k != "jobs"}, parse_squeue)
    assert f"Slurm {release}" in text and "unreadable jobs" in text
    q["jobs"][0]["job_state"] = {"current": ["PENDING"]}
    text = _one_line_error(q, parse_squeue)
    assert f"Slurm {release}" in text and "job_state" in text


def test_24_11_group_without_its_node_names_fails():
    d = doc("24.11", "sinfo")
    d["sinfo"][0]["nodes"] = {"total": 3, "hostnames": []}  # names moved elsewhere
    text = _one_line_error(d, parse_sinfo)
    assert "nodes.nodes" in text and "Slurm 24.11.5, data_parser/v0.0.42" in text


@pytest.mark.parametrize("version", sorted(LIVE))
def test_jobcomp_live_logs(version):
    trace = load_trace(DATA / version / "jobcomp.txt")
    assert trace.report.fmt == "jobcomp"
    assert sorted(j.id for j in trace.jobs) == [2, 3]  # job 1 never started
    assert {j.id: j.nodes for j in trace.jobs} == {2: 2, 3: 1}


# ------------------------------------------------------------------ live testbeds


def _user() -> pwd.struct_passwd:
    """An ordinary user (made with useradd once)."""
    try:
        return pwd.getpwnam("hpcoptu")
    except KeyError:
        subprocess.run(["useradd", "-M", "-s", "/bin/sh", "hpcoptu"], check=True)
        return pwd.getpwnam("hpcoptu")


def _as_user(u: pwd.struct_passwd, env: dict, *cmd: str) -> subprocess.CompletedProcess:
    def drop():
        os.setgroups([])
        os.setgid(u.pw_gid)
        os.setuid(u.pw_uid)

    return subprocess.run(cmd, env={**env, "HOME": "/tmp"}, preexec_fn=drop, cwd="/tmp",
                          capture_output=True, text=True, timeout=30)


@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS)
def test_testbed_user_submits_and_stop_leaves_nothing(version, tmp_path):
    why = _requirements(version) or (_chroot() if version == "24.11" else None)
    if why:
        if os.environ.get("CI") == "true" and version == "22.05":
            pytest.fail(f"CI must run the Slurm tests: {why}")
        pytest.skip(why)
    d = tmp_path / "tb"
    testbed.start(d, 2, slurm=version)
    env = testbed.env(d)
    try:
        assert oct((d / "munge").stat().st_mode & 0o777) == "0o755"
        assert oct((d / "munge" / "munge.key").stat().st_mode & 0o777) == "0o400"
        u = _user()
        p = _as_user(u, env, "sbatch", "--parsable", "-o", "/dev/null", "--wrap", "sleep 1")
        assert p.returncode == 0, p.stderr
        held = int(p.stdout.strip().split(";")[0])
        # the other partition: not held, runs at once (exclusive: both nodes)
        other = subprocess.run(["sbatch", "--parsable", "-p", "debug", "-N", "2", "-o",
                                "/dev/null", "--wrap", "sleep 300"], env=env,
                               capture_output=True, text=True, check=True).stdout.strip()
        out = subprocess.run(["squeue", "--json"], env=env, capture_output=True, text=True,
                             check=True).stdout
        jobs = {j.id: j for j in parse_squeue(json.loads(out))}
        assert jobs[held].held and jobs[held].partition == "batch"
        end = time.monotonic() + 20
        while not testbed.stepds(d):
            assert time.monotonic() < end, "the debug job did not start"
            time.sleep(0.3)
        assert _as_user(u, env, "squeue", "-h", "-j", str(held)).returncode == 0
        stepds = testbed.daemons._descendants(testbed.stepds(d))
        daemons = testbed.pids(d)
    except BaseException:
        testbed.stop(d)
        raise
    t0 = time.monotonic()
    testbed.stop(d)
    took = time.monotonic() - t0
    for pid in [*daemons.values(), *stepds]:  # ended (or a zombie of init's), none alive
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        assert state == "Z", (pid, state)
    assert not testbed.stepds(d) and not testbed.pids(d)
    assert str(d) not in Path("/proc/mounts").read_text()
    assert took < 20, f"stop took {took:.1f} s"
    assert other
