"""OSDEC deferrable workloads from the Azure v1 derived files (issue #13, "Workloads"):
format parsing against an independent reading of raw lines, the capacity definition, job
fields, the deferrable share, the Table 4 synthetic mixes, the real-time variant,
determinism, one-line errors and the CLI end to end (the file solves with osdec-greedy)."""

from __future__ import annotations

import gzip
import json
from collections import Counter

import numpy as np
import pytest

from hpcopt.cli import main
from hpcopt.errors import TraceError
from hpcopt.instances import instance_from_dict, load_instance
from hpcopt.traces.azure import read_azure_vms
from hpcopt.workloads.osdec import (
    AZURE,
    CORE_CASES,
    DURATION_CASES,
    deferrable_model,
    deferrable_workload,
    save_workload,
)

from .conftest import shared_file

CORES = {"a": 1, "b": 1, "c": 1, "d": 16, "e": 2, "f": 2, "g": 2, "h": 2, "i": 4, "j": 4,
         "k": 4, "l": 4, "m": 8, "n": 8, "o": 8, "p": 8}  # maps/flav_map.txt, by hand


@pytest.fixture(scope="module")
def dev():
    return shared_file(f"{AZURE}/v1.dev.txt.gz")


@pytest.fixture(scope="module")
def raw(dev):
    """The first 40 lines of the dev flavor and lifetime files, split by hand:
    ``[(t, [flavor, ...], [lifetime token, ...], [batch sizes])]``."""
    life = shared_file(f"{AZURE}/v1.dev.c2100000.txt.gz")
    out = []
    with gzip.open(dev, "rt") as f, gzip.open(life, "rt") as g:
        for _, a, b in zip(range(40), f, g):
            ta, ra = a.split()
            tb, rb = b.split()
            assert ta == tb
            fl = [x for x in ra.split(",") if x != "|"]
            lt = [x for x in rb.split(",") if x != "|"]
            sizes = [len(s.strip(",").split(",")) for s in ra.split("|")[:-1]]
            out.append((int(ta), fl, lt, sizes))
    return out


def _slots(token: str) -> int | None:
    """Slots of a lifetime token when the bin holds one 300 s step (bins 0..12), else None
    (wider bins: 13 slots or more)."""
    b = int(token[1:])
    return max(1, b) if b <= 12 else None


def _load(raw, slots, skip=frozenset()):
    """On-demand cores alive at slots 0..slots-1 (< 13) for a window from the first line,
    leaving out the VMs ``skip`` (ids ``t:index``), from the raw tokens alone."""
    load = [0] * slots
    for a, (t, fl, lt, _) in enumerate(raw[:slots]):
        for k, (f, life) in enumerate(zip(fl, lt)):
            if f"{t}:{k}" in skip:
                continue
            d = _slots(life)
            for s in range(a, slots):
                if d is None or s - a < d:
                    load[s] += CORES[f]
    return np.array(load)


def test_parsing_matches_an_independent_reading_of_the_raw_lines(dev, raw):
    vms = read_azure_vms(dev, lifetimes=shared_file(f"{AZURE}/v1.dev.c2100000.txt.gz"),
                         max_lines=3)
    flavors = [f for _, fl, _, _ in raw[:3] for f in fl]
    lifes = [x for _, _, lt, _ in raw[:3] for x in lt]
    assert vms.n == len(flavors) and vms.flavor.tolist() == flavors
    assert vms.cores.tolist() == [CORES[f] for f in flavors]
    assert vms.life_bin.tolist() == [int(x[1:]) for x in lifes]
    assert vms.censored.tolist() == [x[0] == "C" for x in lifes]
    assert vms.bin.tolist() == [t // 300 for t, fl, _, _ in raw[:3] for _ in fl]
    assert vms.lineno.tolist() == [i + 1 for i, (_, fl, _, _) in enumerate(raw[:3]) for _ in fl]
    assert vms.index.tolist() == [k for _, fl, _, _ in raw[:3] for k in range(len(fl))]
    assert list(Counter(vms.batch.tolist()).values()) == [s for *_, sizes in raw[:3]
                                                          for s in sizes]


def test_capacity_is_the_machine_minus_the_on_demand_load(dev, raw):
    whole = dict(on_demand_share=1.0, machine_quantile=0.9)  # the region as one machine
    inst = deferrable_workload(dev, slots=12, start=0, seed=0, deferrable_share=0.0,
                               machine_size=100_000, **whole)
    assert inst["data"]["jobs"] == []
    cap = np.array(inst["data"]["capacity"])
    assert (cap == 100_000 - _load(raw, 12)).all()
    # with deferrable VMs: they leave the load; the machine size follows its rule
    inst = deferrable_workload(dev, slots=12, start=0, seed=4, deferrable_share=0.3, **whole)
    ids = {j["id"] for j in inst["data"]["jobs"]}
    load = _load(raw, 12, skip=ids)
    cap = np.array(inst["data"]["capacity"])
    m = inst["meta"]
    assert (cap >= 0).all() and m["machine_size"] >= load.max() == m["on_demand_peak"]
    assert (cap == m["machine_size"] - load).all()
    demand = np.zeros(12, dtype=int)  # deferrable jobs run from their earliest slot
    for j in inst["data"]["jobs"]:
        demand[j["earliest"]:j["earliest"] + j["duration"]] += j["cores"]
    assert m["machine_size"] == max(load.max(), int(np.ceil(np.quantile(load + demand, 0.9))))


def test_job_fields_and_the_deferrable_share(dev, raw):
    inst = deferrable_workload(dev, slots=30, start=0, seed=7, deferrable_share=0.2,
                               max_defer=3, window=5)
    data = inst["data"]
    flavor = {f"{t}:{k}": f for t, fl, _, _ in raw for k, f in enumerate(fl)}
    n_vms = sum(len(fl) for _, fl, _, _ in raw[:30])
    jobs = data["jobs"]
    assert abs(len(jobs) / n_vms - 0.2) < 0.02, (len(jobs), n_vms)
    for j in jobs:
        t = int(j["id"].split(":")[0])
        assert j["submit"] == (t - raw[0][0]) // 300
        assert 0 <= j["submit"] <= j["earliest"] <= j["latest"] < data["slots"]
        assert j["earliest"] - j["submit"] <= 3 and j["latest"] - j["earliest"] <= 5
        assert j["cores"] == CORES[flavor[j["id"]]]
        assert 1 <= j["duration"] <= data["slots"]
    life = {f"{t}:{k}": x for t, _, lt, _ in raw for k, x in enumerate(lt)}
    exact = [j for j in jobs if _slots(life[j["id"]]) is not None]
    assert exact and all(j["duration"] == _slots(life[j["id"]]) for j in exact)
    # the deferrable draws (share, delays) are not pulled forward: later windows do not
    # change the first VMs' fate
    longer = deferrable_workload(dev, slots=36, start=0, seed=7, deferrable_share=0.2,
                                 max_defer=3, window=5)["data"]["jobs"]
    assert {(j["id"], j["earliest"]) for j in jobs if j["latest"] < 29} <= \
        {(j["id"], j["earliest"]) for j in longer}
    model = instance_from_dict(inst).model
    assert model.n_jobs == len(jobs) and model.slots == 30


def test_batch_split_keeps_tenant_batches_together(dev):
    vms = read_azure_vms(dev, max_lines=20)
    batch_of = {f"{b * 300}:{k}": int(n) for b, k, n in zip(vms.bin, vms.index, vms.batch)}
    inst = deferrable_workload(dev, slots=20, start=0, seed=2, deferrable_share=0.3,
                               split_by="batch")
    chosen = Counter(batch_of[j["id"]] for j in inst["data"]["jobs"])
    size = Counter(vms.batch.tolist())
    assert chosen and all(size[b] == c for b, c in chosen.items())


@pytest.mark.parametrize("case", [1, 2, 3])
def test_synthetic_core_mixes(dev, case):
    jobs = deferrable_workload(dev, slots=24, start=0, seed=case, deferrable_share=0.5,
                               synthetic=f"core:{case}")["data"]["jobs"]
    n = len(jobs)
    got = Counter(j["cores"] for j in jobs)
    assert set(got) <= {1, 2, 4, 8} and n > 2000
    for c, p in zip((1, 2, 4, 8), CORE_CASES[case]):
        assert abs(got[c] / n - p) < 0.03, (c, got[c] / n, p)


@pytest.mark.parametrize("case", [1, 2, 3])
def test_synthetic_duration_mixes(dev, case):
    jobs = deferrable_workload(dev, slots=24, start=0, seed=case, deferrable_share=0.5,
                               synthetic=f"duration:{case}")["data"]["jobs"]
    n = len(jobs)
    got = Counter(j["duration"] for j in jobs)
    assert set(got) <= set(range(1, 7))
    for d, p in zip(range(1, 7), DURATION_CASES[case]):
        assert abs(got[d] / n - p) < 0.03, (d, got[d] / n, p)
    if case == 3:  # the case gives 5 and 6 slots no weight
        assert got[5] == got[6] == 0


def test_real_time_variant(dev):
    kw = dict(slots=12, start=0, seed=1, deferrable_share=0.1, machine_size=5000)
    a = deferrable_workload(dev, **kw)
    b = deferrable_workload(dev, real_time=True, **kw)
    assert all(j["submit"] == j["earliest"] == j["latest"] for j in b["data"]["jobs"])
    assert any(j["latest"] > j["submit"] for j in a["data"]["jobs"])
    # the same jobs and, on a machine of a given size, capacity: only the start windows change
    assert [j["id"] for j in a["data"]["jobs"]] == [j["id"] for j in b["data"]["jobs"]]
    assert a["data"]["capacity"] == b["data"]["capacity"]


def test_deterministic_given_the_seed(dev):
    kw = dict(slots=12, start=3, deferrable_share=0.1)
    assert deferrable_workload(dev, seed=5, **kw) == deferrable_workload(dev, seed=5, **kw)
    assert deferrable_workload(dev, seed=5, **kw)["data"] != \
        deferrable_workload(dev, seed=6, **kw)["data"]


def test_lifetime_file_as_input_and_empirical_lifetimes_for_train(dev):
    life = shared_file(f"{AZURE}/v1.dev.c2100000.txt.gz")
    kw = dict(slots=6, start=0, seed=1, deferrable_share=0.1)
    assert deferrable_workload(life, **kw)["data"] == deferrable_workload(dev, **kw)["data"]
    train = shared_file(f"{AZURE}/v1.train.txt.gz")
    inst = deferrable_workload(train, **kw)
    assert inst["meta"]["lifetimes_used"] == "empirical"
    assert inst["meta"]["lifetimes"] == "v1.dev.c2100000.txt.gz"
    assert inst["data"]["jobs"] and min(inst["data"]["capacity"]) >= 0
    assert deferrable_model(train, **kw).n_jobs == len(inst["data"]["jobs"])


def _copy(dev, tmp_path, n, edit=None):
    lines = []
    with gzip.open(dev, "rt") as f:
        for _, line in zip(range(n), f):
            lines.append(line)
    if edit:
        edit(lines)
    out = tmp_path / "v1.bad.txt"
    out.write_text("".join(lines))
    (tmp_path / "maps").symlink_to(dev.parent / "maps")
    (tmp_path / "v1.bad.c1.txt.gz").symlink_to(dev.parent / "v1.dev.c2100000.txt.gz")
    return out


@pytest.mark.parametrize("edit, expected", [
    (lambda ls: ls.__setitem__(2, ls[2].replace(",g,", ",z,", 1)),
     r"v1.bad.txt:3: VM \d+ \(flavor\): unknown flavor 'z'"),
    (lambda ls: ls.__setitem__(1, "x" + ls[1]), r"v1.bad.txt:2: field 1 \(bin time"),
    (lambda ls: ls.__setitem__(1, ls[1].rstrip("\n").rstrip("|").rstrip(",") + "\n"),
     r"v1.bad.txt:2: field 2 \(tokens\)"),
    (lambda ls: ls.__setitem__(3, ls[4]), r"v1.bad.txt:4: field 1 \(bin time, s\): expected"),
    (lambda ls: ls.__setitem__(1, ls[1].replace(",|,", ",|,|,", 1)),
     r"v1.bad.txt:2: token \d+: empty tenant batch"),
])
def test_malformed_lines_are_one_line_errors(dev, tmp_path, edit, expected):
    bad = _copy(dev, tmp_path, 8, edit)
    with pytest.raises(TraceError, match=expected) as err:
        deferrable_workload(bad, slots=4, start=0)
    assert "\n" not in str(err.value)


def test_unpaired_lifetimes_and_bad_options(dev, tmp_path):
    bad = _copy(dev, tmp_path, 8, lambda ls: ls.__setitem__(2, ls[2].replace(",|", "", 1)))
    with pytest.raises(TraceError, match=r"v1.bad.c1.txt.gz:3: does not pair with v1.bad.txt:3"):
        deferrable_workload(bad, slots=4, start=0)
    for kw, msg in [({"deferrable_share": 1.5}, "deferrable_share: expected a number in"),
                    ({"synthetic": "core:4"}, "synthetic: expected core:1|2|3"),
                    ({"synthetic": "size:1"}, "synthetic: expected"),
                    ({"split_by": "tenant"}, "split_by: expected one of"),
                    ({"start": "yesterday"}, "start: expected a bin index"),
                    ({"slots": 0}, "slots: expected an integer"),
                    ({"start": "4d"}, "has 1000 bins; start 1152"),
                    ({"machine_size": 1, "start": 0, "slots": 4}, "below the on-demand peak")]:
        with pytest.raises(TraceError, match=msg.replace("|", r"\|")):
            deferrable_workload(dev, **kw)


def test_cli_end_to_end_writes_a_file_that_osdec_greedy_solves(dev, tmp_path, capsys):
    out = tmp_path / "w.json"
    assert main(["workload", "osdec", str(dev), "--slots", "24", "--start", "12",
                 "--seed", "3", "--deferrable-share", "0.1", "--out", str(out),
                 "--no-progress"]) == 0
    assert "jobs, 24 slots" in capsys.readouterr().out
    inst = load_instance(out)
    assert inst.model_kind == "osdec" and inst.model.slots == 24 and inst.model.n_jobs > 50
    assert inst.meta["seed"] == 3 and inst.meta["start_bin"] == 12
    rows = tmp_path / "rows.jsonl"
    assert main(["solve", str(out), "--backend", "osdec-greedy", "--no-progress",
                 "--out", str(rows)]) == 0
    row = json.loads(rows.read_text().splitlines()[0])
    assert row["status"] in ("FEASIBLE", "OPTIMAL") and row["certified"] in (True, "True")
    # the same file from the API, and save_workload's validation
    api = deferrable_workload(dev, slots=24, start=12, seed=3, deferrable_share=0.1)
    assert json.loads(out.read_text())["data"] == api["data"]
    assert load_instance(save_workload(api, tmp_path / "api.json")).model.n_jobs == \
        inst.model.n_jobs
    # a bad option is one line on stderr, exit 2
    assert main(["workload", "osdec", str(dev), "--synthetic", "core:9", "--out",
                 str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("hpcopt: error: synthetic:") and "\n" not in err


def test_on_demand_share_makes_the_machine_a_slice_of_the_region(dev, raw):
    kw = dict(slots=12, start=0, seed=2, deferrable_share=0.1)
    full = deferrable_workload(dev, on_demand_share=1.0, **kw)
    none = deferrable_workload(dev, on_demand_share=0.0, machine_size=500, **kw)
    half = deferrable_workload(dev, on_demand_share=0.5, **kw)
    assert none["data"]["capacity"] == [500] * 12  # no on-demand VM on the machine
    assert full["data"]["jobs"] == none["data"]["jobs"] == half["data"]["jobs"]
    ids = {j["id"] for j in full["data"]["jobs"]}
    assert full["meta"]["on_demand_peak"] == _load(raw, 12, skip=ids).max()
    assert 0.4 < half["meta"]["on_demand_peak"] / full["meta"]["on_demand_peak"] < 0.6
    with pytest.raises(TraceError, match="on_demand_share: expected a number in"):
        deferrable_workload(dev, on_demand_share=-0.1, **kw)


@pytest.mark.slow  # the slow tier (-m slow): a long check, run by CI after the default run
def test_deferrable_suite_is_seeded_split_and_family():
    from hpcopt.workloads.osdec import DEFERRABLE_FAMILY, deferrable_suite

    a = deferrable_suite("test", 2, seed=3)
    assert [x["data"] for x in a] == [x["data"] for x in deferrable_suite("test", 2, seed=3)]
    assert a[0]["data"] != a[1]["data"]
    assert all(x["meta"]["source"] == "v1.dev.txt.gz" for x in a)
    assert all(x["meta"]["max_duration"] == DEFERRABLE_FAMILY["max_duration"] for x in a)
    rt = deferrable_suite("test", 1, seed=3, real_time=True)[0]["data"]["jobs"]
    assert all(j["earliest"] == j["latest"] == j["submit"] for j in rt)
    with pytest.raises(TraceError, match="split"):
        deferrable_suite("validation", 1)
