"""The ``job_submit.lua`` that holds every job submitted to the partitions hpcopt schedules,
and keeps their users from starting or reshaping those jobs themselves.

Slurm runs ``slurm_job_submit`` for each submission when ``JobSubmitPlugins=lua`` is set and
the script lies beside ``slurm.conf``.  Setting the priority to 0 holds the job and the
admin comment ``hpcopt:held`` marks it as hpcopt's, so users submit as usual and only
``hpcopt slurm run`` (``scontrol release``) starts their jobs; jobs of other partitions are
left alone.  Slurm shows such a hold as JobHeldUser, which the job's owner could lift:
``slurm_job_modify`` therefore refuses every change by a user who is not one of the admins
(root always; the site adds SlurmUser and the adapter's user) that would start a managed
job, reshape it (nodes, tasks, CPUs, memory, time limit raised, licenses, array throttle,
nodes asked or excluded, features, GRES/TRES, QOS, reservation) or move it into or out of
the managed partition.  A lower time limit is allowed (a smaller request only helps);
renaming, comments, mail, dependencies and begin times stay the user's.

With a wake port the submit hook also wakes the adapter (``hpcopt.slurm.wake``) at each
managed submission, so that a job submitted to free nodes starts within a cycle's read, not
an interval: one short background process per submission (Lua has no sockets of its own).
"""

from __future__ import annotations

import pwd
from collections.abc import Iterable

from ..errors import OptionError
from .wake import submit_command

MARK = "hpcopt:held"

_TEMPLATE = """\
-- job_submit.lua (hpcopt): hold every job submitted to @PARTITION@, so that
-- only `hpcopt slurm run` starts it (scontrol release).  Install: JobSubmitPlugins=lua in
-- slurm.conf, this file beside slurm.conf, then `scontrol reconfigure`.
local MANAGED = { @MANAGED@ }
-- uids that may release and change the partition's jobs: root, SlurmUser, the adapter's user
local ADMINS = { @ADMINS@ }
local MARK = "@MARK@"  -- admin comment of every job held here (users cannot set one)
-- the command that wakes `hpcopt slurm run --wake-port P` (nil: it polls)
local WAKE = @WAKE@

local NO_VAL = slurm.NO_VAL or 4294967294  -- what a field left alone reads as
local NO_VAL16 = slurm.NO_VAL16 or 65534
local NO_VAL64 = slurm.NO_VAL64 or 18446744073709551614
local INFINITE = slurm.INFINITE or 4294967295
local DENIED = slurm.ESLURM_ACCESS_DENIED or 2002  -- "Access/permission denied"

local function managed_name(parts)  -- the first managed partition a comma list names
   if parts == nil then return nil end
   for name in string.gmatch(parts, "[^,%s]+") do
      if MANAGED[name] then return name end
   end
   return nil
end

local function managed(job_desc, part_list)  -- the managed partition of a submission, or nil
   if job_desc.partition ~= nil then return managed_name(job_desc.partition) end
   for _, p in pairs(part_list) do  -- no --partition: the cluster's default partition
      if p.flag_default == 1 then return managed_name(p.name) end
   end
   return nil
end

function slurm_job_submit(job_desc, part_list, submit_uid)
   local name = managed(job_desc, part_list)
   if name ~= nil then
      if job_desc.partition ~= nil and job_desc.partition ~= name then
         slurm.log_user("hpcopt: partitions %s narrowed to %s, whose jobs the scheduler starts",
                        job_desc.partition, name)
         job_desc.partition = name
      end
      job_desc.priority = 0
      job_desc.admin_comment = MARK
      if WAKE ~= nil then os.execute(WAKE) end
   end
   return slurm.SUCCESS
end

-- what a user may not change on a managed job: field = its value when left alone
-- (nil for text); a time limit may be lowered (below)
local GUARDED = {
   priority = NO_VAL, nice = NO_VAL, min_nodes = NO_VAL, max_nodes = NO_VAL,
   num_tasks = NO_VAL, min_cpus = NO_VAL, max_cpus = NO_VAL, time_min = NO_VAL,
   site_factor = NO_VAL, req_switch = NO_VAL, wait4switch = NO_VAL,
   cpus_per_task = NO_VAL16, ntasks_per_node = NO_VAL16, pn_min_cpus = NO_VAL16,
   shared = NO_VAL16, contiguous = NO_VAL16, pn_min_memory = NO_VAL64,
   "licenses", "burst_buffer", "array_inx", "req_nodes", "exc_nodes", "features",
   "cluster_features", "prefer", "gres", "tres_per_node", "tres_per_job", "tres_per_task",
   "tres_per_socket", "cpus_per_tres", "mem_per_tres", "qos", "reservation",
   "admin_comment", "partition",
}

local function unlimited(t) return t == nil or t == NO_VAL or t == INFINITE end

local function refused_field(job_desc, job_rec)
   for k, v in pairs(GUARDED) do
      local field, unset = k, v
      if type(k) == "number" then field, unset = v, nil end
      local value = job_desc[field]
      if value ~= nil and value ~= unset then return field end
   end
   local t = job_desc.time_limit
   if t ~= nil and t ~= NO_VAL then
      local now = job_rec.time_limit
      if t == INFINITE or not (unlimited(now) or t < now) then return "time_limit" end
   end
   return nil
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
   if ADMINS[modify_uid] then return slurm.SUCCESS end
   local name = managed_name(job_rec.partition) or managed_name(job_desc.partition)
   if name == nil then return slurm.SUCCESS end
   local field = refused_field(job_desc, job_rec)
   if field == nil then return slurm.SUCCESS end
   slurm.log_user("hpcopt: jobs of partition %s are started by the scheduler; changing %s " ..
                  "of job %s is reserved to the administrator", name, field,
                  tostring(job_rec.job_id))
   slurm.log_info("hpcopt: refused uid %s changing %s of job %s", tostring(modify_uid), field,
                  tostring(job_rec.job_id))
   return DENIED
end
"""


def job_submit_lua(partition: str | Iterable[str] = "batch", admins: Iterable[int] = (0,),
                   wake_port: int | None = None) -> str:
    """The script for ``partition`` (``hpcopt slurm job-submit-lua``; a list of names: each
    of them is managed, and a submission naming several is narrowed to the first managed
    one): only the uids in ``admins`` (root always among them) may release or change the
    partitions' jobs; with ``wake_port`` each managed submission wakes the adapter listening
    there."""
    names = partition_names(partition)
    uids = {0}
    for uid in admins:
        if isinstance(uid, bool) or not isinstance(uid, int) or not 0 <= uid < 2**32 - 2:
            raise OptionError(f"--admin: a user id expected, got {uid!r}")
        uids.add(uid)
    table = ", ".join(f"[{uid}] = true" for uid in sorted(uids))
    wake = "nil" if wake_port is None else f'"{submit_command(wake_port)}"'
    said = (f'partition "{names[0]}"' if len(names) == 1 else
            "partitions " + ", ".join(f'"{n}"' for n in names))
    return (_TEMPLATE.replace("@PARTITION@", said)
            .replace("@MANAGED@", ", ".join(f'["{n}"] = true' for n in names))
            .replace("@ADMINS@", table).replace("@MARK@", MARK).replace("@WAKE@", wake))


def partition_names(partition: str | Iterable[str]) -> tuple[str, ...]:
    """Managed partition names, each checked (``--partition``: one name, or several given
    again or as a comma list), in the order given, without repeats."""
    given = [partition] if isinstance(partition, str) else list(partition)
    names: list[str] = []
    for text in given:
        for name in str(text).split(",") if text else [""]:
            if not name or any(c.isspace() or not c.isprintable() or c in "\"'\\[]"
                               for c in name):
                raise OptionError(f"--partition: a Slurm partition name expected (no space, "
                                  f"quote, backslash, bracket or newline), got {text!r}")
            if name not in names:
                names.append(name)
    if not names:
        raise OptionError("--partition: at least one partition name expected")
    return tuple(names)


def admin_uids(users: Iterable[str]) -> tuple[int, ...]:
    """The uids of ``--admin`` users, each a name or a uid (names looked up here, now)."""
    uids = []
    for user in users:
        if user.isdigit():
            uids.append(int(user))
            continue
        try:
            uids.append(pwd.getpwnam(user).pw_uid)
        except KeyError:
            raise OptionError(f"--admin: no user {user!r} on this machine "
                              "(give a user name or a uid)") from None
    return tuple(uids)
