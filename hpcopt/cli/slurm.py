"""``hpcopt slurm``: the adapter for a real Slurm cluster and its testbed
(``hpcopt.slurm.cli``)."""

from __future__ import annotations


def register(sub) -> None:
    from ..slurm.cli import add_slurm_parser
    from .common import add_policy_flags

    add_slurm_parser(sub, add_policy_flags).set_defaults(run=run)


def run(args) -> int:
    from ..slurm.cli import cmd_slurm
    from .common import policy_options

    return cmd_slurm(args, policy_options(args))
