"""``hpcopt data``: the real data sets by name (list), downloaded and checked (fetch), and
the data directory checked (verify); ``hpcopt.datasets``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..errors import HpcoptError
from .common import add_json_flag, print_listing


def register(sub) -> None:
    d = sub.add_parser("data", help="the real data sets: list, fetch, verify",
                       description="The real data sets that hpcopt's defaults, docs and "
                                   "benchmarks read, and the data directory that holds them.")
    verbs = d.add_subparsers(dest="verb", required=True)
    ls = verbs.add_parser("list", help="the data sets (or the files of those named), where "
                                       "they come from and whether the data directory has them")
    ls.add_argument("names", nargs="*", metavar="NAME",
                    help="data sets whose files to list (default: one line per data set)")
    add_json_flag(ls)
    ls.set_defaults(run=run_list)
    f = verbs.add_parser("fetch", help="download data sets into the data directory, checked "
                                       "against their SHA-256")
    f.add_argument("names", nargs="*", metavar="NAME",
                   help="data set names (hpcopt data list) or file paths in the data directory")
    f.add_argument("--all", action="store_true", help="every data set of the catalogue")
    f.add_argument("--to", default=None, metavar="DIR",
                   help="the data directory to write (default: --data-dir, $HPCOPT_DATA, else "
                        "the per-user ~/.local/share/hpcopt/data)")
    f.add_argument("--mirror", default=None, metavar="URL",
                   help="fetch URL/<path in the data directory> instead of upstream "
                        "(https://, http:// or file://: a copy of a data directory)")
    f.add_argument("--force", action="store_true", help="download again files already there")
    f.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    add_json_flag(f)
    f.set_defaults(run=run_fetch)
    w = verbs.add_parser("path", help="where the data directory is, or where the file a "
                                      "data set name stands for is (for $(hpcopt data path "
                                      "NAME))")
    w.add_argument("names", nargs="*", metavar="NAME",
                   help="data set names (their main file; every file of one without), "
                        "NAME/FILE or file paths in the data directory")
    w.set_defaults(run=run_path)
    v = verbs.add_parser("verify", help="check the SHA-256 of the data files present (or of "
                                        "every file of the data sets named)")
    v.add_argument("names", nargs="*", metavar="NAME",
                   help="data sets or file paths that must be there (default: every file of "
                        "the catalogue that is there)")
    v.add_argument("--dir", default=None, metavar="DIR",
                   help="the data directory to check (default: the one in force)")
    add_json_flag(v)
    v.set_defaults(run=run_verify)


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return ""  # pragma: no cover


def _root(given: str | None):
    from ..datadir import data_dir  # (as a subcommand's code)

    return Path(given).expanduser() if given else data_dir()


def run_list(args) -> int:
    from ..datasets import catalogue, select, verify

    root = _root(None)
    if args.names:
        files = select(args.names)
        states = verify(files, root) if root is not None else []
        have = {s.file.path: s.state for s in states}
        rows = [{"path": f.path, "dataset": f.dataset, "size": f.size, "sha256": f.sha256,
                 "here": have.get(f.path, "missing"), "url": f.url,
                 **({"upstream_sha256": f.upstream_sha256, "derive": "gzip"}
                    if f.compressed_here else {})} for f in files]
        if args.json:
            print_listing(rows, [], [], True)
            return 0
        print_listing([{**r, "size": _size(r["size"])} for r in rows],
                      ["path", "size", "here"], ["url", "sha256", "upstream_sha256"], False)
        return 0
    rows = []
    for d in catalogue().values():
        here = None
        if root is not None:
            present = sum((root / f.path).is_file() for f in d.files)
            here = f"{present}/{len(d.files)}"
        rows.append({"name": d.name, "files": len(d.files), "size": d.size, "here": here,
                     "kind": d.kind, "title": d.title, "licence": d.licence,
                     "citation": d.citation, "used_by": d.used_by})
    if args.json:
        print_listing(rows, [], [], True)
        return 0
    print(f"data directory: {root if root is not None else 'none (hpcopt data fetch writes '}"
          + ("" if root is not None else _default_target() + ")"))
    print_listing([{**r, "size": _size(r["size"])} for r in rows],
                  ["name", "files", "size", "here", "kind"], ["title", "used_by"], False)
    return 0


def _default_target() -> str:
    from ..datadir import fetch_dir  # (as a subcommand's code)

    return str(fetch_dir())


def _files(n: int) -> str:
    return f"{n} file" if n == 1 else f"{n} files"


def run_fetch(args) -> int:
    from ..datadir import fetch_dir
    from ..datasets import catalogue, fetch, mirror_url, select

    if args.all == bool(args.names):
        raise HpcoptError("data fetch: name the data sets to fetch (hpcopt data list), or "
                          "--all")
    files = select(list(catalogue()) if args.all else args.names)
    mirror = mirror_url(args.mirror)  # a folder is a file:// mirror; a bad one a usage error
    root = Path(args.to).expanduser() if args.to else fetch_dir()
    total = sum(f.size for f in files)
    info = sys.stderr if args.json else sys.stdout
    print(f"fetching {_files(len(files))} ({_size(total)}) into {root}"
          + (f" from {mirror}" if mirror else ""), file=info)
    unreachable = []

    def said(state) -> None:
        if state.state == "unreachable":
            unreachable.append(state)  # said once, below, for every file not fetched
        elif args.json:
            print(json.dumps(state.row()), flush=True)
        elif state.state == "failed":
            print(f"  failed   {state.file.path}: {state.detail}", file=sys.stderr)
        else:
            print(f"  {state.state:8} {state.file.path}", flush=True)

    states = fetch(files, root, mirror=mirror, progress=not args.no_progress,
                   force=args.force, on_file=said)
    if unreachable:
        print(f"hpcopt: error: {unreachable[0].detail}; {len(files) - len(states) + 1} of "
              f"{_files(len(files))} not fetched", file=sys.stderr)
        return 1
    failed = [s for s in states if s.state == "failed"]
    fetched = sum(s.state == "fetched" for s in states)
    there = len(states) - fetched - len(failed)
    print(f"{fetched} fetched, {there} already there, {len(failed)} failed"
          + ("; each checked against its SHA-256" if fetched + there else ""), file=info)
    if failed:
        print(f"hpcopt: error: {len(failed)} of {_files(len(states))} not fetched (first: "
              f"{failed[0].detail})", file=sys.stderr)
        return 1
    return 0


def run_path(args) -> int:
    """The data directory (where ``fetch`` writes when none is there yet), or the absolute
    path of each file named; exit 1, with the fetch that brings them, when some are not
    there."""
    from ..datadir import data_dir, fetch_dir
    from ..datasets import catalogue, named_file

    root = data_dir()
    if not args.names:
        print(root if root is not None else fetch_dir())
        if root is None:
            print(f"hpcopt: note: no data directory yet; 'hpcopt data fetch NAME' creates "
                  f"{fetch_dir()}", file=sys.stderr)
        return 0
    base = root if root is not None else fetch_dir()
    missing: dict[str, None] = {}
    for name in args.names:
        sets = catalogue()
        if name in sets and sets[name].main_file is None:  # every file of the data set
            paths = [f.path for f in sets[name].files]
        else:
            path = named_file(name)
            if path is None:
                raise HpcoptError(f"data path {name}: not a data set name, NAME/FILE or a "
                                  "file of the catalogue (hpcopt data list)")
            paths = [path]
        for path in paths:
            print(base / path)
            if not (base / path).is_file():
                from ..datasets import dataset_of

                missing[dataset_of(path)] = None
    if missing:
        print(f"hpcopt: error: not in the data directory {base}: hpcopt data fetch "
              f"{' '.join(missing)}", file=sys.stderr)
        return 1
    return 0


def run_verify(args) -> int:
    from ..datasets import by_path, select, verify

    root = _root(args.dir)
    if root is None or not root.is_dir():
        where = f"{root}: no such directory" if root is not None else "no data directory is set"
        raise HpcoptError(f"data verify: {where} (set HPCOPT_DATA, or pass --data-dir DIR or "
                          "--dir DIR)")
    named = bool(args.names)
    files = select(args.names) if named else list(by_path().values())
    states = verify(files, root)
    shown = states if named else [s for s in states if s.state == "bad"]
    for s in shown:
        if args.json:
            print(json.dumps(s.row()))
        else:
            print(f"  {s.state:8} {s.file.path}" + (f": {s.detail}" if s.detail else ""))
    bad = [s for s in states if s.state == "bad"]
    missing = [s for s in states if s.state == "missing"]
    ok = len(states) - len(bad) - len(missing)
    info = sys.stderr if args.json else sys.stdout
    print(f"{root}: {_files(ok)} ok, {len(bad)} bad, {len(missing)} "
          f"{'missing' if named else 'of the catalogue not there'}", file=info)
    if bad or (named and missing):
        # a bad file is downloaded again by a plain fetch (it fails its check)
        again = " ".join(dict.fromkeys(s.file.dataset for s in bad + (missing if named else [])))
        print(f"hpcopt: error: {len(bad)} bad and {len(missing) if named else 0} missing "
              f"files ('hpcopt data fetch {again}"
              + (f" --to {root}" if args.dir else "") + "' downloads them)",
              file=sys.stderr)
        return 1
    return 0
