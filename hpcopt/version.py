"""The version of hpcopt (pyproject.toml's ``version``), in the base layer so that every
layer may read it."""

__version__ = "0.1.0"
