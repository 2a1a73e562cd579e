"""hpcopt as an external scheduler of a real Slurm cluster.

- ``hpcopt.slurm.state``: all reading of Slurm through its command-line tools (``squeue -O``
  text for jobs, JSON for nodes, ``scontrol`` for licenses and burst-buffer pools, ``sacct``
  by its header), with time limits and retries;
- ``hpcopt.slurm.machine``: the managed partition's kind of nodes (counted, SSD classes, a
  topology), its burst buffer and what each job asks of them;
- ``hpcopt.slurm.adapter``: the cycle: read, state, decide with a policy through the driver's
  own pass, release the jobs to start now;
- ``hpcopt.slurm.record``: a cycle's record, as the log writes it and ``slurm status`` reads it;
- ``hpcopt.slurm.lua``: the ``job_submit.lua`` that holds the managed partition's jobs;
- ``hpcopt.slurm.cli``: ``hpcopt slurm run | job-submit-lua | ...`` (``testbed``: the
  emulated cluster of the tests, ``hpcopt.testbed``, a package of its own).

Slurm's accounting (``sacct``, ``jobcomp/filetxt``) loads as a trace through
``hpcopt.load_trace`` (``hpcopt.traces.slurm``).
"""
