"""Learned components of hpcopt (DRAS agents, the NSA repair operator in ``nsa``, ...).

The only package that imports torch, and only inside the submodules that need it, so that
``import hpcopt`` and ``import hpcopt.learn`` stay fast and work without the ``ml`` extra.
"""
