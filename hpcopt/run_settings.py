"""One simulation run, described once: ``RunSettings`` (how a trace becomes the scenario, the
policy and its options, the driver settings, the seed and the summary's trimming).

``hpcopt.simulate``, ``hpcopt simulate`` and sweeps (``hpcopt.sweep``) all build one and
pass it to ``hpcopt.api.simulate_run``; the cloud day (``hpcopt.osdec.simulate_osdec``)
builds one too, with its fixed driver settings.  ``from_flat`` reads the flat setting names
the Python API and sweep files use (``nodes=``, ``window=``, ``backend=`` ...).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from .jsonsafe import json_safe
from .scenario import ScenarioSettings
from .sim.settings import DriverOptions, DriverSettings

SCENARIO_KEYS = tuple(f.name for f in fields(ScenarioSettings))
DRIVER_KEYS = tuple(f.name for f in fields(DriverOptions) if f.name != "launch_delay")
RUN_KEYS = ("policy", "seed", "warmup", "cooldown")


@dataclass(frozen=True)
class RunSettings:
    """What one simulation run is: ``scenario`` (``ScenarioSettings``: how the trace is read
    and shaped), ``policy`` (a registered name or a policy object) with its
    ``policy_options``, ``driver`` (``DriverOptions``; ``None`` fields are the policy's own),
    ``seed`` (the policy's and, unless the scenario names one, the generated workload's),
    and the jobs (or fraction) the summary trims at the start and end (``warmup``,
    ``cooldown``)."""

    scenario: ScenarioSettings = field(default_factory=ScenarioSettings)
    policy: Any = "fcfs"
    policy_options: Mapping[str, Any] = field(default_factory=dict)
    driver: DriverOptions = field(default_factory=DriverOptions)
    seed: int | None = None
    warmup: float = 0
    cooldown: float = 0

    @classmethod
    def from_flat(cls, **settings) -> RunSettings:
        """The run of the flat names (``hpcopt.simulate``'s keywords, a sweep row): the
        scenario's (``SCENARIO_KEYS``), the driver's (``DRIVER_KEYS``), ``RUN_KEYS``; every
        other name is a policy option.  ``workload_seed`` defaults to ``seed`` (else 0)."""
        scenario = {k: settings.pop(k) for k in SCENARIO_KEYS if k in settings}
        driver = {k: settings.pop(k) for k in DRIVER_KEYS if k in settings}
        run = {k: settings.pop(k) for k in RUN_KEYS if k in settings}
        if scenario.get("workload_seed") is None:
            scenario["workload_seed"] = run.get("seed") or 0
        return cls(scenario=ScenarioSettings(**scenario), driver=DriverOptions(**driver),
                   policy_options=settings, **run)

    def record(self, policy, driver: DriverSettings, **extra) -> dict:
        """What a result records of this run (``SimulationResult.settings``): the policy's
        name, the driver settings it ran under, the seed, ``extra`` and the policy options
        (the policy's own, updated by the given ones)."""
        return dict(policy=getattr(policy, "name", type(policy).__name__), order=str(driver.order),
                    backfill="easy" if driver.backfill else "none", window=driver.window,
                    starvation_bound=driver.starvation_bound, period=driver.period,
                    seed=self.seed, **extra,
                    policy_options=json_safe({**getattr(policy, "options", {}),
                                              **self.policy_options}))
