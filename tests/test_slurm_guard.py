"""The submit script's guard: a user cannot start, reshape or move a job of the managed
partition, tried as an adversary on the real testbed by an unprivileged user made here.

Fast tier: the generated script compiles (``luac -p``), names its partition and admins, and
its ``slurm_job_modify`` decides as documented when run by ``lua`` against stand-in tables.
Slow tier (``-m slow``): a 4-node testbed with a second partition ``debug``; a user created
with useradd (removed at the end when made here) tries each bypass; each attempt must fail
and the job must be unchanged afterwards.  About 15 s of cluster time.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from hpcopt.cli import main
from hpcopt.errors import OptionError
from hpcopt.slurm import lua as lua_module
from hpcopt.slurm.lua import MARK, admin_uids, job_submit_lua

from .slurm_fixtures import VERSIONS, flat, started_testbed, unix_user

USER = "hpcopt-test-user"


# --- fast tier: the script itself -------------------------------------------------------

def test_script_compiles_and_names_partition_and_admins(tmp_path):
    text = job_submit_lua("gpu", (1001, 64030))
    assert 'local MANAGED = { ["gpu"] = true }' in text
    assert "local ADMINS = { [0] = true, [1001] = true, [64030] = true }" in text
    assert f'local MARK = "{MARK}"' in text and MARK == "hpcopt:held"
    assert "local ADMINS = { [0] = true }" in job_submit_lua("batch")  # root always
    luac = _lua("luac")
    f = tmp_path / "job_submit.lua"
    f.write_text(text)
    for script in (f, Path(lua_module.__file__).with_name("job_submit.lua")):  # as shipped too
        p = subprocess.run([luac, "-p", str(script)], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr


def _lua(tool: str) -> str:
    """``lua`` or ``luac``: Slurm's own Lua (5.1, what its lua plugins link) first; in CI it
    must be there (.ci/run installs lua5.1)."""
    for version in ("5.1", "5.3", "5.4", ""):
        found = shutil.which(tool + version)
        if found:
            return found
    if os.environ.get("CI") == "true":
        pytest.fail(f"{tool} is not installed (apt-get install lua5.1)")
    pytest.skip(f"{tool} is not installed (apt-get install lua5.1)")


@pytest.mark.parametrize("bad", ["ba tch", 'a"b', "a'b", "a\\b", "a,,b", "a[1]", "a\nb", "a\tb",
                                 ""])
def test_partition_names_are_checked(bad):
    with pytest.raises(OptionError, match="--partition: a Slurm partition name"):
        job_submit_lua(bad)


@pytest.mark.parametrize("bad", [-1, True, "root", 2**32])
def test_admins_are_uids(bad):
    with pytest.raises(OptionError, match="--admin"):
        job_submit_lua("batch", (bad,))


def test_admin_names_resolve_now():
    assert admin_uids(["root", "1001"]) == (0, 1001)
    with pytest.raises(OptionError, match="no user 'no-such-user-hpcopt'"):
        admin_uids(["no-such-user-hpcopt"])


def test_cli_refuses_a_bad_partition_in_one_line(capsys):
    assert main(["slurm", "job-submit-lua", "--partition", "ba tch"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--partition" in err and "Traceback" not in err


def test_cli_admins(capsys):
    assert main(["slurm", "job-submit-lua", "--admin", "root", "--admin", "4242"]) == 0
    assert "local ADMINS = { [0] = true, [4242] = true }" in capsys.readouterr().out


# slurm_job_modify / slurm_job_submit run by plain lua against stand-in tables: each case is
# (modify_uid, job_rec fields, job_desc fields changed) -> allowed?
_HARNESS = r"""
local NO_VAL, NO_VAL16, NO_VAL64 = 4294967294, 65534, 18446744073709551614
slurm = { SUCCESS = 0, ERROR = -1, NO_VAL = NO_VAL, NO_VAL16 = NO_VAL16, NO_VAL64 = NO_VAL64,
          INFINITE = 4294967295, log_user = function(...) end, log_info = function(...) end }
dofile(arg[1])
local NOW = os.time()
local function desc(changes)  -- what scontrol update sends: every field left alone
   local d = { priority = NO_VAL, nice = NO_VAL, min_nodes = NO_VAL, max_nodes = NO_VAL,
               num_tasks = NO_VAL, min_cpus = NO_VAL, max_cpus = NO_VAL, time_limit = NO_VAL,
               time_min = NO_VAL, site_factor = NO_VAL, req_switch = NO_VAL,
               wait4switch = NO_VAL, cpus_per_task = NO_VAL16, ntasks_per_node = NO_VAL16,
               pn_min_cpus = NO_VAL16, shared = NO_VAL16, contiguous = NO_VAL16,
               pn_min_memory = NO_VAL64, requeue = NO_VAL16, begin_time = 0 }
   for k, v in pairs(changes) do d[k] = v end
   return d
end
local cases = {
   {1001, {partition = "batch", time_limit = 5}, {priority = 4294967295}},       -- release
   {1001, {partition = "batch", time_limit = 5}, {priority = 0}},                -- uhold
   {1001, {partition = "batch", time_limit = 5}, {nice = 2147483658}},
   {1001, {partition = "batch", time_limit = 5}, {time_limit = 30}},
   {1001, {partition = "batch", time_limit = 5}, {time_limit = 5}},
   {1001, {partition = "batch", time_limit = 5}, {time_limit = 4294967295}},
   {1001, {partition = "batch", time_limit = 5}, {time_limit = 2}},               -- lower: ok
   {1001, {partition = "batch", time_limit = NO_VAL}, {time_limit = 30}},        -- was none: ok
   {1001, {partition = "batch", time_limit = 5}, {min_nodes = 4, max_nodes = 4}},
   {1001, {partition = "batch", time_limit = 5}, {num_tasks = 2}},
   {1001, {partition = "batch", time_limit = 5}, {pn_min_memory = 10}},
   {1001, {partition = "batch", time_limit = 5}, {array_inx = "%4"}},
   {1001, {partition = "batch", time_limit = 5}, {req_nodes = "n1"}},
   {1001, {partition = "batch", time_limit = 5}, {licenses = "bb:10"}},
   {1001, {partition = "batch", time_limit = 5}, {tres_per_node = "gres:gpu:1"}},
   {1001, {partition = "batch", time_limit = 5}, {partition = "debug"}},
   {1001, {partition = "batch", time_limit = 5}, {name = "x", comment = "y"}},   -- ok
   {1001, {partition = "batch", time_limit = 5}, {dependency = "afterok:1"}},       -- ok
   {1001, {partition = "batch", time_limit = 5, priority = 0}, {begin_time = NOW + 3600}},
   {1001, {partition = "batch", time_limit = 5, priority = 0}, {begin_time = NOW}},
   {1001, {partition = "batch", time_limit = 5, priority = 0}, {begin_time = 1}},
   {1001, {partition = "batch", time_limit = 5, priority = 900}, {begin_time = NOW + 3600}},
   {1001, {partition = "batch", time_limit = 5, priority = 900}, {begin_time = NOW}},
   {1001, {partition = "debug", time_limit = 5, priority = 900}, {begin_time = NOW}},  -- ok
   {0, {partition = "batch", time_limit = 5, priority = 900}, {begin_time = NOW}},     -- ok
   {1001, {partition = "batch,debug", time_limit = 5}, {priority = 4294967295}},
   {1001, {partition = "debug", time_limit = 5}, {partition = "batch"}},         -- move in
   {1001, {partition = "debug", time_limit = 5}, {partition = "debug,batch"}},
   {1001, {partition = "debug", time_limit = 5}, {priority = 4294967295}},       -- not ours: ok
   {1001, {partition = "debug", time_limit = 5}, {partition = "other"}},         -- ok
   {0, {partition = "batch", time_limit = 5}, {priority = 4294967295}},          -- root: ok
   {64030, {partition = "batch", time_limit = 5}, {partition = "debug"}},        -- admin: ok
   {1002, {partition = "batch", time_limit = 5}, {priority = 4294967295}},
   {1001, {partition = "batch", time_limit = 5}, {requeue = 1}},                  -- requeueable
}
local out = {}
for _, c in ipairs(cases) do
   local rec = c[2]; rec.job_id = 7
   out[#out + 1] = (slurm_job_modify(desc(c[3]), rec, {}, c[1]) == 0) and "ok" or "no"
end
-- submissions: (partition asked, default partition, reservation asked) -> partition,
-- priority, admin_comment (a job for a reservation is Slurm's to schedule within it)
local subs = { {"batch", "batch"}, {nil, "batch"}, {nil, "debug"}, {"debug", "batch"},
               {"batch,debug", "debug"}, {"debug,batch", "debug"}, {"debugbatch", "batch"},
               {"batch", "batch", "r1"}, {"batch", "batch", ""}, {nil, "batch", "r1"} }
for _, s in ipairs(subs) do
   local d = desc({}); d.partition = s[1]; d.admin_comment = "mine"; d.reservation = s[3]
   slurm_job_submit(d, { {name = "debug", flag_default = s[2] == "debug" and 1 or 0},
                         {name = "batch", flag_default = s[2] == "batch" and 1 or 0} }, 1001)
   out[#out + 1] = tostring(d.partition) .. "/" .. tostring(d.priority) .. "/" ..
                   tostring(d.admin_comment)
end
print(table.concat(out, " "))
"""

_EXPECTED = ("no no no no no no ok ok no no no no no no no no ok ok ok no no no no ok ok "
             "no no no ok ok ok ok no no "
             "batch/0/hpcopt:held nil/0/hpcopt:held nil/4294967294/mine debug/4294967294/mine "
             "batch/0/hpcopt:held batch/0/hpcopt:held debugbatch/4294967294/mine "
             "batch/4294967294/mine batch/0/hpcopt:held nil/4294967294/mine")


def test_modify_and_submit_decide_as_documented(tmp_path):
    lua = _lua("lua")
    script = tmp_path / "job_submit.lua"
    script.write_text(job_submit_lua("batch", (64030,)))
    harness = tmp_path / "harness.lua"
    harness.write_text(_HARNESS)
    p = subprocess.run([lua, str(harness), str(script)], capture_output=True, text=True,
                       timeout=30)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == _EXPECTED.split()


# --- slow tier: a real user against the real testbed -------------------------------------

class Guarded:
    """The testbed, and its tools run as root or as the test user."""

    def __init__(self, d: Path, env: dict, version: str) -> None:
        self.dir, self.env, self.version = d, env, version

    def root(self, *cmd: str, check: bool = True) -> subprocess.CompletedProcess:
        p = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=30)
        if check and p.returncode:
            raise AssertionError(f"{cmd}: {p.stderr}")
        return p

    def user(self, *cmd: str) -> subprocess.CompletedProcess:
        env = [f"{k}={self.env[k]}" for k in ("SLURM_CONF", "PATH")]
        return subprocess.run(["runuser", "-u", USER, "--", "env", *env, *cmd],
                              capture_output=True, text=True, timeout=30, cwd="/tmp")

    def submit(self, *args: str, sleep: int = 100) -> int:
        p = self.user("sbatch", "--parsable", "-D", "/tmp", "-o", "/dev/null", *args,
                      "--wrap", f"sleep {sleep}")
        assert p.returncode == 0, p.stderr
        return int(p.stdout.strip().split(";")[0])

    def job(self, jid: int) -> dict:
        """The job's squeue record in 22.05's shapes, whatever the version."""
        jobs = json.loads(self.root("squeue", "--json").stdout)["jobs"]
        return flat(next(j for j in jobs if j["job_id"] == jid))

    def wait(self, cond, timeout: float) -> None:
        end = time.monotonic() + timeout
        while not cond():
            assert time.monotonic() < end, f"not reached in {timeout} s"
            time.sleep(0.3)


@pytest.fixture(scope="module", params=VERSIONS, ids=[f"slurm{v}" for v in VERSIONS])
def guarded(request):
    """A 4-node testbed (partitions batch, managed, and debug) and the test user."""
    if shutil.which("runuser") is None or shutil.which("useradd") is None:
        pytest.skip("runuser and useradd are needed to act as an unprivileged user")
    with unix_user(USER), started_testbed(request.param, "guard", 4,
                                          cls=Guarded) as g:
        try:
            yield g
        finally:
            subprocess.run(["scancel", "--quiet", "--user", USER], env=g.env,
                           capture_output=True, timeout=10)


def _held(j: dict) -> bool:
    return (j["job_state"] == "PENDING" and j["priority"] == 0
            and j["state_reason"] == "JobHeldUser" and j["admin_comment"] == MARK)


@pytest.mark.slow
def test_user_cannot_start_or_reshape_a_held_job(guarded):
    g = guarded
    jid = g.submit("-N", "1", "-t", "5")
    before = g.job(jid)
    assert _held(before) and before["partition"] == "batch"
    for attempt in (["release", str(jid)], ["uhold", str(jid)],
                    ["update", f"jobid={jid}", "priority=100"],
                    ["update", f"jobid={jid}", "nice=-100"],
                    ["update", f"jobid={jid}", "nice=10"],
                    ["update", f"jobid={jid}", "timelimit=30"],
                    ["update", f"jobid={jid}", "timelimit=UNLIMITED"],
                    ["update", f"jobid={jid}", "numnodes=4-4"],
                    ["update", f"jobid={jid}", "numtasks=8"],
                    ["update", f"jobid={jid}", "reqnodelist=n1"],
                    ["update", f"jobid={jid}", "partition=debug"],
                    ["update", f"jobid={jid}", "timelimit=30", "name=sneaky"]):
        p = g.user("scontrol", *attempt)
        assert p.returncode != 0, f"{attempt} was accepted"
    after = g.job(jid)
    assert _held(after) and after["partition"] == "batch"
    for k in ("time_limit", "node_count", "name", "nice", "priority"):
        assert after[k] == before[k], k
    # what stays the user's: a name, a comment, a lower time limit
    for ok in (["name=renamed"], ["comment=mine"], ["timelimit=2"]):
        p = g.user("scontrol", "update", f"jobid={jid}", *ok)
        assert p.returncode == 0, f"{ok}: {p.stderr}"
    after = g.job(jid)
    assert _held(after) and after["name"] == "renamed" and after["time_limit"] == 2
    g.root("scancel", str(jid))


@pytest.mark.slow
def test_user_cannot_move_a_job_into_the_partition(guarded):
    g = guarded
    jid = g.submit("-N", "1", "-p", "debug", "--begin=now+600")
    before = g.job(jid)
    assert before["partition"] == "debug" and before["priority"] != 0
    assert before["admin_comment"] in ("", None)  # other partitions are left alone
    p = g.user("scontrol", "update", f"jobid={jid}", "partition=batch", "starttime=now")
    assert p.returncode != 0
    after = g.job(jid)
    assert after["partition"] == "debug" and after["state_reason"] == "BeginTime"
    assert after["eligible_time"] == before["eligible_time"]
    # a job of another partition stays its owner's to change
    assert g.user("scontrol", "update", f"jobid={jid}", "timelimit=10").returncode == 0
    g.root("scancel", str(jid))


@pytest.mark.slow
def test_array_throttle_change_is_refused_and_the_array_stays_held(guarded):
    g = guarded
    jid = g.submit("-a", "1-4%2")
    assert _held(g.job(jid))
    p = g.user("scontrol", "update", f"jobid={jid}", "arraytaskthrottle=4")
    assert p.returncode != 0
    after = g.job(jid)
    # Slurm (22.05 and 24.11 alike) sets the throttle before it asks the submit script, so
    # the new value may stick although the command failed; the tasks stay held regardless
    assert _held(after) and after["array_task_string"].startswith("1-4")
    g.root("scancel", str(jid))


@pytest.mark.slow
def test_multi_partition_submission_is_held_in_the_managed_partition(guarded):
    g = guarded
    p = g.user("sbatch", "--parsable", "-D", "/tmp", "-o", "/dev/null", "-p", "batch,debug",
               "--wrap", "sleep 100")
    assert p.returncode == 0, p.stderr
    assert "narrowed to batch" in p.stderr
    jid = int(p.stdout.strip().split(";")[0])
    j = g.job(jid)
    assert _held(j) and j["partition"] == "batch"
    g.root("scancel", str(jid))


@pytest.mark.slow
def test_admin_hold_stays_and_root_releases(guarded):
    g = guarded
    jid = g.submit("-N", "1", "-t", "1", sleep=1)
    g.root("scontrol", "hold", str(jid))
    assert g.job(jid)["state_reason"] == "JobHeldAdmin"
    assert g.user("scontrol", "release", str(jid)).returncode != 0
    assert g.job(jid)["state_reason"] == "JobHeldAdmin"
    g.root("scontrol", "release", str(jid))  # the adapter's user (root here)
    g.wait(lambda: g.job(jid)["job_state"] != "PENDING", 15)
    assert g.job(jid)["admin_comment"] == MARK  # the mark stays after the release
