"""``hpcopt workflow``: a WfFormat workflow in a simulated queue (``hpcopt.workflows.cli``)."""

from __future__ import annotations


def register(sub) -> None:
    from ..workflows.cli import add_workflow_parser

    add_workflow_parser(sub).set_defaults(run=run)


def run(args) -> int:
    from ..workflows.cli import cmd_workflow

    return cmd_workflow(args)
