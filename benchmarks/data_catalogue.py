"""Regenerate hpcopt's data catalogue (``hpcopt/data_catalogue.json``) from a data directory.

The catalogue names every real data set that hpcopt's docs, defaults and benchmarks read:
where each file comes from (the upstream URL, pinned to a commit), its size and SHA-256 as
the data directory holds it, and, for files the fetch compresses, the size and SHA-256 of the
upstream file.  ``hpcopt data list | fetch | verify`` read it.

    python benchmarks/data_catalogue.py DATA_DIR [--provenance DATA_DIR/PROVENANCE.md]

DATA_DIR is a complete data directory (the reference copy); its PROVENANCE.md gives each
file's source repository, commit and path.  Not part of pytest.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "hpcopt" / "data_catalogue.json"

PWA = ("Parallel Workloads Archive: D. G. Feitelson, D. Tsafrir, D. Krakov, 'Experience with "
       "using the Parallel Workloads Archive', JPDC 74(10), 2014, "
       "https://www.cs.huji.ac.il/labs/parallel/workload/; acknowledge the log's donor named "
       "in its header")
WFC = ("WfCommons WfInstances (LGPL-3.0): T. Coleman et al., 'WfCommons: A framework for "
       "enabling scientific workflow research and development', FGCS 128, 2022")

# name, title, path prefix, source repository per source-path prefix, licence, citation, kind
DATASETS = [
    ("kth-sp2", "KTH SP2 1996-97, 100 nodes, 28,476 jobs (PWA cleaned log, SWF)",
     "hpc_swf/pwa/KTH-SP2", "jankopanski/Burst-Buffer-Scheduling",
     "no formal licence; cite the archive", PWA, "real"),
    ("nasa-ipsc", "NASA Ames iPSC/860 1993, 128 nodes, 18,239 jobs (PWA cleaned log, SWF)",
     "hpc_swf/pwa/NASA-iPSC", "cloudsimplus/cloudsimplus-examples",
     "no formal licence; cite the archive", PWA, "real"),
    ("llnl-atlas", "LLNL Atlas 2006-07, 1,152 nodes, 43,778 jobs (PWA cleaned log, SWF)",
     "hpc_swf/pwa/LLNL-Atlas", "tgasla/rl-cloudsimplus",
     "no formal licence; cite the archive", PWA, "real"),
    ("hpc2n-subset", "HPC2N 2002, 3,170 jobs as shipped by the Alea simulator (SWF subset)",
     "hpc_swf/pwa_subsets/", "aleasimulator/alea",
     "LGPL (Alea); the log: cite the archive", PWA, "real (subset)"),
    ("theta-2022", "ALCF Theta 2022, 4,360 nodes, 23,911 jobs (converted to SWF by cqsimplus)",
     "hpc_swf/alcf/theta_2022", "mochiiten9158/cqsimplus",
     "MIT (cqsimplus); the data: ALCF public job logs",
     "ALCF public job logs, https://reports.alcf.anl.gov/data/; converted by the cqsimplus "
     "project (SPEAR group, Illinois Tech)", "real"),
    ("alcf-3000", "ALCF Intrepid, Mira and Theta: 3,000-job excerpts (not SWF)",
     "hpc_swf/alcf/mtech_thesis_3000/", "gaganmangat/MTech-Thesis",
     "none stated", "ALCF public job logs; excerpts by gaganmangat/MTech-Thesis", "real"),
    ("metacentrum-wagap", "MetaCentrum/CERIT-SC wagap 2013, 17,900 jobs (Alea extended SWF)",
     "hpc_swf/metacentrum/", "aleasimulator/alea",
     "LGPL (Alea); the log: acknowledge MetaCentrum/CERIT-SC",
     "MetaCentrum/CERIT-SC workload, as shipped by the Alea simulator", "real"),
    ("lublin-model", "Lublin-Feitelson workload model, 2 x 10,000 jobs (synthetic, SWF)",
     "hpc_swf/lublin_model/", "DIR-LAB/deep-batch-scheduler",
     "none stated (MIT in DIR-LAB/SchedInspector)",
     "U. Lublin, D. G. Feitelson, 'The workload on parallel supercomputers: modeling the "
     "characteristics of rigid jobs', JPDC 63(11), 2003", "synthetic"),
    ("nrel-eagle", "NREL Eagle (Slurm) 2019: the first 1,000 jobs (CSV)",
     "hpc_other/nrel_eagle/", "NREL/eagle-jobs", "BSD-3-Clause",
     "NREL Eagle job data, NREL/eagle-jobs (the full set is on OEDI)", "real (sample)"),
    ("kopanski-bb", "Kopanski & Rzadca's KTH-SP2 workload with burst-buffer requests "
     "(Batsim JSON, 1,000 jobs) and its platform: the pool of S1-S7 and load_batsim()",
     "burst_buffer/kopanski_kth_batsim/", "jankopanski/Burst-Buffer-Scheduling", "GPL-3.0",
     "J. Kopanski, K. Rzadca, 'Plan-based job scheduling for supercomputers with shared burst "
     "buffers', Euro-Par 2021; the jobs: KTH-SP2 from the " + PWA, "real jobs, modelled "
     "burst-buffer requests"),
    ("swarp-bb", "SWarp workflow runs with burst buffers on Cori and Summit (measurements, "
     "CSV)", "burst_buffer/cori_swarp_bb_runs/", "lpottier/workflow-io-bb", "none stated",
     "L. Pottier et al., 'Modeling the performance of scientific workflow executions on HPC "
     "platforms with burst buffers', CLUSTER 2020", "real (measurements)"),
    ("lzk23-topology", "Fat-tree allocation jobs of the neural simulated annealing paper, "
     "100,000 jobs (synthetic)", "topology_alloc/", "lzk23/hpcschedule", "none stated",
     "'Optimization of topology-aware job allocation on an HPC cluster by neural simulated "
     "annealing', IEEE CLUSTER 2023 (data/generate.py of lzk23/hpcschedule)", "synthetic"),
    ("azure-v1", "Azure Public Dataset V1 VM table, binned per 5 minutes (train, dev, "
     "lifetimes, maps): hpcopt workload osdec and the OSDEC train pool",
     "cloud/azure_v1_vmtable_derived/", "huaweicloud/trace_generation_rnn",
     "CC-BY-4.0 (the traces; LICENSE-traces.txt)",
     "Azure Public Dataset V1: E. Cortez et al., 'Resource Central', SOSP 2017; binned by "
     "huaweicloud/trace_generation_rnn", "real (binned)"),
    ("google2011", "Google cluster-usage trace 2011: one task_events shard and CloudSim Plus "
     "samples", "cloud/google2011/", None, "CC-BY-4.0 (Google cluster-data)",
     "J. Wilkes, 'More Google cluster data', Google research blog, 2011; "
     "https://github.com/google/cluster-data", "real"),
    ("alibaba2018", "Alibaba cluster-trace-v2018: the first 50,000 batch tasks and the "
     "machine table", "cloud/alibaba2018/", "sumanagral/deep_reap",
     "Alibaba cluster-data research terms", "https://github.com/alibaba/clusterdata "
     "(cluster-trace-v2018)", "real (sample)"),
]
for family in ("1000genome", "blast", "bwa", "cycles", "montage", "seismology", "soykb",
               "srasearch"):
    DATASETS.append((f"wf-{family}", f"WfCommons {family} executions on Chameleon "
                     "(WfFormat JSON)", f"workflows/wfinstances/{family}/",
                     "wfcommons/WfInstances", "LGPL-3.0", WFC, "real"))
# google2011: the shard came from deep_reap, the samples from cloudsimplus-examples
SOURCE_BY_PATH = {"data/real/raw/": "sumanagral/deep_reap",
                  "src/main/resources/": "cloudsimplus/cloudsimplus-examples"}
# what a default or a documented command reads (hpcopt data list shows it)
# the file a data set's name stands for as an input (hpcopt simulate NAME), where it has several
MAIN = {
    "kopanski-bb": "burst_buffer/kopanski_kth_batsim/KTH-SP2-1996-2.1-cln-io-aware-1000.json.gz",
    "hpc2n-subset": "hpc_swf/pwa_subsets/HPC2N-2002-2.2-alea-subset.swf.gz",
    "metacentrum-wagap": "hpc_swf/metacentrum/wagap-2013-alea-extended.swf.gz",
    "azure-v1": "cloud/azure_v1_vmtable_derived/v1.dev.txt.gz",
}
USED_BY = {
    "kopanski-bb": "simulate --workload S1-S7, load_batsim()",
    "azure-v1": "workload osdec, train osdec, deferrable_suite()",
    "kth-sp2": "the docs' simulate and workflow examples, benchmarks",
    "theta-2022": "the docs' train dras example, benchmarks",
    "lzk23-topology": "the docs' topology example, benchmarks",
    "wf-bwa": "the docs' workflow examples",
}


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def commits(text: str) -> dict[str, str]:
    return dict(re.findall(r"^\| ([\w.-]+/[\w.-]+) \| `([0-9a-f]{40})` \|", text, re.M))


def rows(text: str) -> dict[str, tuple[str, int, int]]:
    """local path -> (source path, orig, saved) from PROVENANCE.md's file tables."""
    out = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 5 and "/" in cells[0] and cells[2].isdigit():
            out[cells[0]] = (cells[1], int(cells[2]), int(cells[3]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data_dir", type=Path)
    ap.add_argument("--provenance", type=Path, default=None)
    args = ap.parse_args()
    text = (args.provenance or args.data_dir / "PROVENANCE.md").read_text()
    pinned, table = commits(text), rows(text)
    datasets, seen = [], set()
    for name, title, prefix, repo, licence, citation, kind in DATASETS:
        files = []
        for path in sorted(p for p in table if p.startswith(prefix)):
            source, orig, saved = table[path]
            src_repo = repo or next(r for k, r in SOURCE_BY_PATH.items() if source.startswith(k))
            data = (args.data_dir / path).read_bytes()
            assert len(data) == saved, path
            entry = {"path": path, "size": saved, "sha256": sha256(data),
                     "url": f"https://raw.githubusercontent.com/{src_repo}/{pinned[src_repo]}/"
                            f"{source}"}
            if path.endswith(".gz") and not source.endswith(".gz"):
                raw = gzip.decompress(data)
                assert len(raw) == orig, path
                entry.update(upstream_size=orig, upstream_sha256=sha256(raw),
                             derive="gzip")
            files.append(entry)
            seen.add(path)
        assert files, name
        datasets.append({"name": name, "title": title, "kind": kind, "licence": licence,
                         "citation": citation, "used_by": USED_BY.get(name, ""),
                         **({"main": MAIN[name]} if name in MAIN else {}), "files": files})
    missing = sorted(set(table) - seen)
    assert not missing, missing
    OUT.write_text(json.dumps({"format": 1, "datasets": datasets}, indent=1) + "\n")
    print(f"wrote {OUT}: {len(datasets)} data sets, {len(seen)} files")


if __name__ == "__main__":
    main()
