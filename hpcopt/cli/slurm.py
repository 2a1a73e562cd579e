"""``hpcopt slurm``: the adapter for a real Slurm cluster (``hpcopt.slurm.cli``) and its
testbed (``hpcopt.testbed.cli``)."""

from __future__ import annotations


def register(sub) -> None:
    from ..slurm.cli import add_slurm_parser
    from ..testbed.cli import add_testbed_parser
    from .common import add_policy_flags

    add_slurm_parser(sub, add_policy_flags, add_testbed_parser).set_defaults(run=run)


def run(args) -> int:
    from ..slurm.cli import cmd_slurm
    from .common import policy_options

    return cmd_slurm(args, policy_options(args))
