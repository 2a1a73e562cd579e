"""Workflows in a simulated queue (the ASA paper, Souza et al.).

* ``load_wfformat(path)`` -> ``Workflow``: the WfFormat reader (``reader``);
* ``stages_of(workflow, cap)`` / ``lpt_makespan``: DAG levels as sequential stages
  (``stages``);
* ``run_workflow(workflow, trace, strategy, ...)`` / ``WorkflowRun``: Big Job, Per-Stage,
  ASA, eager, ASA Naive and the oracle (``STRATEGIES``, strategy objects) in the modes
  ``MODES``, injected into a real trace replayed by the one driver loop (``runner``);
  ``write_results`` writes ``stages.csv`` and ``summary.json``;
* ``paper_workflow(name, cores)``: stages shaped like the ASA paper's Montage, BLAST and
  Statistics (``paper``).
"""

from .paper import PAPER_WORKFLOWS, paper_workflow
from .reader import Task, Workflow, WorkflowError, load_wfformat
from .runner import (
    KEYS,
    MODES,
    PLANS,
    STRATEGIES,
    Attempt,
    Mode,
    Strategy,
    WorkflowResult,
    WorkflowRun,
    run_workflow,
)
from .stages import Stage, lpt_makespan, stages_of

__all__ = [
    "KEYS", "MODES", "PAPER_WORKFLOWS", "PLANS", "STRATEGIES", "Attempt", "Mode", "Stage",
    "Strategy", "Task", "Workflow", "WorkflowError", "WorkflowResult", "WorkflowRun",
    "load_wfformat", "lpt_makespan", "paper_workflow", "run_workflow", "stages_of",
]
