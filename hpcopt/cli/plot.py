"""``hpcopt plot``: PNGs of what simulate and solve wrote (``hpcopt.plots``)."""

from __future__ import annotations


def register(sub) -> None:
    from ..plots import add_plot_parser

    add_plot_parser(sub)  # its handler is hpcopt.plots.cmd_plot
