"""DCAS by neural simulated annealing (backend ``nsa``; Lan et al., CLUSTER'23, section V).

The loop of the ``sa`` backend (``dcas_sa.run_annealing``) with the learned repair operator
of ``hpcopt.agents.nsa``: a PPO-trained policy picks the first position of each removed job.
The operator is read from a checkpoint (default: the one shipped for ``paper-1000``) and kept
in memory per path, so solving many windows loads it once.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import replace
from pathlib import Path

from .dcas_sa import SA_DEFAULTS, run_annealing
from .registry import Footprint, Outcome, SolveOptions, Solver, register

# importing torch and loading the operator, the first time in a process (measured 2-3 s on
# a busy 2-core machine): a time limit shorter than this is answered by the greedy start
TORCH_IMPORT_SECONDS = 3.0


@functools.lru_cache(maxsize=8)
def _load(path: str, mtime: float, mode: str):
    from hpcopt.agents.nsa import LearnedRepair  # lazy: it imports torch (seconds)

    return LearnedRepair.load(path, mode=mode)


def learned_repair(checkpoint=None, mode: str = "sample"):
    """The (cached) ``LearnedRepair`` of ``checkpoint`` (default: the shipped one)."""
    from hpcopt.agents.nsa import DEFAULT_CHECKPOINT, LearnedRepair  # lazy: torch

    path = Path(checkpoint) if checkpoint else DEFAULT_CHECKPOINT
    if not path.is_file():
        return LearnedRepair.load(path, mode=mode)  # raises the one-line "not found" error
    return _load(str(path.resolve()), path.stat().st_mtime, mode)


@register("nsa")
class NeuralSimulatedAnnealing(Solver):
    """DCAS neural simulated annealing: the paper's Algorithm 1 with a learned repair.

    Supported models: ``dcas``.  ``solver_options``: those of ``sa`` (``t_max`` 500,
    ``T_max`` 2500, ``T_min`` 2.5, ``n_remove`` 2, ``init`` ``"scas-exact"`` so the answer is
    never worse than the SCAS optimum), plus ``checkpoint`` (path; default the shipped
    ``paper-1000`` CNN-3 operator), ``mode`` (``"sample"``, default, or ``"greedy"``) and
    ``q`` (optional: the state width the checkpoint must have).  The checkpoint must have been
    trained for the model's topology.  ``seed`` seeds the one generator (destroy, Metropolis
    and the policy's draws).  A feasible solution (a heuristic never claims optimality).
    """

    doc = "DCAS neural simulated annealing (PPO-learned repair operator); seedable"
    SUPPORTED_MODELS = ("dcas",)
    GREEDY_START = True
    REQUIRED_MODULES = ("torch",)
    INSTALL_HINT = "pip install 'hpcopt[ml]'"
    OPTIONS = (*SA_DEFAULTS, "init", "checkpoint", "mode", "q")

    def footprint(self, model, opts: SolveOptions) -> Footprint | None:
        """Importing torch (once per process) cannot be stopped."""
        return None if "torch" in sys.modules else Footprint(
            TORCH_IMPORT_SECONDS, 0.0, "importing torch and loading the repair operator")

    def _solve(self, model, opts: SolveOptions) -> Outcome:
        options = dict(opts.solver_options)
        mode = options.pop("mode", "sample")
        q = options.pop("q", None)
        repair = learned_repair(options.pop("checkpoint", None), mode)
        repair.check(model.topology, q)
        out = run_annealing("nsa", model, replace(opts, solver_options=options), repair,
                            )
        out.extra.update(checkpoint=repair.source, arch=repair.arch, mode=mode)
        return out
