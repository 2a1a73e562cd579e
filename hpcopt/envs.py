"""Gymnasium registration of hpcopt's environments: importing this module registers them.

``import hpcopt.envs`` (it imports gymnasium), then ``gym.make("hpcopt/Dras-v0", jobs=...,
system=...)``; or, with no import of hpcopt, ``gym.make("hpcopt.envs:hpcopt/Dras-v0", ...)``
(gymnasium imports the module named before the colon).  The ``gymnasium.envs`` entry point in
pyproject.toml names ``register_envs`` for gymnasium versions that load plugins.
``import hpcopt`` alone registers nothing and imports neither gymnasium nor torch.  An
environment's module loads only on ``make``.
"""

from __future__ import annotations


def make_dras(**kwargs):
    """``hpcopt/Dras-v0``: the DRAS environment (``hpcopt.trainers.dras_env.DrasEnv``)."""
    from hpcopt.trainers.dras_env import DrasEnv

    return DrasEnv(**kwargs)


ENVS = {"hpcopt/Dras-v0": make_dras}


def register_envs() -> None:
    """Register every hpcopt environment with gymnasium (idempotent)."""
    import gymnasium

    for env_id, entry_point in ENVS.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point=entry_point)


register_envs()
