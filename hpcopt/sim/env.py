"""A gymnasium environment over the driver's one-pick protocol.

``PickEnv`` is a thin adapter: the simulation is ``Simulator.steps()`` (the one loop, see
``hpcopt.sim.driver``) under a ``OnePickPolicy`` spec (window, reservation rule, fit-only),
and each ``step(action)`` sends the job in slot ``action`` of the pending ``PickRequest``.
What the agent sees and is rewarded with are plugged in: ``observe(request) -> array`` and
``reward(sim, pick) -> float`` (called on the driver's ``pick`` event, right after the pick
was carried out).  So any one-pick policy gets an environment: DRAS's is
``hpcopt.trainers.dras_env.DrasEnv`` (``gym.make("hpcopt/Dras-v0", ...)``).

``info["action_mask"]`` (int8, length W) marks the legal slots; an illegal action is
replaced by the first legal one and flagged in ``info["illegal_action"]`` (so random
rollouts never crash).  ``info["level"]`` is 1 in the select stage, 2 in the backfill stage.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import gymnasium as gym
import numpy as np

from hpcopt.domain import Job, System
from hpcopt.errors import SimulationError

from .driver import Simulator
from .picks import BACKFILL, SELECT, Pick, PickRequest
from .records import Event
from .settings import DriverOptions

STAGE_LEVEL = {SELECT: 1, BACKFILL: 2}


class PickEnv(gym.Env):
    """Gymnasium environment of a one-pick policy's decisions over the hpcopt driver.

    Parameters
    ----------
    jobs : the jobs of every episode, or ``None`` when ``jobset`` or ``reset(options=
        {"jobs": ...})`` gives them.
    system : the machine.
    spec : the ``hpcopt.policies.base.OnePickPolicy`` the driver runs (window W, order,
        ``reserve_rule``, ``fit_only``); its ``pick`` is never called.
    observe : ``f(PickRequest) -> np.ndarray`` within ``observation_space``.
    reward : ``f(sim, Pick) -> float``.
    jobset : optional ``f(np.random.Generator) -> list[Job]`` drawing an episode's jobs.
    backfill : ``"easy"`` (the backfill stage, default) or ``"none"``.
    """

    metadata = {"render_modes": []}

    def __init__(self, jobs: Sequence[Job] | None, system: System, *, spec, observe: Callable,
                 observation_space: gym.spaces.Space, reward: Callable,
                 jobset: Callable[[np.random.Generator], Sequence[Job]] | None = None,
                 backfill: str = "easy") -> None:
        if system is None:
            raise SimulationError(f"{type(self).__name__} needs system= (the machine the jobs "
                                  "run on)")
        if spec.window is None or spec.window < 1:
            raise SimulationError(f"window must be >= 1, got {spec.window}")
        self.system = system
        self.jobs = None if jobs is None else list(jobs)
        self.jobset = jobset
        self.pick_spec = spec
        self.observe = observe
        self.reward = reward
        self.backfill = backfill
        self.window_size = int(spec.window)
        self.observation_space = observation_space
        self.action_space = gym.spaces.Discrete(self.window_size)
        self.sim: Simulator | None = None
        self.instances = 0  # scheduling passes that needed a pick
        self._request: PickRequest | None = None

    # ------------------------------------------------------------------ gym API
    def episode_jobs(self, seed: int | None = None, options: dict | None = None) -> list[Job]:
        """Seed the environment and return the jobs of the next episode."""
        super().reset(seed=seed)
        jobs = (options or {}).get("jobs")
        if jobs is None:
            if self.jobset is not None:
                jobs = self.jobset(self.np_random)
            elif self.jobs is not None:
                jobs = self.jobs
            else:
                raise SimulationError(f"{type(self).__name__}.reset: no jobs (give jobs=, "
                                      "jobset= or options={'jobs': [...]})")
        jobs = list(jobs)
        if not jobs:
            raise SimulationError(f"{type(self).__name__}.reset: the episode has no jobs")
        return jobs

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        jobs = self.episode_jobs(seed, options)
        self.sim = Simulator(jobs, self.system, self.pick_spec,
                             DriverOptions(backfill=self.backfill))
        self.sim.subscribe(Event.PICK, self._on_pick)
        self._steps = self.sim.steps()
        self.instances = 0
        self._last_pass = -1
        self._advance(None, first=True)
        return self._obs(), self._info()

    def step(self, action):
        if self.sim is None:
            raise SimulationError(f"{type(self).__name__}.step called before reset()")
        if self._request is None:
            raise SimulationError(f"{type(self).__name__}.step called after the episode "
                                  "terminated; reset()")
        a = int(action)
        mask = self.action_mask()
        illegal = not (0 <= a < len(mask) and mask[a])
        if illegal:
            a = int(np.flatnonzero(mask)[0])
        self._reward = 0.0
        self._advance(self._request.choices[a])
        info = self._info()
        info["illegal_action"] = illegal
        return self._obs(), float(self._reward), self._request is None, False, info

    # ------------------------------------------------------------------ views
    @property
    def request(self) -> PickRequest | None:
        """The pending pick (``None`` once the episode is over)."""
        return self._request

    @property
    def level(self) -> int:
        """1 (select) or 2 (backfill) while a pick is pending, 0 once the episode is over."""
        return 0 if self._request is None else STAGE_LEVEL[self._request.stage]

    @property
    def choices(self) -> list[Job]:
        """The jobs behind the window slots of the pending pick."""
        return [] if self._request is None else list(self._request.choices)

    def action_mask(self) -> np.ndarray:
        """int8 mask over the W window slots: 1 where a pick is legal now."""
        mask = np.zeros(self.window_size, dtype=np.int8)
        req = self._request
        if req is None:
            return mask
        if req.mask is None:
            mask[: len(req.choices)] = 1
        else:
            mask[: len(req.mask)] = req.mask
        return mask

    # ------------------------------------------------------------------ internals
    def _advance(self, job: Job | None, first: bool = False) -> None:
        try:
            self._request = next(self._steps) if first else self._steps.send(job)
        except StopIteration:
            self._request = None
            return
        if self._request.pass_index != self._last_pass:
            self._last_pass = self._request.pass_index
            self.instances += 1

    def _on_pick(self, sim: Simulator, event, pick: Pick) -> None:
        self._reward = self.reward(sim, pick)

    def _info(self) -> dict:
        return {"action_mask": self.action_mask(), "level": self.level,
                "instance": self.instances, "time": self.sim.now}

    def _obs(self) -> np.ndarray:
        if self._request is None:
            return np.zeros(self.observation_space.shape, dtype=self.observation_space.dtype)
        return self.observe(self._request)
