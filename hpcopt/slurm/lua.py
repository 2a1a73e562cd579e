"""The ``job_submit.lua`` that holds every job submitted to the partition hpcopt schedules.

Slurm runs ``slurm_job_submit`` for each submission when ``JobSubmitPlugins=lua`` is set and
the script lies beside ``slurm.conf``.  Setting the priority to 0 holds the job, so users
submit as usual and only ``hpcopt slurm run`` (``scontrol release``) starts their jobs; jobs of
other partitions are left alone.
"""

from __future__ import annotations

from ..errors import OptionError

_TEMPLATE = """\
-- job_submit.lua (hpcopt): hold every job submitted to partition "{partition}", so that
-- only `hpcopt slurm run` starts it (scontrol release).  Install: JobSubmitPlugins=lua in
-- slurm.conf, this file beside slurm.conf, then `scontrol reconfigure`.
local MANAGED = "{partition}"

local function managed(job_desc, part_list)
   local part = job_desc.partition
   if part == nil then  -- no --partition: the cluster's default partition
      for _, p in pairs(part_list) do
         if p.flag_default == 1 then part = p.name end
      end
   end
   if part == nil then return false end
   for name in string.gmatch(part, "[^,]+") do
      if name == MANAGED then return true end
   end
   return false
end

function slurm_job_submit(job_desc, part_list, submit_uid)
   if managed(job_desc, part_list) then
      job_desc.priority = 0
   end
   return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
   return slurm.SUCCESS
end
"""


def job_submit_lua(partition: str = "batch") -> str:
    """The script for ``partition`` (``hpcopt slurm job-submit-lua``)."""
    if not partition or any(c in partition for c in '"\\\n,'):
        raise OptionError(f"--partition: a Slurm partition name expected (no comma, quote, "
                          f"backslash or newline), got {partition!r}")
    return _TEMPLATE.format(partition=partition)
