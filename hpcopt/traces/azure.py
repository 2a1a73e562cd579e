"""Azure v1 derived files: the VM arrivals behind the deferrable OSDEC workloads
(``hpcopt.workloads.osdec``).

Azure Public Dataset V1 ``vmtable`` (CC-BY-4.0), binned by huaweicloud/trace_generation_rnn.
A split is a flavor file (``v1.train.txt.gz``, ``v1.dev.txt.gz``) and, for dev, a
lifetime file (``v1.dev.c2100000.txt.gz``) of the same shape: one line per 300 s bin,
``<t_seconds> <tokens>``, tokens comma-separated, each tenant batch closed by ``|``.  A
flavor token is a letter a..p -> (vCPUs, GB) by ``maps/flav_map.txt`` (cores 1, 2, 4, 8,
16); a lifetime token is ``U<bin>`` (uncensored) or ``C<bin>`` (censored at the split's
end, 2.1e6 s) with bins by ``maps/v1.interval_map.txt``.  The two files pair token by
token (same bins, same batch sizes: checked).  Either file may be given; the other is found
beside it by name; ``max_lines`` reads only a file's first lines.  A malformed line
is a one-line ``TraceError`` naming file, line and field.
"""

from __future__ import annotations

import gzip
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..datadir import resolve_input
from ..errors import TraceError

BIN_SECONDS = 300  # one line per 300 s bin


@dataclass(frozen=True)
class AzureLine:
    """One line of an Azure v1 derived file: ``t`` (seconds), its 1-based line number, and
    its tokens per tenant batch (flavor letters, or lifetime tokens ``U<bin>``/``C<bin>``)."""

    lineno: int
    t: int
    batches: tuple


def _open_text(path: Path):
    with open(path, "rb") as fh:
        magic = fh.read(2)
    return gzip.open(path, "rt", encoding="ascii", newline="") if magic == b"\x1f\x8b" \
        else open(path, encoding="ascii", newline="")


def read_azure_lines(path, *, max_lines: int | None = None):
    """Yield the ``AzureLine`` of each line of an Azure v1 derived file (gzip or plain text).

    A line is ``<t_seconds> <tokens>``: tokens separated by ``,``, each tenant batch closed by
    a ``|`` token.  Lines are 300 s apart.  A malformed line is a ``TraceError`` naming the
    file, the line and the field.
    """
    path = Path(path)
    name = path.name
    prev = None
    try:
        fh = _open_text(path)
    except OSError as err:
        raise TraceError(f"{path}: cannot read file ({err.strerror})") from None
    with fh:
        try:
            for lineno, raw in enumerate(fh, 1):
                if max_lines is not None and lineno > max_lines:
                    return
                line = raw.rstrip("\r\n")
                if not line.strip():
                    continue
                head, sep, rest = line.partition(" ")
                try:
                    t = int(head)
                except ValueError:
                    t = -1
                if t < 0 or t % BIN_SECONDS:
                    raise TraceError(f"{name}:{lineno}: field 1 (bin time, s): expected a "
                                     f"multiple of {BIN_SECONDS} >= 0, got {head[:20]!r}")
                if prev is not None and t != prev + BIN_SECONDS:
                    raise TraceError(f"{name}:{lineno}: field 1 (bin time, s): expected "
                                     f"{prev + BIN_SECONDS} (bins are {BIN_SECONDS} s apart), "
                                     f"got {t}")
                prev = t
                tokens = rest.strip().split(",") if rest.strip() else []
                if not sep or not tokens or tokens[-1] != "|":
                    raise TraceError(f"{name}:{lineno}: field 2 (tokens): expected "
                                     "comma-separated tokens ending with '|', got "
                                     f"{rest[-20:]!r}")
                batches, cur = [], []
                for k, tok in enumerate(tokens, 1):
                    if tok == "|":
                        if not cur:
                            raise TraceError(f"{name}:{lineno}: token {k}: empty tenant batch "
                                             "(two '|' in a row)")
                        batches.append(tuple(cur))
                        cur = []
                    elif not tok or tok != tok.strip():
                        raise TraceError(f"{name}:{lineno}: token {k}: empty or padded token "
                                         f"{tok!r}")
                    else:
                        cur.append(tok)
                yield AzureLine(lineno, t, tuple(batches))
        except (UnicodeDecodeError, EOFError, OSError) as err:
            raise TraceError(f"{path}: not a readable text or gzip file ({err})") from None


def _file_kind(path: Path) -> str:
    """``"flavors"`` or ``"lifetimes"`` from the first token of the file."""
    for line in read_azure_lines(path, max_lines=1):
        tok = line.batches[0][0]
        return "lifetimes" if tok[:1] in ("U", "C") and tok[1:].isdigit() else "flavors"
    raise TraceError(f"{path}: empty file")


def split_prefix(path: Path) -> str:
    """``v1.dev`` for ``v1.dev.txt.gz`` and for ``v1.dev.c2100000.txt.gz``."""

    name = re.sub(r"\.txt(\.gz)?$", "", path.name)
    return re.sub(r"\.c\d+$", "", name)


def _map_lines(path: Path):
    """(line number, line) of the non-blank lines of an Azure map file."""
    try:
        text = path.read_text()
    except OSError as err:
        raise TraceError(f"{path}: cannot read file ({err.strerror})") from None
    return [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]


def flavor_cores(path) -> dict:
    """``maps/flav_map.txt``: flavor letter -> vCPU count (lines ``<vcpus>,<memory GB>
    <letter>``)."""
    path = Path(path)
    out = {}
    for lineno, line in _map_lines(path):
        fields = line.split()
        try:
            cores = int(fields[0].split(",")[0])
            if len(fields) != 2 or cores < 1:
                raise ValueError
        except (ValueError, IndexError):
            raise TraceError(f"{path.name}:{lineno}: expected '<vcpus>,<memory GB> <flavor>', "
                             f"got {line[:40]!r}") from None
        out[fields[1]] = cores
    return out


def lifetime_bins(path) -> dict:
    """``maps/v1.interval_map.txt``: lifetime bin -> the sorted lifetimes (s) it holds (lines
    ``<seconds> <bin>``; bins 0..12 hold one 300 s step each, wider bins 12, 288 and 2,880)."""
    path = Path(path)
    bins: dict = {}
    for lineno, line in _map_lines(path):
        try:
            seconds, b = (int(x) for x in line.split())
            if seconds < 0 or b < 0:
                raise ValueError
        except ValueError:
            raise TraceError(f"{path.name}:{lineno}: expected '<seconds> <bin>', "
                             f"got {line[:40]!r}") from None
        bins.setdefault(b, []).append(seconds)
    return {b: np.array(sorted(v), dtype=np.int64) for b, v in bins.items()}


def _parse_lifetime(tok: str, where: str, bins: dict) -> tuple[int, bool]:
    if tok[:1] not in ("U", "C") or not tok[1:].isdigit() or int(tok[1:]) not in bins:
        raise TraceError(f"{where}: expected a lifetime token U<bin> or C<bin> with a bin of "
                         f"the interval map (0..{max(bins)}), got {tok!r}")
    return int(tok[1:]), tok[0] == "C"


@dataclass(frozen=True)
class AzureVMs:
    """The VMs of an Azure v1 derived split, one entry per VM in file order (read from the
    first line up to a last bin): arrival bin (``t // 300``), the 1-based line number, the
    index within the line, the tenant batch number (global), the flavor letter, the cores, the
    lifetime bin and whether it is censored (``None`` when the lifetimes are drawn)."""

    source: str
    first_t: int
    bin: np.ndarray
    lineno: np.ndarray
    index: np.ndarray
    batch: np.ndarray
    flavor: np.ndarray
    cores: np.ndarray
    life_bin: np.ndarray | None
    censored: np.ndarray | None

    @property
    def n(self) -> int:
        return int(self.bin.size)


def read_azure_vms(path, *, lifetimes=None, maps=None, max_lines: int | None = None,
                   progress: bool = False) -> AzureVMs:
    """The VMs of a flavor file (``v1.train.txt.gz``, ``v1.dev.txt.gz``) with, when
    ``lifetimes`` is the lifetime file of the same split (``v1.dev.c2100000.txt.gz``), their
    lifetime bins, paired token by token (same bins, same batches; checked).  ``maps`` is the
    folder of ``flav_map.txt`` (default ``maps/`` beside the file).  Only the first
    ``max_lines`` lines are read when given."""
    path = Path(path)
    maps = Path(maps) if maps is not None else path.parent / "maps"
    cores_of = flavor_cores(maps / "flav_map.txt")
    bins = lifetime_bins(maps / "v1.interval_map.txt") if lifetimes is not None else None
    cols: dict = {k: [] for k in ("bin", "lineno", "index", "batch", "flavor", "cores",
                                  "life_bin", "censored")}
    life_iter = read_azure_lines(lifetimes, max_lines=max_lines) if lifetimes else None
    batch_no = 0
    first_t = None
    lines = read_azure_lines(path, max_lines=max_lines)
    if progress:
        from tqdm.auto import tqdm

        lines = tqdm(lines, total=max_lines, unit=" bins", desc=f"reading {path.name}",
                     leave=False, disable=None)  # off where stderr is not a terminal
    for line in lines:
        first_t = line.t if first_t is None else first_t
        life = next(life_iter, None) if life_iter is not None else None
        if life_iter is not None:
            lname = Path(lifetimes).name
            if life is None or life.t != line.t or \
                    [len(b) for b in life.batches] != [len(b) for b in line.batches]:
                raise TraceError(f"{lname}:{line.lineno}: does not pair with {path.name}:"
                                 f"{line.lineno} (expected bin {line.t} with batches of "
                                 f"{[len(b) for b in line.batches][:8]} VMs)")
        k = 0
        for j, batch in enumerate(line.batches):
            for m, flavor in enumerate(batch):
                if flavor not in cores_of:
                    raise TraceError(f"{path.name}:{line.lineno}: VM {k} (flavor): unknown "
                                     f"flavor {flavor!r}; expected one of "
                                     f"{''.join(sorted(cores_of))} (maps/flav_map.txt)")
                cols["bin"].append(line.t // BIN_SECONDS)
                cols["lineno"].append(line.lineno)
                cols["index"].append(k)
                cols["batch"].append(batch_no)
                cols["flavor"].append(flavor)
                cols["cores"].append(cores_of[flavor])
                if life is not None:
                    b, c = _parse_lifetime(life.batches[j][m],
                                           f"{Path(lifetimes).name}:{line.lineno}: VM {k} "
                                           "(lifetime)", bins)
                    cols["life_bin"].append(b)
                    cols["censored"].append(c)
                k += 1
            batch_no += 1
    if first_t is None:
        raise TraceError(f"{path}: no VM read")
    arr = {k: np.array(v, dtype=object if k == "flavor" else
                       (bool if k == "censored" else np.int64)) for k, v in cols.items()}
    paired = life_iter is not None
    return AzureVMs(str(path), first_t, arr["bin"], arr["lineno"], arr["index"], arr["batch"],
                    arr["flavor"].astype(str), arr["cores"],
                    arr["life_bin"] if paired else None, arr["censored"] if paired else None)



def resolve_azure_pair(path, lifetimes=None) -> tuple[Path, Path | None, str]:
    """The flavor file, the lifetime file and how lifetimes are used (``"paired"``: the same
    split's lifetime file, token by token; ``"empirical"``: drawn per flavor from another
    split's pair).  ``path`` may name either file of a split; a lifetime file found beside a
    flavor file with the same prefix (``v1.dev.txt.gz`` -> ``v1.dev.c*.txt*``) is paired.
    Either may be a data set name (``azure-v1``, ``azure-v1/v1.train``:
    ``hpcopt.datadir.resolve_input``)."""
    path = Path(resolve_input(path, "Azure file"))
    if lifetimes is not None:
        lifetimes = resolve_input(lifetimes, "lifetime file")
    if not path.is_file():
        raise TraceError(f"{path}: no such file")
    if _file_kind(path) == "lifetimes":
        prefix = split_prefix(path)
        flav = sorted(p for p in path.parent.glob(prefix + ".txt*") if p.is_file())
        if not flav:
            raise TraceError(f"{path}: a lifetime file; its flavor file {prefix}.txt[.gz] is "
                             "not beside it")
        if lifetimes is None:
            return flav[0], path, "paired"
        path = flav[0]
    if lifetimes is not None:
        lifetimes = Path(lifetimes)
        if not lifetimes.is_file():
            raise TraceError(f"{lifetimes}: no such file")
        if _file_kind(lifetimes) != "lifetimes":
            raise TraceError(f"{lifetimes}: not a lifetime file (expected U<bin>/C<bin> tokens)")
        same = split_prefix(lifetimes) == split_prefix(path)
        return path, lifetimes, "paired" if same else "empirical"
    prefix = split_prefix(path)
    own = sorted(p for p in path.parent.glob(prefix + ".c*.txt*") if p.is_file())
    if own:
        return path, own[0], "paired"
    other = sorted(p for p in path.parent.glob("*.c*.txt*") if p.is_file())
    if not other:
        raise TraceError(f"{path}: no lifetime file (*.cNNNN.txt[.gz]) beside it; pass "
                         "lifetimes=")
    return path, other[0], "empirical"

