"""The vectorised SWF parse of plain-integer records gives np.loadtxt's table, bit for bit,
and declines (None) every record that is not 18 plain integers."""

from __future__ import annotations

import gzip
import random

import numpy as np
import pytest

from hpcopt.traces import swf

from .conftest import shared_file


def _loadtxt(lines):
    return np.loadtxt(lines, dtype=np.float64, comments=None, ndmin=2)


def _token(rng):
    k = rng.random()
    if k < 0.3:
        return str(rng.randrange(-5, 100))
    if k < 0.6:
        return str(rng.randrange(0, 10 ** rng.randrange(1, 19)))
    if k < 0.75:
        return "-" + str(rng.randrange(1, 10 ** rng.randrange(1, 18)))
    if k < 0.85:
        return "0" * rng.randrange(1, 4) + str(rng.randrange(0, 1000))
    return str(rng.randrange(2**53 - 5, 2**53 + 5))


def test_plain_integer_records_equal_loadtxt():
    rng = random.Random(0)
    accepted = 0
    for _ in range(400):
        lines = [rng.choice([" ", "  ", "\t"]).join(_token(rng) for _ in range(18))
                 for _ in range(rng.randrange(1, 30))]
        got = swf._swf_plain_ints(lines)
        if got is not None:
            accepted += 1
            assert got.tobytes() == _loadtxt(lines).tobytes()
    assert accepted > 300


@pytest.mark.parametrize("bad", ["1.5", "+5", "-0", "1e3", "--1", "5-", "-", "nan",
                                 "9" * 19, "x"])
def test_other_tokens_are_left_to_loadtxt(bad):
    fields = ["1"] * 18
    fields[5] = bad
    assert swf._swf_plain_ints([" ".join(fields)]) is None
    assert swf._swf_plain_ints([" ".join(["1"] * 17)]) is None
    assert swf._swf_plain_ints([" ".join(["1"] * 19)]) is None
    assert swf._swf_plain_ints([" ".join(["1"] * 17), " ".join(["1"] * 19)]) is None


def test_blocks_cover_long_files(monkeypatch):
    monkeypatch.setattr(swf, "_CHUNK", 7)
    rng = random.Random(1)
    lines = [" ".join(_token(rng) for _ in range(18)) for _ in range(50)]
    lines = [ln for ln in lines if "-0 " not in ln + " "]
    got = swf._swf_plain_ints(lines)
    assert got is not None and got.tobytes() == _loadtxt(lines).tobytes()


@pytest.mark.parametrize("relpath", ["hpc_swf/pwa/KTH-SP2-1996-2.1-cln.swf.gz",
                                     "hpc_swf/alcf/theta_2022.swf.gz"])
def test_real_traces_equal_loadtxt(relpath):
    text = gzip.decompress(shared_file(relpath).read_bytes()).decode("latin-1")
    data = [s.strip() for s in text.split("\n") if s.strip() and s.strip()[0] != ";"]
    got = swf._swf_plain_ints(data)
    assert got is not None and got.tobytes() == _loadtxt(data).tobytes()
