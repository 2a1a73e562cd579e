"""Learned components of hpcopt (DRAS agents, the NSA repair operator in ``nsa`` and its
PPO training in ``nsa_train``, ...).

The only package that imports torch, and only inside the submodules that need it, so that
``import hpcopt`` and ``import hpcopt.learn`` stay fast and work without the ``ml`` extra.
``nsa`` (what the ``nsa`` solver backend loads) imports neither the driver nor the solvers;
its training, ``nsa_train``, may, and no solver imports a training module
(tests/test_import_layers.py).
"""
