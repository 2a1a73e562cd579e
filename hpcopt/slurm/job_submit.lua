-- job_submit.lua (hpcopt): hold every job submitted to @PARTITION@, so that
-- only `hpcopt slurm run` starts it (scontrol release).  Install: JobSubmitPlugins=lua in
-- slurm.conf, this file beside slurm.conf, then `scontrol reconfigure`.
local MANAGED = { --[[@MANAGED@]] }
-- uids that may release and change the partition's jobs: root, SlurmUser, the adapter's user
local ADMINS = { --[[@ADMINS@]] }
local MARK = "@MARK@"  -- admin comment of every job held here (users cannot set one)
-- the command that wakes `hpcopt slurm run --wake-port P` (nil: it polls)
local WAKE = --[[@WAKE@]] nil

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
   if name ~= nil and job_desc.reservation ~= nil and job_desc.reservation ~= "" then
      -- a job for an advance reservation runs on its nodes only: Slurm schedules it there
      slurm.log_user("hpcopt: job for reservation %s is scheduled by Slurm within it",
                     job_desc.reservation)
      return slurm.SUCCESS
   end
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
   shared = NO_VAL16, contiguous = NO_VAL16, requeue = NO_VAL16, pn_min_memory = NO_VAL64,
   "licenses", "burst_buffer", "array_inx", "req_nodes", "exc_nodes", "features",
   "cluster_features", "prefer", "gres", "tres_per_node", "tres_per_job", "tres_per_task",
   "tres_per_socket", "cpus_per_tres", "mem_per_tres", "qos", "reservation",
   "admin_comment", "partition",
}

local function unlimited(t) return t == nil or t == NO_VAL or t == INFINITE end

-- a begin time (StartTime=, BeginTime=): a held job's may be set to a later moment (it only
-- says from when the scheduler may start it); now or the past is refused, and so is any
-- change on a job no longer held (released, or back from a requeue): it would start it
-- without the scheduler
local function refused_begin(job_desc, job_rec)
   local t = job_desc.begin_time
   if t == nil or t == 0 or t == NO_VAL then return false end
   return job_rec.priority ~= 0 or t <= os.time()
end

local function refused_field(job_desc, job_rec)
   for k, v in pairs(GUARDED) do
      local field, unset = k, v
      if type(k) == "number" then field, unset = v, nil end
      local value = job_desc[field]
      if value ~= nil and value ~= unset then return field end
   end
   if refused_begin(job_desc, job_rec) then return "begin_time" end
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