"""Gymnasium registration of hpcopt's environments, without importing gymnasium early.

``import hpcopt`` registers them as soon as gymnasium is imported (now, if it already is;
else by a one-shot import hook), so ``gym.make("hpcopt/Dras-v0", ...)`` works in any import
order; ``gym.make("hpcopt:hpcopt/Dras-v0", ...)`` works without importing hpcopt first.  The
``gymnasium.envs`` entry point in pyproject.toml does the same for gymnasium versions that
load plugins.  Entry points are strings: the environment module loads only on ``make``.
"""

from __future__ import annotations

import sys

ENVS = {"hpcopt/Dras-v0": "hpcopt.trainers.dras_env:DrasEnv"}


def register_envs() -> None:
    """Register every hpcopt environment with gymnasium (idempotent)."""
    import gymnasium

    for env_id, entry_point in ENVS.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point=entry_point)


class _RegisterAfterImport:
    """A meta-path finder and loader: finds gymnasium with the other finders, then registers
    once it has executed (duck-typed: importlib.abc alone costs ~8 ms of import time)."""

    def find_spec(self, name, path=None, target=None):
        if name != "gymnasium":
            return None
        import importlib.util

        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        self._loader = spec.loader
        spec.loader = self
        return spec

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        module.__loader__ = self._loader
        module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        register_envs()


def install() -> None:
    """Register now if gymnasium is loaded, else when it is."""
    if "gymnasium" in sys.modules:
        register_envs()
    elif not any(isinstance(f, _RegisterAfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _RegisterAfterImport())
