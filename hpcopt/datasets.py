"""The real data sets hpcopt's defaults, docs and benchmarks read: a catalogue, a fetch and a
check (``hpcopt data list | fetch | verify``).

The catalogue (``data_catalogue.json``, package data) lists each data set by name with its
licence or citation and its files; each file has its path in the data directory, the URL it
comes from (pinned to a commit), its size and SHA-256 as the data directory holds it.  A file
the data directory keeps compressed while upstream has it plain (``"derive": "gzip"``) also has
the upstream size and SHA-256: the fetch checks the download against them, then compresses it
(``gzip`` level 9 here, so its bytes may differ from the reference copy's; ``verify`` accepts a
file whose size and hash match the catalogue, or whose decompressed content matches upstream).

``fetch`` writes into the data directory (``hpcopt.datadir.fetch_dir``): it downloads to
``NAME.part`` beside the final name, resumes an interrupted ``.part`` (an HTTP range request;
a server that ignores it restarts the file), checks the SHA-256, and only then renames the file
into place, so the final name never holds a half-written or unchecked file.  ``mirror`` (a
base URL: ``https://``, ``http://`` or ``file://``) fetches ``MIRROR/<path in the data
directory>`` instead of upstream, for sites without internet.
"""

from __future__ import annotations

import gzip
import hashlib
import http.client
import json
import os
import shutil
import sys
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from .errors import HpcoptError, closest

CATALOGUE = Path(__file__).resolve().parent / "data_catalogue.json"
BLOCK = 1 << 16
TIMEOUT_S = 60.0  # a connection that hears nothing for this long is a failed download


class DataFetchError(HpcoptError):
    """A download that failed, or a file whose checksum does not match the catalogue."""


class HostUnreachable(DataFetchError):
    """The host of a download cannot be reached (no network, a name that does not resolve, a
    refused connection): ``fetch`` stops there, as every further file would fail the same."""


def mirror_url(mirror: str | None) -> str | None:
    """``--mirror`` as a base URL: an http(s):// or file:// URL as it is, a folder as its
    file:// URL; anything else is an ``HpcoptError`` (a usage error, before any download)."""
    if not mirror:
        return None
    scheme = urllib.parse.urlparse(mirror).scheme
    if "://" in mirror:
        if scheme not in ("http", "https", "file"):
            raise HpcoptError(f"--mirror {mirror}: expected an http://, https:// or file:// "
                              "URL, or a folder")
        return mirror
    folder = Path(mirror).expanduser()
    if not folder.is_dir():
        raise HpcoptError(f"--mirror {mirror}: no such folder (a mirror is a copy of a data "
                          "directory: a folder, or an http://, https:// or file:// URL)")
    return folder.resolve().as_uri()


@dataclass(frozen=True)
class DataFile:
    """One file of a data set (see the module docstring)."""

    dataset: str
    path: str
    url: str
    size: int
    sha256: str
    upstream_size: int | None = None
    upstream_sha256: str | None = None
    derive: str | None = None

    @property
    def compressed_here(self) -> bool:
        """Upstream has it plain; the data directory keeps it gzip-compressed."""
        return self.derive == "gzip"


@dataclass(frozen=True)
class DataSet:
    name: str
    title: str
    kind: str
    licence: str
    citation: str
    used_by: str
    files: tuple[DataFile, ...] = field(default=())
    main: str | None = None  # the file its name stands for, when it has several

    @property
    def main_file(self) -> DataFile | None:
        """The file the data set's name stands for as an input: its only file, or ``main``."""
        if len(self.files) == 1:
            return self.files[0]
        return next((f for f in self.files if f.path == self.main), None)

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)


@cache
def catalogue() -> dict[str, DataSet]:
    """The data sets by name, in catalogue order."""
    raw = json.loads(CATALOGUE.read_text(encoding="utf-8"))
    out = {}
    for d in raw["datasets"]:
        files = tuple(DataFile(d["name"], **f) for f in d["files"])
        out[d["name"]] = DataSet(d["name"], d["title"], d["kind"], d["licence"], d["citation"],
                                 d.get("used_by", ""), files, d.get("main"))
    return out


def by_path() -> dict[str, DataFile]:
    return {f.path: f for d in catalogue().values() for f in d.files}


def dataset_of(path: str) -> str | None:
    """The name of the data set that holds ``path`` (relative to the data directory)."""
    f = by_path().get(str(path).replace(os.sep, "/"))
    return None if f is None else f.dataset


def named_file(name: str) -> str | None:
    """The data-directory path an input ``name`` stands for: a data set name (its only or
    main file), ``NAME/FILE`` (a file of that data set by its file name, ``.gz`` and the
    format suffix optional) or a catalogue path; None when ``name`` is none of these.  A data
    set of several files without a main one is an ``HpcoptError`` listing how to name one."""
    name = str(name).replace(os.sep, "/").rstrip("/")
    sets = catalogue()
    if name in by_path():
        return name
    if name in sets:
        main = sets[name].main_file
        if main is None:
            files = sets[name].files
            raise HpcoptError(f"data set {name!r} has {len(files)} files; name one as "
                              f"{name}/FILE, e.g. {name}/{Path(files[0].path).name} (hpcopt "
                              f"data list {name} lists them)")
        return main.path
    head, _, tail = name.partition("/")
    if head in sets and tail:
        for f in sets[head].files:
            base = Path(f.path).name
            stem = base[:-3] if base.endswith(".gz") else base
            if tail in (base, stem, stem.rsplit(".", 1)[0]):
                return f.path
        raise HpcoptError(f"data set {head!r} has no file {tail!r} (hpcopt data list {head} "
                          "lists them)" + closest(tail, [Path(f.path).name
                                                         for f in sets[head].files]))
    return None


def select(names) -> list[DataFile]:
    """The files named by data-set names or data-directory paths (in order, once each)."""
    sets, paths = catalogue(), by_path()
    out: dict[str, DataFile] = {}
    for name in names:
        if name in sets:
            out.update((f.path, f) for f in sets[name].files)
        elif name.rstrip("/") in paths:
            out[name.rstrip("/")] = paths[name.rstrip("/")]
        else:
            under = [f for p, f in paths.items() if p.startswith(name.rstrip("/") + "/")]
            if not under:
                raise HpcoptError(f"unknown data set {name!r}: see 'hpcopt data list'."
                                  + closest(name, sets))
            out.update((f.path, f) for f in under)
    return list(out.values())


# -- checking ------------------------------------------------------------------------------

def _sha256_file(path: Path, *, decompress: bool = False) -> tuple[str, int]:
    h, n = hashlib.sha256(), 0
    opener = gzip.open if decompress else open
    with opener(path, "rb") as f:
        while block := f.read(BLOCK):
            h.update(block)
            n += len(block)
    return h.hexdigest(), n


def check(f: DataFile, path: Path) -> str | None:
    """None when ``path`` holds ``f`` (see the module docstring), else why not."""
    digest, size = _sha256_file(path)
    if size == f.size and digest == f.sha256:
        return None
    if f.compressed_here:
        try:
            content, n = _sha256_file(path, decompress=True)
        except (OSError, EOFError, gzip.BadGzipFile) as err:
            return f"not the catalogue's file and not readable gzip ({err})"
        if n == f.upstream_size and content == f.upstream_sha256:
            return None
        return (f"content sha256 {content[:12]}... ({n} bytes) is not the catalogue's "
                f"{f.upstream_sha256[:12]}... ({f.upstream_size} bytes)")
    return (f"sha256 {digest[:12]}... ({size} bytes) is not the catalogue's "
            f"{f.sha256[:12]}... ({f.size} bytes)")


@dataclass
class FileState:
    """What ``verify`` or ``fetch`` found or did for one file."""

    file: DataFile
    state: str  # ok, missing, bad, fetched, failed, unreachable
    detail: str = ""

    def row(self) -> dict:
        return {"dataset": self.file.dataset, "path": self.file.path, "state": self.state,
                "size": self.file.size, "detail": self.detail}


def verify(files, root: Path) -> list[FileState]:
    """Each of ``files`` under ``root``: ok, missing, or bad (why)."""
    out = []
    for f in files:
        path = root / f.path
        if not path.is_file():
            out.append(FileState(f, "missing"))
            continue
        why = check(f, path)
        out.append(FileState(f, "ok" if why is None else "bad", why or ""))
    return out


# -- fetching ------------------------------------------------------------------------------

def source_of(f: DataFile, mirror: str | None) -> tuple[str, int, str]:
    """``(url, size, sha256)`` of the bytes to download: the mirror's copy of the data
    directory's file, or the upstream file."""
    if mirror:
        return f"{mirror.rstrip('/')}/{urllib.parse.quote(f.path)}", f.size, f.sha256
    if f.compressed_here:
        return f.url, f.upstream_size, f.upstream_sha256
    return f.url, f.size, f.sha256


def _open(url: str, offset: int):
    """``(stream, offset it starts at, total size or None)``; file:// URLs seek."""
    parts = urllib.parse.urlparse(url)
    if parts.scheme == "file":
        path = Path(urllib.request.url2pathname(parts.path))
        try:
            stream = open(path, "rb")  # noqa: SIM115 - closed by the caller
        except OSError as err:
            raise DataFetchError(f"{url}: {err.strerror or err}") from None
        size = path.stat().st_size
        stream.seek(min(offset, size))
        return stream, min(offset, size), size
    if parts.scheme not in ("http", "https"):
        raise DataFetchError(f"{url}: expected an http://, https:// or file:// URL")
    request = urllib.request.Request(url, headers={"User-Agent": "hpcopt-data-fetch"})
    if offset:
        request.add_header("Range", f"bytes={offset}-")
    try:
        response = urllib.request.urlopen(request, timeout=TIMEOUT_S)  # noqa: S310
    except urllib.error.HTTPError as err:
        if err.code == 416 and offset:  # the range starts at the end: nothing more to read
            return _open(url, 0)
        raise DataFetchError(f"{url}: HTTP {err.code} {err.reason}") from None
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", None) or err
        if isinstance(reason, OSError):  # no answer from the host at all
            raise HostUnreachable(f"cannot reach {parts.hostname} ({reason}): without network "
                                  f"access, fetch from a copy of a data directory with "
                                  f"--mirror URL (https://, http://, file:// or a folder)") \
                from None
        raise DataFetchError(f"{url}: {reason}") from None
    start = offset if response.status == 206 else 0
    length = response.headers.get("Content-Length")
    total = start + int(length) if length and length.isdigit() else None
    return response, start, total


def download(url: str, part: Path, size: int, *, progress: bool = False,
             label: str = "") -> None:
    """Download ``url`` into ``part``, appending to what it already holds when the server
    honours the range (else from the start)."""
    have = part.stat().st_size if part.is_file() else 0
    if have > size:
        have = 0
    stream, start, _ = _open(url, have)
    part.parent.mkdir(parents=True, exist_ok=True)  # only once the source answered
    from tqdm.auto import tqdm

    try:
        with open(part, "ab" if start else "wb") as out, tqdm(
                total=size, initial=start, unit="B", unit_scale=True, desc=label,
                disable=None if progress else True,  # None: off unless stderr is a terminal
                leave=False, file=sys.stderr) as bar:
            if start:
                out.truncate(start)
                out.seek(start)
            while block := stream.read(BLOCK):
                out.write(block)
                bar.update(len(block))
    except (urllib.error.URLError, OSError, http.client.HTTPException) as err:
        if isinstance(err, OSError) and err.filename == str(part):
            raise DataFetchError(f"{part}: {err.strerror or err}") from None
        raise DataFetchError(f"{url}: {getattr(err, 'reason', None) or err!r} (run the same "
                             f"command again to resume)") from None
    finally:
        stream.close()
    got = part.stat().st_size
    if got < size:
        raise DataFetchError(f"{url}: the download stopped after {got} of {size} bytes (run "
                             f"the same command again to resume)")


def fetch_file(f: DataFile, root: Path, *, mirror: str | None = None, progress: bool = False,
               force: bool = False) -> FileState:
    """Fetch one file into ``root`` (skipped when already there and valid, unless
    ``force``); raises ``DataFetchError`` on a failed download or a checksum mismatch."""
    final = root / f.path
    if final.is_file() and not force and check(f, final) is None:
        return FileState(f, "ok", "already there")
    url, size, digest = source_of(f, mirror)
    plain = not mirror and f.compressed_here
    part = final.with_name((final.name[:-3] if plain else final.name) + ".part")
    download(url, part, size, progress=progress, label=Path(f.path).name)
    got, n = _sha256_file(part)
    if (got, n) != (digest, size):
        part.unlink()
        raise DataFetchError(f"{f.path}: the download from {url} has sha256 {got[:12]}... "
                             f"({n} bytes), expected {digest[:12]}... ({size} bytes); removed "
                             f"it (fetch again, or check the mirror)")
    if plain:  # upstream's plain file, checked: compress it as the data directory keeps it
        tmp = final.with_name(final.name + ".tmp")
        with open(part, "rb") as src, gzip.GzipFile(tmp, "wb", compresslevel=9, mtime=0) as out:
            shutil.copyfileobj(src, out, BLOCK)
        os.replace(tmp, final)
        part.unlink()
    else:
        os.replace(part, final)
    return FileState(f, "fetched", url)


def fetch(files, root: Path, *, mirror: str | None = None, progress: bool = False,
          force: bool = False, on_file=None) -> list[FileState]:
    """``fetch_file`` for each of ``files``; a failure is that file's state ``failed`` (with
    why) and the others go on, unless a host cannot be reached (``HostUnreachable``: that
    file's state is ``unreachable``, and the files after it are not tried).
    ``on_file(state)`` is called after each file."""
    out = []
    for f in files:
        try:
            state = fetch_file(f, root, mirror=mirror, progress=progress, force=force)
        except HostUnreachable as err:
            out.append(FileState(f, "unreachable", str(err)))
            if on_file is not None:
                on_file(out[-1])
            return out
        except DataFetchError as err:
            state = FileState(f, "failed", str(err))
        out.append(state)
        if on_file is not None:
            on_file(state)
    return out
