"""Running the adapter as a service: ``hpcopt slurm status`` from its log, the systemd unit,
and the EpilogSlurmctld script, without a cluster."""

from __future__ import annotations

import json

import pytest

from hpcopt.cli import main
from hpcopt.errors import HpcoptError
from hpcopt.slurm.service import status_text

T = 1_800_000_000.0


def cycle(n, released=(), ok=True, **more):
    rec = {"time": T + 10 * n, "cycle": n, "partition": "batch", "ok": ok, "slurm": "22.05.8",
           "pending": 3, "running": 2, "waiting_start": [], "free_nodes": 1,
           "queue": [12, "14_2", 15], "released": list(released), "backfilled": [],
           "reserved": {"id": 12, "shadow": T + 10 * n + 300}, "notes": ["job 9 is held by "
                                                                         "the administrator: "
                                                                         "left held"]}
    rec.update(more)
    if not ok:
        rec = {"time": T + 10 * n, "cycle": n, "partition": "batch", "ok": False,
               "error": "squeue --json: Unable to contact slurm controller"}
    return rec


def test_status_says_what_the_adapter_does(tmp_path):
    log = tmp_path / "a.jsonl"
    lines = [cycle(1, [7, "8_1"]), {"time": T + 11, "cycle": 2, "event": "releasing",
                                    "ids": [9]}, cycle(2, [9], backfilled=[9]), cycle(3)]
    log.write_text("".join(json.dumps(r) + "\n" for r in lines))
    text = status_text(log, now=T + 35)
    first = text.splitlines()[0]
    assert first.startswith("partition batch: cycle 3 at ") and first.endswith("(5 s ago)")
    assert "3 held in the queue, 2 running, 1 free nodes" in text
    assert "queue: 12 14_2 15" in text and "reserved: job 12 at " in text
    assert "(+300 s after the cycle)" in text
    assert "released lately: 7 (" in text and "9 (" in text and ", backfilled)" in text
    assert "note: job 9 is held by the administrator: left held" in text
    log.write_text(log.read_text() + json.dumps(cycle(4, ok=False)) + "\n")
    text = status_text(log, now=T + 45)
    assert "the cycle failed: squeue --json: Unable to contact" in text
    assert "last good cycle 3:" in text
    log.write_text("not json\n")
    with pytest.raises(HpcoptError, match=r"a.jsonl:1: not a JSON line"):
        status_text(log)


def test_status_and_unit_commands(tmp_path, capsys):
    log = tmp_path / "a.jsonl"
    log.write_text(json.dumps(cycle(1)) + "\n")
    assert main(["slurm", "status", "--log", str(log)]) == 0
    assert "partition batch: cycle 1" in capsys.readouterr().out
    assert main(["slurm", "status", "--log", str(tmp_path / "none.jsonl")]) == 2
    assert "none.jsonl: No such file" in capsys.readouterr().err
    assert main(["slurm", "unit", "--slurm-conf", "/etc/slurm/slurm.conf", "--", "--policy",
                 "knapsack", "--partition", "gpu", "--wake-port", "17777"]) == 0
    unit = capsys.readouterr().out
    assert "Description=hpcopt scheduler of Slurm partition gpu" in unit
    assert "Environment=SLURM_CONF=/etc/slurm/slurm.conf" in unit
    assert "slurm run --policy knapsack --partition gpu --wake-port 17777\n" in unit
    assert "Restart=on-failure" in unit and "RestartPreventExitStatus=2" in unit
    assert main(["slurm", "unit"]) == 2
    assert "give the arguments of `hpcopt slurm run` after --" in capsys.readouterr().err
    assert main(["slurm", "epilog", "--wake-port", "17777"]) == 0
    assert "/dev/udp/127.0.0.1/17777" in capsys.readouterr().out
