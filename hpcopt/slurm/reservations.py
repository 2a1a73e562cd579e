"""Slurm's advance reservations as the decision core's blocks (``hpcopt.sim.reservations``).

Each cycle reads ``scontrol show reservation`` (``Slurm.reservations``).  A reservation
holds nodes of the managed partition from its start to its end; hpcopt's held jobs never
ask for one (a job submitted with ``--reservation`` is left to Slurm by the submit script:
Slurm schedules it within its reservation), so every reservation is a block for all of
them: a job crossing its start must fit beside it, and EASY's shadow respects it.  A
reservation to come blocks its nodes that are usable now; one under way blocks its idle
nodes (the nodes its own jobs run on are counted as running until their limit ends, and
nodes it takes out of service, a maintenance's, are unavailable already).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..sim.reservations import Reservation
from .state import SlurmNode, SlurmReservation


def partition_blocks(found: Iterable[SlurmReservation], nodes: Iterable[SlurmNode],
                     partition: str, now: float) -> tuple[Reservation, ...]:
    """The blocks ``found`` (Slurm's reservations) put on ``partition``'s ``nodes`` at
    ``now`` (module docstring); reservations over, or holding none of its nodes, are
    left out."""
    mine = [n for n in nodes if partition in n.partitions]
    usable = {n.name for n in mine if n.usable}
    idle = {n.name for n in mine if n.idle}
    out = []
    for r in found:
        if r.end <= now:
            continue
        count = len(set(r.nodes) & (idle if r.start <= now else usable))
        if count:
            out.append(Reservation(r.start, r.end, count, name=r.name))
    return tuple(out)
