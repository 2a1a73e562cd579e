"""The real data sets by name: the catalogue, ``hpcopt data list | fetch | verify``.

Every download goes to a loopback HTTP server over the data directory (or a file:// URL); no test
reaches the internet.  The server honours range requests unless told not to, can cut a
response short (an interrupted download) and can serve wrong bytes (a checksum mismatch).
"""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from hpcopt import datasets
from hpcopt.datadir import ENV, data_path, fetch_dir, user_data_dir
from hpcopt.datasets import (
    DataFetchError,
    by_path,
    catalogue,
    fetch_file,
    named_file,
    select,
    verify,
)
from hpcopt.errors import DataNotFoundError, HpcoptError
from hpcopt.workloads import AZURE, KOPANSKI

from .conftest import REPO, SHARED_DATA, missing_data, needs_data

HPCOPT = str(Path(sys.executable).with_name("hpcopt"))
KOP_GZ = by_path()[KOPANSKI]  # upstream plain JSON, kept gzip-compressed here
needs_kopanski = needs_data(KOPANSKI)


class _Server:
    """A loopback HTTP server: ``files`` maps URL paths to bytes (default: the data directory)."""

    def __init__(self, files: dict[str, bytes] | None = None, *, ranges: bool = True,
                 cut_at: int | None = None):
        self.files, self.ranges, self.cut_at = files, ranges, cut_at
        self.requests: list[tuple[str, str | None]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                rng = self.headers.get("Range")
                outer.requests.append((self.path, rng))
                rel = self.path.lstrip("/")
                if outer.files is not None:
                    body = outer.files.get(rel)
                else:
                    f = SHARED_DATA / rel
                    body = f.read_bytes() if f.is_file() else None
                if body is None:
                    self.send_error(404)
                    return
                start = 0
                if rng and outer.ranges:
                    start = int(re.match(r"bytes=(\d+)-", rng).group(1))
                    self.send_response(206)
                    self.send_header("Content-Range",
                                     f"bytes {start}-{len(body) - 1}/{len(body)}")
                else:
                    self.send_response(200)
                self.send_header("Content-Length", str(len(body) - start))
                self.end_headers()
                out = body[start:]
                if outer.cut_at is not None:  # the connection drops part-way
                    out = out[:outer.cut_at]
                    outer.cut_at = None
                self.wfile.write(out)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def _cli(*args, env=None, timeout=120):
    full = {k: v for k, v in os.environ.items() if k != ENV}
    return subprocess.run([HPCOPT, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env={**full, **(env or {})})


# -- the catalogue -------------------------------------------------------------------------

def test_catalogue_covers_the_defaults_and_the_docs():
    paths = by_path()
    # the defaults' files (hpcopt.workloads) and the azure reader's companions
    for rel in (KOPANSKI, f"{AZURE}/v1.dev.txt.gz", f"{AZURE}/v1.train.txt.gz",
                f"{AZURE}/v1.dev.c2100000.txt.gz", f"{AZURE}/maps/flav_map.txt",
                f"{AZURE}/maps/v1.interval_map.txt"):
        assert rel in paths, rel
    # every data set the docs' commands read by name (hpcopt simulate kth-sp2, --trace
    # theta-2022, wf-bwa/FILE) names files of the catalogue, and every $HPCOPT_DATA/... file
    named, files = set(), set()
    for doc in [REPO / "README.md", *(REPO / "docs").glob("*.md")]:
        text = doc.read_text()
        files |= set(re.findall(r"\$HPCOPT_DATA/(\S+?\.gz)\b", text))
        named |= set(re.findall(r"^\$ .*?hpcopt (?:simulate|workflow|workload osdec) "
                                r"([a-z][\w.-]*(?:/[\w.-]+)?)", text, re.M))
        named |= set(re.findall(r"--trace ([a-z][\w.-]*(?:/[\w.-]+)?)", text))
    named = {n for n in named if n.split("/")[0] in catalogue()}
    assert {"kth-sp2", "theta-2022", "azure-v1"} <= named, named
    assert all(named_file(n) in paths for n in named), named
    assert files <= set(paths), files - set(paths)
    for d in catalogue().values():
        assert d.licence and d.citation and d.files
        assert d.main is None or d.main_file is not None, d.name  # main: one of its files
        for f in d.files:
            assert f.url.startswith("https://raw.githubusercontent.com/")
            assert re.fullmatch(r"[0-9a-f]{64}", f.sha256) and f.size > 0
            assert re.search(r"/[0-9a-f]{40}/", f.url)  # pinned to a commit
            if f.compressed_here:  # derived here: its upstream file and how
                assert f.path.endswith(".gz") and not f.url.endswith(".gz")
                assert re.fullmatch(r"[0-9a-f]{64}", f.upstream_sha256) and f.upstream_size


def test_docs_checksums_are_the_catalogues():
    """docs/data.md's table of the examples' traces: each path with the catalogue's hash."""
    text = (REPO / "docs" / "data.md").read_text()
    rows = re.findall(r"^\| `([\w-]+)` \| `([^`]+)` \| .* \| `([0-9a-f]{64})` \|$", text, re.M)
    assert len(rows) >= 7
    for name, path, digest in rows:
        f = by_path()[path]
        assert (f.dataset, f.sha256) == (name, digest), path


def test_catalogue_matches_every_file_of_the_reference_copy():
    """Every real input of the docs, defaults and benchmarks lives in the reference copy of
    the data directory: the catalogue names each of its files, with the size and hash it has
    there (a data directory with only some data sets is not a reference copy: skipped)."""
    if missing_data(*by_path()) is not None:
        pytest.skip(f"needs every data set in the data directory {SHARED_DATA}: hpcopt data "
                    "fetch --all")
    present = {str(p.relative_to(SHARED_DATA)) for p in SHARED_DATA.rglob("*")
               if p.is_file() and p.name != "PROVENANCE.md"}
    assert present == set(by_path())
    states = verify(by_path().values(), SHARED_DATA)
    assert [s.row() for s in states if s.state != "ok"] == []


def test_unknown_name_is_one_line():
    with pytest.raises(HpcoptError, match="unknown data set 'kopansky-bb'.*Did you mean "
                                          "'kopanski-bb'"):
        select(["kopansky-bb"])
    assert [f.path for f in select([KOPANSKI])] == [KOPANSKI]
    assert len(select(["burst_buffer/kopanski_kth_batsim"])) == 3  # a folder of the catalogue


def test_missing_default_says_how_to_fetch_it(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV, str(tmp_path))
    with pytest.raises(DataNotFoundError, match="'hpcopt data fetch kopanski-bb' downloads it"):
        data_path(KOPANSKI, "a test")


def test_fetch_dir_and_user_default(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert user_data_dir() == tmp_path / "hpcopt" / "data" == fetch_dir()
    monkeypatch.setenv(ENV, str(tmp_path / "mine"))
    assert fetch_dir() == tmp_path / "mine"


# -- fetching ------------------------------------------------------------------------------

@needs_kopanski
def test_fetch_from_a_mirror_then_verify(tmp_path):
    with _Server() as server:
        states = datasets.fetch(select(["kopanski-bb"]), tmp_path, mirror=server.url)
    assert [s.state for s in states] == ["fetched"] * 3
    for s in states:
        assert (tmp_path / s.file.path).read_bytes() == (SHARED_DATA / s.file.path).read_bytes()
    assert not list(tmp_path.rglob("*.part"))
    assert {s.state for s in verify(select(["kopanski-bb"]), tmp_path)} == {"ok"}
    # a second fetch finds them there and downloads nothing
    with _Server() as server:
        again = datasets.fetch(select(["kopanski-bb"]), tmp_path, mirror=server.url)
        assert server.requests == []
    assert [s.state for s in again] == ["ok"] * 3


@needs_kopanski
def test_upstream_plain_file_is_checked_then_compressed(tmp_path, monkeypatch):
    """Upstream has the Kopanski workload as plain JSON: the download is checked against the
    upstream hash, then gzip-compressed under the data directory's name."""
    raw = gzip.decompress((SHARED_DATA / KOPANSKI).read_bytes())
    with _Server({"kop.json": raw}) as server:
        f = _with_url(KOP_GZ, f"{server.url}/kop.json")
        state = fetch_file(f, tmp_path)
    final = tmp_path / KOPANSKI
    assert state.state == "fetched" and gzip.decompress(final.read_bytes()) == raw
    assert datasets.check(KOP_GZ, final) is None  # content matches upstream
    assert not list(tmp_path.rglob("*.part")) and not list(tmp_path.rglob("*.tmp"))


@needs_kopanski
@pytest.mark.parametrize("ranges", [True, False])
def test_interrupted_download_resumes(tmp_path, ranges):
    """A connection cut part-way leaves only NAME.part (never the final name); the next fetch
    resumes it with a range request, or starts over when the server ignores ranges."""
    raw = gzip.decompress((SHARED_DATA / KOPANSKI).read_bytes())
    final = tmp_path / KOPANSKI
    with _Server({"kop.json": raw}, ranges=ranges, cut_at=100_000) as server:
        f = _with_url(KOP_GZ, f"{server.url}/kop.json")
        with pytest.raises(DataFetchError, match="run the same command again to resume|"
                                                  "sha256"):
            fetch_file(f, tmp_path)
        assert not final.exists()
        part = final.with_name(final.name[:-3] + ".part")
        if part.exists():
            assert part.stat().st_size == 100_000
        state = fetch_file(f, tmp_path)
        assert state.state == "fetched" and gzip.decompress(final.read_bytes()) == raw
        if ranges:
            assert server.requests[-1][1] == "bytes=100000-"
    assert not list(tmp_path.rglob("*.part"))


def test_checksum_mismatch_leaves_nothing_under_the_final_name(tmp_path):
    f = by_path()[KOPANSKI]
    with _Server({KOPANSKI: b"x" * f.size}) as server:  # the right size, wrong bytes
        with pytest.raises(DataFetchError, match=r"has sha256 .* expected 3fe6dc6c4609"):
            fetch_file(f, tmp_path, mirror=server.url)
    assert not (tmp_path / KOPANSKI).exists() and not list(tmp_path.rglob("*.part"))


def test_file_url_mirror_and_a_bad_file_found_by_verify(tmp_path):
    """A file:// mirror (a copy of a data directory on a shared disk) and what verify says of
    a file changed after it was fetched."""
    reason = missing_data("hpc_swf/pwa/NASA-iPSC-1993-3.1-cln.swf.gz")
    if reason:
        pytest.skip(reason)
    dest = tmp_path / "data"
    states = datasets.fetch(select(["nasa-ipsc"]), dest, mirror=SHARED_DATA.as_uri())
    assert [s.state for s in states] == ["fetched"]
    path = dest / states[0].file.path
    path.write_bytes(path.read_bytes()[:-1])
    [state] = verify(select(["nasa-ipsc"]), dest)
    assert state.state == "bad" and "is not the catalogue's" in state.detail


# -- the command ---------------------------------------------------------------------------

@needs_kopanski
def test_cli_list_fetch_verify(tmp_path):
    dest = tmp_path / "data"
    env = {"XDG_DATA_HOME": str(tmp_path / "xdg")}
    with _Server() as server:
        proc = _cli("data", "fetch", "kopanski-bb", "--to", dest, "--mirror", server.url,
                    "--no-progress", env=env)
    assert proc.returncode == 0, proc.stderr
    assert "3 fetched, 0 already there, 0 failed" in proc.stdout
    proc = _cli("data", "verify", "kopanski-bb", "azure-v1", "--data-dir", dest, env=env)
    assert proc.returncode == 1 and "3 files ok, 0 bad, 7 missing" in proc.stdout
    assert proc.stderr.count("\n") == 1
    proc = _cli("data", "verify", "--data-dir", dest, env=env)
    assert proc.returncode == 0 and "3 files ok, 0 bad" in proc.stdout
    proc = _cli("data", "list", "--json", "--data-dir", dest, env=env)
    rows = {r["name"]: r for r in map(json.loads, proc.stdout.splitlines())}
    assert rows["kopanski-bb"]["here"] == "3/3" and rows["azure-v1"]["here"] == "0/7"
    assert "S1-S7" in rows["kopanski-bb"]["used_by"]
    # the default (the per-user directory) is where a simulate then finds the pool
    with _Server() as server:
        proc = _cli("data", "fetch", "kopanski-bb", "--mirror", server.url, "--no-progress",
                    env=env)
    assert proc.returncode == 0 and (tmp_path / "xdg" / "hpcopt" / "data" / KOPANSKI).is_file()


def test_cli_errors_are_one_line(tmp_path):
    env = {"XDG_DATA_HOME": str(tmp_path / "xdg")}
    for args, pattern in [(("data", "fetch"), "name the data sets to fetch"),
                          (("data", "fetch", "nosuch"), "unknown data set 'nosuch'"),
                          (("data", "verify", "--dir", tmp_path / "none"), "no such directory")]:
        proc = _cli(*args, env=env)
        assert proc.returncode == 2 and re.search(pattern, proc.stderr), proc.stderr
        assert proc.stderr.count("\n") == 1
    with _Server({}) as server:  # a mirror without the file: that file failed, exit 1
        proc = _cli("data", "fetch", "nasa-ipsc", "--to", tmp_path, "--mirror", server.url,
                    "--no-progress", env=env)
    assert proc.returncode == 1 and "HTTP 404" in proc.stderr


def _with_url(f, url):
    from dataclasses import replace

    return replace(f, url=url)


def test_offline_fetch_is_one_line_naming_the_host_and_leaves_nothing(tmp_path, monkeypatch):
    """A host that does not answer (a closed port here, as no network would be): one line
    naming the host and --mirror, exit 1, no folder created, the files counted."""
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dest = tmp_path / "data"
    proc = _cli("data", "fetch", "kth-sp2", "nasa-ipsc", "--to", dest, "--mirror",
                f"http://127.0.0.1:{port}", "--no-progress")
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert "cannot reach 127.0.0.1" in proc.stderr and "--mirror" in proc.stderr
    assert "2 of 2 files not fetched" in proc.stderr
    assert not dest.exists()


def test_a_folder_is_a_mirror_and_a_bad_mirror_is_a_usage_error(tmp_path):
    reason = missing_data("hpc_swf/pwa/NASA-iPSC-1993-3.1-cln.swf.gz")
    if reason:
        pytest.skip(reason)
    proc = _cli("data", "fetch", "nasa-ipsc", "--to", tmp_path / "d", "--mirror", SHARED_DATA,
                "--no-progress")
    assert proc.returncode == 0 and "1 fetched, 0 already there, 0 failed" in proc.stdout
    assert "fetching 1 file (" in proc.stdout
    for bad in (tmp_path / "none", "ftp://host/data"):
        proc = _cli("data", "fetch", "nasa-ipsc", "--to", tmp_path / "e", "--mirror", bad)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert "--mirror" in proc.stderr
    assert not (tmp_path / "e").exists()
    # verify names the data set to fetch again, without --force
    f = tmp_path / "d" / "hpc_swf/pwa/NASA-iPSC-1993-3.1-cln.swf.gz"
    f.write_bytes(f.read_bytes()[:-1])
    proc = _cli("data", "verify", "--dir", tmp_path / "d")
    assert proc.returncode == 1 and "'hpcopt data fetch nasa-ipsc --to" in proc.stderr
    assert "--force" not in proc.stderr and "NAME" not in proc.stderr
