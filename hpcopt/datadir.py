"""The data directory: where default inputs that are real data sets are looked up.

Some defaults read real traces that hpcopt does not ship (their licences or sizes keep them
out of the wheel): the Kopanski KTH workload behind the S1-S4 burst-buffer pool and
``load_batsim()``, the Azure v1 derived files behind ``hpcopt workload osdec`` and the
OSDEC training pool.  They are looked up by their path relative to one data directory:

1. the environment variable ``HPCOPT_DATA`` (``hpcopt --data-dir DIR`` sets it for the
   command and its worker processes);
2. else, when hpcopt runs from a source checkout, the ``shared/data`` folder beside the
   checkout (the project's development layout; an installed wheel has no such fallback);
3. else the per-user data directory (``user_data_dir()``: ``$XDG_DATA_HOME/hpcopt/data``,
   by default ``~/.local/share/hpcopt/data``) when it exists.

``hpcopt data fetch`` writes into ``fetch_dir()``: ``HPCOPT_DATA`` when set, else the per-user
data directory (never a checkout's shared folder).  A file that is not there is a
``DataNotFoundError`` saying which file, what needs it, how to point hpcopt at it and which
``hpcopt data fetch`` brings it.

Every input that is a file (a trace, a workflow, a job file) may also be given by name
(``resolve_input``): a data set name (``kth-sp2``), ``NAME/FILE`` or a path relative to the
data directory; a file of that name in the current folder wins.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import DataNotFoundError

ENV = "HPCOPT_DATA"
_PACKAGE = Path(__file__).resolve().parent


def _checkout_data() -> Path | None:
    root = _PACKAGE.parent
    if (root / "pyproject.toml").is_file() and (root / "instances").is_dir():
        candidate = root.parent / "shared" / "data"
        if candidate.is_dir():
            return candidate
    return None


def user_data_dir() -> Path:
    """The per-user data directory: ``$XDG_DATA_HOME/hpcopt/data`` (default
    ``~/.local/share/hpcopt/data``); it may not exist yet."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join("~", ".local", "share")
    return Path(base).expanduser() / "hpcopt" / "data"


def data_dir() -> Path | None:
    """The data directory in force (``HPCOPT_DATA``, else a checkout's, else the per-user one
    when it exists), or None."""
    env = os.environ.get(ENV)
    if env:
        return Path(env).expanduser()
    checkout = _checkout_data()
    if checkout is not None:
        return checkout
    user = user_data_dir()
    return user if user.is_dir() else None


def data_root() -> Path:
    """The data directory in force, else the per-user one that ``hpcopt data fetch`` fills
    (it may not exist yet): where the tests and benchmarks look for real data."""
    return data_dir() or user_data_dir()


def missing_data(*relpaths: str | Path, root: Path | None = None) -> str | None:
    """Why the files ``relpaths`` of the data directory (``root``, default ``data_root()``)
    cannot be read: the first missing one and the ``hpcopt data fetch`` that brings them;
    None when all are there (the skip reason of tests, the message of benchmarks)."""
    root = data_root() if root is None else root
    missing = [str(r) for r in relpaths if not (root / r).exists()]
    if not missing:
        return None
    from .datasets import dataset_of

    names = " ".join(dict.fromkeys(dataset_of(r) or r for r in missing))
    more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
    return (f"needs {missing[0]}{more} in the data directory {root}: hpcopt data fetch "
            f"{names}")


def fetch_dir() -> Path:
    """Where ``hpcopt data fetch`` writes: ``HPCOPT_DATA`` when set, else the per-user data
    directory."""
    env = os.environ.get(ENV)
    return Path(env).expanduser() if env else user_data_dir()


def data_path(relative: str | Path, needed_by: str) -> Path:
    """The file ``relative`` of the data directory; ``needed_by`` names what reads it (for the
    one-line ``DataNotFoundError`` when it is not there)."""
    base = data_dir()
    if base is not None and (base / relative).exists():
        return base / relative
    where = f"not in the data directory {base}" if base is not None else \
        "no data directory is set"
    from .datasets import dataset_of

    name = dataset_of(str(relative))
    fetch = f"; 'hpcopt data fetch {name}' downloads it" if name else ""
    raise DataNotFoundError(f"{relative}: not found ({where}), needed by {needed_by}; set "
                            f"{ENV}=DIR or pass --data-dir DIR (the folder that holds it)"
                            f"{fetch}")


def resolve_input(given, what: str = "input"):
    """The file an input names: ``given`` itself when it exists (or is not a path); else the
    data directory's file of a data set name, ``NAME/FILE`` or catalogue path (a
    ``DataNotFoundError`` with the ``hpcopt data fetch`` that brings it when it is not there);
    else the path relative to the data directory when that exists; else ``given`` unchanged
    (the reader reports it), unless it ends with a catalogue path (a hint to name it)."""
    if not isinstance(given, (str, Path)) or Path(given).expanduser().exists():
        return given
    from .datasets import by_path, dataset_of, named_file

    text = str(given)
    relative = named_file(text)
    if relative is not None:
        return data_path(relative, f"{what} {text!r}")
    base = data_dir()
    if base is not None and not Path(text).is_absolute() and (base / text).exists():
        return base / text
    tail = text.replace(os.sep, "/")
    known = next((p for p in by_path() if tail.endswith("/" + p)), None)
    if known is not None:
        raise DataNotFoundError(
            f"{text}: no such file; it is a file of the data set {dataset_of(known)!r}: give "
            f"it as {dataset_of(known)!r} or {known!r} to read it from the data directory "
            f"({base if base is not None else 'none set yet'}; 'hpcopt data fetch "
            f"{dataset_of(known)}' downloads it)")
    return given


def use_data_dir(path: str | Path) -> Path:
    """Make ``path`` the data directory of this process and the processes it starts."""
    path = Path(path).expanduser().resolve()
    if not path.is_dir():
        raise DataNotFoundError(f"--data-dir {path}: no such directory")
    os.environ[ENV] = str(path)
    return path
