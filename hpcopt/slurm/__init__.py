"""hpcopt as an external scheduler of a real Slurm cluster.

- ``hpcopt.slurm.state``: Slurm's state read through its command-line tools (JSON where they
  have it), with time limits and retries;
- ``hpcopt.slurm.adapter``: the cycle: read, decide with a policy through the driver's own
  pass, release the jobs to start now;
- ``hpcopt.slurm.lua``: the ``job_submit.lua`` that holds the managed partition's jobs;
- ``hpcopt.slurm.cli``: ``hpcopt slurm run | job-submit-lua | ...`` (``testbed``: the
  emulated cluster of the tests, ``hpcopt.testbed``, a package of its own).

Slurm's accounting (``sacct``, ``jobcomp/filetxt``) loads as a trace through
``hpcopt.load_trace`` (``hpcopt.traces.slurm``).
"""
