"""One exception tree for hpcopt.

Every error a user can provoke (bad input, unknown names, missing optional backends,
infeasible requests) is an ``HpcoptError`` whose message is one line that says what was
wrong, what was received and what was expected.  The CLI prints exactly that line.
"""

from __future__ import annotations


class HpcoptError(Exception):
    """Base of every error hpcopt raises on purpose."""


class ModelError(HpcoptError, ValueError):
    """Model data that violates the model's schema (shapes, signs, missing fields); ``field``
    and ``detail`` say which field and what was expected where the model set them."""

    field: str | None = None
    detail: str | None = None


class InstanceError(HpcoptError, ValueError):
    """An instance file that cannot be read or does not follow the instance schema."""


class TraceError(HpcoptError, ValueError):
    """A workload trace that cannot be parsed (names file, line and field)."""


class UnknownSolverError(HpcoptError, KeyError):
    """A backend name that is not registered."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class UnknownPolicyError(HpcoptError, KeyError):
    """A policy name that is not registered."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class RegistryError(HpcoptError, ValueError):
    """A name registered twice (a policy, a solver backend, a canonical tie-break)."""


def refuse_duplicate(what: str, name: str, registry: dict, new) -> None:
    """Raise ``RegistryError`` when ``name`` already names another object in ``registry``
    (the same class or function registered again, as on a module reload, is not a duplicate)."""
    old = registry.get(name)
    if old is not None and (old.__module__, old.__qualname__) != (new.__module__,
                                                                     new.__qualname__):
        raise RegistryError(f"{what} {name!r} is already registered "
                            f"({old.__module__}.{old.__qualname__})")


class SolverUnavailableError(HpcoptError, ImportError):
    """A registered backend whose library is not installed."""


class OptionError(HpcoptError, ValueError):
    """An option a component does not take, or a value it does not accept (the message names
    the option, what was given and what is expected)."""


class SolverOptionError(OptionError):
    """A solver option (``time_limit``, ``seed``, a ``solver_options`` key or value) that the
    backend does not accept."""


class IncompatibleModelError(HpcoptError, TypeError):
    """A backend asked to solve a model kind it does not support."""


class NoSolutionError(HpcoptError):
    """A result without a solution was asked for its solution."""


class InfeasibleSolutionError(HpcoptError):
    """A backend returned a decision that fails the model's certificate check."""


class InvalidDecisionError(HpcoptError, ValueError):
    """A policy returned a decision the driver cannot apply (unknown job, over-subscription)."""


class SimulationError(HpcoptError, ValueError):
    """An invalid simulation request (job larger than the system, bad driver setting)."""


class PolicyOptionError(OptionError, SimulationError):
    """A policy option the policy does not take, or a value it does not accept."""


class DataNotFoundError(HpcoptError, FileNotFoundError):
    """A default input read from the data directory (``hpcopt.datadir``) is not there."""


def one_line(exc: BaseException) -> str:
    """The first line of an error's message; non-hpcopt errors keep their type name."""
    lines = str(exc).strip().splitlines()
    msg = lines[0] if lines else ""
    return msg if isinstance(exc, HpcoptError) and msg else f"{type(exc).__name__}: {msg}"


def closest(name: str, names) -> str:
    """Return a ' Did you mean ...?' hint for ``name`` among ``names`` (or '')."""

    import difflib  # see ALLOWED_STDLIB in tests/test_function_imports.py

    match = difflib.get_close_matches(name, list(names), n=1)
    return f" Did you mean {match[0]!r}?" if match else ""
