"""Workflows shaped like the ASA paper's (section 4.3): Montage, BLAST and Statistics.

The paper runs three Tigres workflows at six scales (28, 56 and 112 cores on HPC2n, 160,
320 and 640 on UPPMAX); its Table 1 compares Big Job, Per-Stage and ASA on them.  Only
their stage structure is published, so each is given here as its sequence of parallel (P,
the scale's cores) and sequential (S, one core) stages with runtimes of tens of minutes:

* **Montage**: nine stages, P P S S P S S S S (the paper: two parallel, then two
  sequential, one parallel, then sequential ones; the Montage tools mProjectPP, mDiffFit,
  mConcatFit, mBgModel, mBackground, mImgtbl, mAdd, mShrink, mJPEG); parallel stages take
  about 60% of its runtime, so Big Job costs about 1.6x Per-Stage's core-hours, as in the
  paper's 320-core row (177 against 106 h).
* **BLAST**: one long parallel search, then a short sequential merge; Big Job costs about
  what Per-Stage does (the paper: within 1%).
* **Statistics**: S P S P, halves of the runtime each; Big Job costs about 2x Per-Stage
  (the paper: 66 against 34 h at 56 cores).

Runtimes do not change with the scale (the paper's Montage hardly scales); they are the
workflow's actual stage runtimes, as the runner's walltimes are exact.
"""

from __future__ import annotations

from .reader import WorkflowError
from .stages import Stage

# name -> ((kind, minutes), ...); kind "P": the scale's cores, "S": one core
PAPER_WORKFLOWS = {
    "Montage": (("P", 20), ("P", 15), ("S", 5), ("S", 5), ("P", 20), ("S", 5), ("S", 10),
                ("S", 5), ("S", 5)),
    "BLAST": (("P", 60), ("S", 5)),
    "Statistics": (("S", 30), ("P", 30), ("S", 30), ("P", 30)),
}
PAPER_SCALES = {"HPC2n": (28, 56, 112), "UPPMAX": (160, 320, 640)}
PAPER_MACHINES = {"HPC2n": 602 * 28, "UPPMAX": 486 * 20}  # cores


def paper_workflow(name: str, cores: int) -> list[Stage]:
    """The stages of the paper-shaped workflow ``name`` at ``cores`` cores (its parallel
    stages' width)."""
    if name not in PAPER_WORKFLOWS:
        raise WorkflowError(f"paper workflow: unknown {name!r}; expected one of "
                            f"{', '.join(PAPER_WORKFLOWS)}")
    if isinstance(cores, bool) or int(cores) != cores or cores < 1:
        raise WorkflowError(f"cores: expected an integer >= 1, got {cores!r}")
    out = []
    for i, (kind, minutes) in enumerate(PAPER_WORKFLOWS[name]):
        n = int(cores) if kind == "P" else 1
        out.append(Stage(i, n, n, 60.0 * minutes, 60.0 * minutes * n))
    return out
