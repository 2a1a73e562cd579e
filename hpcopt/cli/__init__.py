"""The ``hpcopt`` command line: batch solving, simulation, sweeps, training and a service.

One module per subcommand; each has ``register(sub)``, which adds its parser to the
subparsers ``sub`` and sets ``run=`` (the function called with the parsed arguments, which
returns the exit code).  ``COMMANDS`` names them: a new subcommand is one line there.  A
command builds its own parser only (``hpcopt simulate`` does not load what ``hpcopt
workflow``'s flags need); ``hpcopt --help`` and a mistyped command build them all.

Exit codes: 0 success; 1 some rows or runs failed; 2 a user error (an ``HpcoptError``: bad
input, unknown name, missing file or optional package), one line on stderr; 3 an internal
error (anything else: a bug), one line saying so; 130/143 interrupted.  ``--debug`` shows
the traceback instead.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys

from ..errors import HpcoptError, one_line
from ..version import __version__
from .common import instances_dir, policy_flags, print_summary

#: the subcommands, in the order ``--help`` lists them: each is the module
#: ``hpcopt.cli.<name>``, imported when its parser is built
COMMANDS = ("solve", "sweep", "simulate", "train", "serve", "decide", "backends", "policies",
            "instances", "workflow", "slurm", "workload", "trace", "data", "plot", "demo")


def _register(name: str, sub) -> None:
    """Add the subcommand ``name``'s parser (its module's ``register``) to ``sub``."""
    importlib.import_module(f"{__name__}.{name}").register(sub)

_print_summary = print_summary  # the name benchmarks/simulator_speed.py imports


class _Parser(argparse.ArgumentParser):
    """Usage errors are one line and a pointer to ``--help``, not the whole usage (exit 2);
    every subcommand's parser is one of these (argparse makes them with the parent's class)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def _command(argv: list[str]) -> str | None:
    """The subcommand ``argv`` names (its first word that is not a global option), or None."""
    words = iter(argv)
    for word in words:
        if word == "--data-dir":
            next(words, None)  # its value
        elif not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def _parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser for ``argv``: its subcommand's alone where it names one, else every one."""
    p = _Parser(prog="hpcopt", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"hpcopt {__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    p.add_argument("--data-dir", default=None, metavar="DIR",
                   help="the data directory (real traces) that default inputs are read from; "
                        "default: the environment variable HPCOPT_DATA")
    sub = p.add_subparsers(dest="command", required=True)
    command = None if argv is None else _command(argv)
    if command is None and argv is not None and "--version" in argv:
        return p  # the version alone: no subcommand's parser
    for name in COMMANDS:
        if command in (None, name):
            _register(name, sub)
    _global_flags_everywhere(sub)
    return p


def _global_flags_everywhere(sub) -> None:
    """``--debug`` and ``--data-dir`` also after the subcommand (``hpcopt simulate ... --debug``),
    in every subcommand and nested subcommand (once per parser: an alias names the same one)."""
    for parser in {id(p): p for p in sub.choices.values()}.values():
        parser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                            help="show tracebacks on errors")
        parser.add_argument("--data-dir", default=argparse.SUPPRESS, metavar="DIR",
                            help="the data directory (default: $HPCOPT_DATA)")
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                _global_flags_everywhere(action)


class _Terminated(KeyboardInterrupt):
    """SIGTERM outside a batch: stops like Ctrl-C (exit 143, one line, no traceback)."""


def _on_sigterm(signum, frame):
    raise _Terminated()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = _parser(argv).parse_args(argv)
    old_term = None
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        try:
            old_term = signal.signal(signal.SIGTERM, _on_sigterm)
        except ValueError:  # not the main thread
            pass
    try:
        if args.data_dir is not None:
            from ..datadir import use_data_dir  # (as a subcommand's code)

            use_data_dir(args.data_dir)  # HPCOPT_DATA for this process and its workers
        return args.run(args)
    except KeyboardInterrupt as exc:
        if args.debug:
            raise
        name = "SIGTERM" if isinstance(exc, _Terminated) else "SIGINT"
        print(f"hpcopt: interrupted by {name}", file=sys.stderr)
        return 143 if isinstance(exc, _Terminated) else 130
    except BrokenPipeError:  # e.g. --out - | head: the reader is gone, nothing to say
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - no flush error at exit
        except OSError:
            pass
        return 141
    except (HpcoptError, OSError) as exc:  # bad input, or a file the system refused
        if args.debug:
            raise
        print(f"hpcopt: error: {one_line(exc)}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - a bug: never a traceback unless --debug
        if args.debug:
            raise
        print(f"hpcopt: internal error: {one_line(exc)} (a bug in hpcopt; run with --debug "
              "for the traceback)", file=sys.stderr)
        return 3
    finally:
        if old_term is not None:
            signal.signal(signal.SIGTERM, old_term)


__all__ = ["COMMANDS", "instances_dir", "main", "policy_flags"]
