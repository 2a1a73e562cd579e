"""The rolling-horizon driver: an event-driven batch-scheduler simulator that asks a policy
at every scheduling pass, and what a run of it produces.

- ``driver``: ``Simulator``, the one simulation loop (``run``, ``steps``, ``run_until``,
  ``Simulator.at`` for one pass in a given state) and the decision pass;
- ``settings``: ``DriverOptions`` (what a caller asks: order, backfill, window, starvation
  bound, period) resolved once against the policy into the frozen ``DriverSettings``;
- ``protocol``: ``PolicyHooks``, every hook the driver reads from a policy, with defaults;
- ``context``, ``easy``, ``picks``: the pass strategies over one ``PassContext``: the EASY
  reservation and backfill rule, and the one-pick passes (``PickRequest``, ``Pick``);
- ``resources``: the free-resource states (``NodePool``, ``MultiPool``, ``TopologyPool``,
  ``CapacityPool``) and the rules the driver applies to them;
- ``orders``: the base queue orders (FCFS, SJF, WFP);
- ``slurmconf``: Slurm's scheduling settings read from a ``slurm.conf`` (``--policy slurm``);
- ``records``: per-job records, start modes and the events subscribers hear;
- ``eventlog``: the events as tidy rows (``--events``);
- ``metrics`` and ``result``: the per-job table, summary metrics and ``SimulationResult``;
- ``decide``: one decision at one moment, for schedulers outside the simulator;
- ``env``: a gymnasium environment over the one-pick protocol.

Nothing is imported here, so that ``import hpcopt.sim.records`` loads only what it needs.
"""
