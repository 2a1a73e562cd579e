"""Slurm's accounting read back as a trace, on a testbed with slurmdbd and MariaDB
(``testbed.start(accounting=True)``), once per Slurm version (22.05 from the host, 24.11
from the Debian 13 chroot).

The module's testbed (Slurm's backfill scheduler, nothing held, a core-shared partition, a
``bb:100`` license and a two-leaf fat tree) runs jobs of every kind at once: completed,
failed, one killed at its one-minute limit, an array, a batch script with two ``srun`` steps,
a hetjob, three one-core jobs sharing a node, a job without ``-t`` (Slurm records 365 days),
a job holding ``bb:60``, a held job and a job waiting for its begin time cancelled before
they were ever eligible, and a running job cancelled.  Once every job has ended (the
one-minute job sets the pace: about 60-90 s; the testbeds of both versions start with the
first test, so their jobs run side by side), each test reads Slurm's history through
``hpcopt.load_trace`` (``sacct --parsable2`` output and the jobcomp log) and checks it job
by job against the controller's own records (``squeue --json --states=all``: submit, start,
end, time limit, nodes, CPUs).

Needs root, Slurm's daemons, slurmdbd and MariaDB (Debian: slurm-wlm munge slurmdbd
mariadb-server; 24.11 installs the last two in its chroot); skipped with the reason where
they are missing, except in CI (CI=true), where that is a failure; 24.11 skips with the
reason when its chroot cannot be built.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

import hpcopt
from hpcopt import testbed
from hpcopt.errors import TraceError
from hpcopt.traces.convert import convert
from hpcopt.traces.slurm import slurm_time

from .slurm_fixtures import VERSIONS, Cluster, flat

pytestmark = pytest.mark.slow

FORMAT = "JobID,Submit,Start,End,Elapsed,Timelimit,NNodes,NCPUS,State,Partition,User"
#: the docs' recipe: every state, so that jobs never eligible are selected too
STATES = "BF,CA,CD,DL,F,NF,OOM,PD,PR,R,RQ,RS,RV,S,TO"
HET = """#!/bin/sh
#SBATCH -N1 -t 2 -o /dev/null
#SBATCH hetjob
#SBATCH -N2
srun --het-group=0,1 sleep 1
"""
STEPS = """#!/bin/sh
#SBATCH -N2 -t 2 -o /dev/null
srun -N2 sleep 1
srun -N1 -n1 sleep 1
"""


def _why_not(version: str) -> str | None:
    if os.geteuid() != 0:
        return "the Slurm testbed runs its daemons as root"
    missing = testbed.missing_tools(version, accounting=True)
    if missing and version == "22.05":
        return ("Slurm accounting is not installed (missing " + ", ".join(missing)
                + "; apt-get install slurm-wlm munge slurmdbd mariadb-server)")
    if missing:
        return "the Slurm 24.11 testbed needs " + ", ".join(missing)
    return None


class Acct(Cluster):
    """The module's cluster, its jobs by kind (``.ids``) and when they were submitted."""

    ids: dict[str, int]
    since: str
    until: str
    t0: float
    started: float

    def sacct(self, *args: str, env: dict | None = None) -> str:
        p = subprocess.run(["sacct", "--allusers", "--parsable2", "--format", FORMAT, *args],
                           env={**self.env, **(env or {})}, capture_output=True, text=True,
                           timeout=30)
        assert p.returncode == 0, p.stderr
        return p.stdout

    def window(self) -> tuple[str, str]:
        return ("--starttime", self.since, "--endtime", self.until)

    def records(self) -> dict[str, dict]:
        """Slurm's own record of every job, keyed as sacct names them (``12``, ``12_3``,
        ``12+1``), flattened to 22.05's shapes."""
        out = {}
        for j in self.jobs().values():
            if j.get("array_job_id") and j.get("array_task_id") is not None:
                key = f"{j['array_job_id']}_{j['array_task_id']}"
            elif j.get("het_job_id"):
                key = f"{j['het_job_id']}+{j['het_job_offset']}"
            else:
                key = str(j["job_id"])
            out[key] = j
        return out


def _launch(version: str, factory) -> Acct | str:
    """Start the testbed of ``version`` and submit every job (no waiting); or why not."""
    why = _why_not(version)
    if why:
        if os.environ.get("CI") == "true":
            return f"CI must run the Slurm accounting tests: {why}"
        return why
    if version == "24.11":
        try:
            testbed.chroot_accounting()
        except testbed.TestbedError as exc:  # Debian 13 unreachable: a skip, printed by -rs
            return f"Slurm 24.11 skipped: {exc}"
    d = factory.mktemp(f"acct{version}")
    t0 = time.monotonic()
    testbed.start(d, 8, slurm=version, accounting=True, scheduler="backfill", hold=False,
                  shared=True, licenses="bb:100", switch_size=4)
    c = Acct(d, testbed.env(d), version)
    c.t0, c.started = t0, time.monotonic() - t0
    try:
        (d / "het.sh").write_text(HET)
        (d / "steps.sh").write_text(STEPS)
        c.since = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() - 2))
        ids = {}
        ids["timeout"] = c.submit("-t", "1", "-N", "1", sleep=300)
        ids["completed"] = c.submit("-t", "2", "-N", "2", sleep=2)
        ids["failed"] = int(c.run("sbatch", "--parsable", "-t", "2", "-o", "/dev/null",
                                  "--wrap", "sleep 1; exit 3").strip())
        ids["array"] = c.submit("-t", "2", "--array=1-3", sleep=2)
        ids["steps"] = int(c.run("sbatch", "--parsable", str(d / "steps.sh")).strip())
        ids["het"] = int(c.run("sbatch", "--parsable", str(d / "het.sh")).strip().split(";")[0])
        ids["shared"] = [c.submit("-p", "shared", "-n", "1", "-t", "2", "-w", "n8", sleep=3)
                         for _ in range(3)]
        ids["nolimit"] = c.submit("-N", "1", sleep=1)
        ids["license"] = c.submit("-t", "1", "-L", "bb:60", sleep=1)
        ids["held"] = c.submit("-H", "-t", "1")
        ids["begin"] = c.submit("--begin=now+3600", "-t", "1")
        ids["running"] = c.submit("-t", "5", sleep=300)
        c.ids = ids
        c.wait(lambda: c.state(ids["running"]) == "RUNNING", 20)
    except BaseException:
        testbed.stop(d)
        raise
    return c


def _finish(c: Acct) -> None:
    """Cancel the held, the waiting and the running job; wait until every job has ended."""
    ids = c.ids
    c.run("scancel", str(ids["held"]), str(ids["begin"]), str(ids["running"]))
    c.wait(lambda: all(j["job_state"] not in ("PENDING", "RUNNING", "COMPLETING",
                                               "CONFIGURING")
                       for j in c.jobs().values()), 150, step=1)
    time.sleep(2)  # slurmdbd gets the last records
    c.until = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() + 1))
    print(f"\nSlurm {c.version} with accounting: started in {c.started:.1f} s, jobs done "
          f"{time.monotonic() - c.t0:.0f} s after")


@pytest.fixture(scope="module")
def _beds():
    """The testbeds of the module by version (or why one cannot run): every selected
    version's starts with the first test, so that their one-minute jobs run side by side;
    each is stopped after its tests (here at the latest)."""
    beds: dict[str, Acct | str] = {}
    yield beds
    for c in beds.values():
        if isinstance(c, Acct):
            testbed.stop(c.dir)


@pytest.fixture(scope="module", params=VERSIONS, ids=[f"slurm{v}" for v in VERSIONS])
def acct(request, _beds, tmp_path_factory):
    wanted = {item.callspec.params["acct"] for item in request.session.items
              if hasattr(item, "callspec") and "acct" in item.callspec.params}
    for version in VERSIONS:
        if version in wanted and version not in _beds:
            _beds[version] = _launch(version, tmp_path_factory)
    c = _beds[request.param]
    if isinstance(c, str):
        if c.startswith("CI must"):
            pytest.fail(c)
        pytest.skip(c)
    try:
        _finish(c)
        yield c
    finally:
        testbed.stop(c.dir)
        _beds[request.param] = "stopped"


def _save(c: Acct, name: str, text: str) -> Path:
    p = c.dir / name
    p.write_text(text)
    return p


def _expect(rec: dict) -> dict:
    """What the trace should say of one of Slurm's records: submit, runtime (capped at the
    limit), walltime (the run time for no limit or Slurm's 365 days), nodes, cores."""
    run = rec["end_time"] - rec["start_time"]
    limit = rec["time_limit"]
    wall = run if limit in (None, 525600, 4294967294, 4294967295) else limit * 60
    return {"submit": rec["submit_time"], "runtime": min(run, wall), "walltime": wall,
            "nodes": rec["node_count"], "cores": rec["cpus"]}


def _check_jobs(trace, records: dict, *, cores: bool = False) -> None:
    for job in trace.jobs:
        want = _expect(records[str(job.id)])
        got = {"submit": job.submit, "runtime": job.runtime, "walltime": job.walltime,
               ("cores" if cores else "nodes"): job.nodes}
        assert got == {k: want[k] for k in got}, (job.id, records[str(job.id)])


def test_sacct_gives_every_job_as_slurm_recorded_it(acct):
    text = acct.sacct(*acct.window(), "--state", STATES)
    trace = hpcopt.load_trace(_save(acct, "sacct.txt", text))
    records = acct.records()
    ran = set(records) - {str(acct.ids["held"]), str(acct.ids["begin"])}
    assert {str(j.id) for j in trace.jobs} == ran
    _check_jobs(trace, records)
    a, h = acct.ids["array"], acct.ids["het"]
    assert {f"{a}_1", f"{a}_2", f"{a}_3", f"{h}+0", f"{h}+1"} <= {j.id for j in trace.jobs}
    # start and end as the controller has them (the reader's own time parser)
    lines = [dict(zip(FORMAT.split(","), ln.split("|"))) for ln in text.splitlines()[1:]]
    for rec in lines:
        if rec["JobID"] in ran:
            slurm = records[rec["JobID"]]
            assert slurm_time(rec["Start"], "sacct", "Start") == slurm["start_time"]
            assert slurm_time(rec["End"], "sacct", "End") == slurm["end_time"]
    states = {str(j["job_id"]): j["job_state"] for j in acct.jobs().values()}
    assert states[str(acct.ids["timeout"])] == "TIMEOUT"
    assert states[str(acct.ids["failed"])] == "FAILED"
    report = trace.report
    notes = "\n".join(report.notes)
    steps = sum("." in ln.split("|")[0] for ln in text.splitlines()[1:])
    assert steps >= 6 and f"{steps} job step line(s) folded into their jobs" in notes
    assert "2 cancelled before start (dropped as run time unknown)" in notes
    assert report.dropped["runtime_unknown"] == 2


def test_the_recipe_needs_state_for_jobs_never_eligible(acct):
    never = {str(acct.ids["held"]), str(acct.ids["begin"])}
    plain = acct.sacct("-X", *acct.window())
    assert never.isdisjoint(ln.split("|")[0] for ln in plain.splitlines())  # left out
    with_state = acct.sacct("-X", *acct.window(), "--state", STATES)
    assert never <= {ln.split("|")[0] for ln in with_state.splitlines()}
    by_id = acct.sacct("-X", "-j", ",".join(sorted(never)))
    assert never <= {ln.split("|")[0] for ln in by_id.splitlines()}


def test_a_job_without_a_limit_reads_as_unlimited(acct):
    text = acct.sacct(*acct.window(), "--state", STATES)
    line = next(ln for ln in text.splitlines() if ln.startswith(f"{acct.ids['nolimit']}|"))
    assert line.split("|")[5] == "365-00:00:00"
    trace = hpcopt.load_trace(_save(acct, "sacct.txt", text))
    job = next(j for j in trace.jobs if str(j.id) == str(acct.ids["nolimit"]))
    assert job.walltime == job.runtime
    assert any("Timelimit 365-00:00:00 (Slurm's 365 days for no limit)" in n
               for n in trace.report.notes)


def test_times_in_another_zone_and_time_formats(acct):
    # any zone: a wide window (with --state, sacct needs --endtime: without it, nothing)
    every = ("--state", STATES, "--starttime", "2000-01-01", "--endtime", "now")
    utc = hpcopt.load_trace(_save(acct, "utc.txt", acct.sacct(*every, env={"TZ": "UTC"})),
                            tz="UTC")
    ny_text = acct.sacct(*every, env={"TZ": "America/New_York"})
    ny = hpcopt.load_trace(_save(acct, "ny.txt", ny_text), tz="America/New_York")
    key = {str(j.id): (j.submit, j.runtime, j.walltime, j.nodes) for j in utc.jobs}
    assert len(key) >= 14
    assert {str(j.id): (j.submit, j.runtime, j.walltime, j.nodes) for j in ny.jobs} == key
    # read in the wrong zone, every submit is off by the zone's offset (UTC-5 in winter,
    # UTC-4 in summer)
    wrong = hpcopt.load_trace(_save(acct, "ny.txt", ny_text), tz="UTC")
    offsets = {key[str(j.id)][0] - j.submit for j in wrong.jobs}
    assert offsets in ({4 * 3600.0}, {5 * 3600.0})
    epoch = acct.sacct(*every, env={"SLURM_TIME_FORMAT": "%s"})
    read = hpcopt.load_trace(_save(acct, "epoch.txt", epoch), tz="Asia/Tokyo")
    assert {str(j.id): (j.submit, j.runtime) for j in read.jobs} == \
        {k: v[:2] for k, v in key.items()}
    for fmt in ("%Y-%m-%d %H:%M", "%F"):
        lossy = acct.sacct(*every, env={"SLURM_TIME_FORMAT": fmt})
        with pytest.raises(TraceError, match=r"lossy.txt:2: field 'Submit': .* has no .*"
                                             r"SLURM_TIME_FORMAT"):
            hpcopt.load_trace(_save(acct, "lossy.txt", lossy))


def test_jobcomp_gives_every_finished_job_as_slurm_recorded_it(acct):
    trace = hpcopt.load_trace(acct.dir / "log" / "jobcomp.txt")
    records = acct.records()
    ids = {str(j.id) for j in trace.jobs}
    a, h = acct.ids["array"], acct.ids["het"]
    assert {f"{a}_1", f"{a}_2", f"{a}_3", f"{h}+0", f"{h}+1"} <= ids
    _check_jobs(trace, records)
    sacct = hpcopt.load_trace(_save(acct, "sacct.txt",
                                    acct.sacct(*acct.window(), "--state", STATES)))
    assert ids == {str(j.id) for j in sacct.jobs}  # the same jobs as sacct
    assert "2 cancelled before start (dropped as run time unknown)" in trace.report.notes


def test_shared_jobs_in_cores(acct):
    text = acct.sacct(*acct.window(), "--state", STATES)
    shared = {str(i) for i in acct.ids["shared"]}
    records = acct.records()
    assert {records[i]["nodes"] for i in shared} == {"n8"}  # one node, one core each
    nodes = hpcopt.load_trace(_save(acct, "sacct.txt", text))
    cores = hpcopt.load_trace(_save(acct, "sacct.txt", text), sizes="cores", nodes=8,
                              cores_per_node=4)
    assert cores.system.nodes == 32
    _check_jobs(cores, records, cores=True)
    by_id = {str(j.id): j.nodes for j in cores.jobs}
    assert [by_id[i] for i in sorted(shared)] == [1, 1, 1]
    assert by_id[str(acct.ids["completed"])] == 8  # two whole nodes: 8 cores
    assert {str(j.id): j.nodes for j in nodes.jobs}[str(acct.ids["completed"])] == 2
    jobcomp = hpcopt.load_trace(acct.dir / "log" / "jobcomp.txt", sizes="cores")
    _check_jobs(jobcomp, records, cores=True)


def test_convert_the_history_to_swf(acct, tmp_path):
    trace = hpcopt.load_trace(_save(acct, "sacct.txt",
                                    acct.sacct(*acct.window(), "--state", STATES)))
    swf, ids = convert(trace, tmp_path / "history.swf", "swf")
    back = hpcopt.load_trace(swf)
    mapped = dict(line.split(",") for line in ids.read_text().splitlines()[1:])
    assert [mapped[str(j.id)] for j in back.jobs] == [str(j.id) for j in trace.jobs]
    assert [(j.submit, j.runtime, j.walltime, j.nodes) for j in back.jobs] == \
        [(j.submit, j.runtime, j.walltime, j.nodes) for j in trace.jobs]


def test_license_and_fat_tree(acct):
    topo = acct.run("scontrol", "show", "topology")
    assert "SwitchName=s1" in topo and "Nodes=n[1-4]" in topo and "Nodes=n[5-8]" in topo
    assert "SwitchName=s0" in topo and "Switches=s[1-2]" in topo
    lic = acct.run("scontrol", "show", "license")
    assert "LicenseName=bb" in lic and "Total=100" in lic
    job = json.loads(acct.run("squeue", "--json", "--states=all"))["jobs"]
    mine = flat(next(j for j in job if j["job_id"] == acct.ids["license"]))
    assert mine["job_state"] == "COMPLETED" and "bb" in str(mine.get("licenses"))
