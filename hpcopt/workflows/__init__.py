"""Workflows in a simulated queue (seed paper 002, ASA; ``../shared/specs/asa.md``).

* ``load_wfformat(path)`` -> ``Workflow``: the WfFormat reader (``reader``);
* ``stages_of(workflow, cap)`` / ``lpt_makespan``: DAG levels as sequential stages
  (``stages``);
* ``run_workflow(workflow, trace, strategy, ...)`` / ``WorkflowRun``: Big Job, Per-Stage,
  ASA, ASA Naive and the oracle, injected into a real trace replayed by the one driver loop
  (``runner``); ``write_results`` writes ``stages.csv`` and ``summary.json``.
"""

from .reader import Task, Workflow, WorkflowError, load_wfformat
from .runner import MODES, STRATEGIES, Attempt, WorkflowResult, WorkflowRun, run_workflow
from .stages import Stage, lpt_makespan, stages_of

__all__ = [
    "MODES", "STRATEGIES", "Attempt", "Stage", "Task", "Workflow", "WorkflowError",
    "WorkflowResult", "WorkflowRun", "load_wfformat", "lpt_makespan", "run_workflow",
    "stages_of",
]
