"""Batch solving of instance files: one row per (instance, backend), errors as rows.

A bad file or a failing backend never stops the batch: its row has status ERROR and the
one-line message in ``error``.  Files are solved in parallel processes when ``workers > 1``.
"""

from __future__ import annotations

import json
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from .errors import HpcoptError, one_line

COLUMNS = ["instance", "model", "backend", "status", "objective", "bound", "gap",
           "wall_time_s", "certified", "decision", "limit", "seed", "error"]


def _error_row(instance: str, backend: str, message: str, model: str = "") -> dict:
    return {**dict.fromkeys(COLUMNS), "instance": instance, "model": model, "backend": backend,
            "status": "ERROR", "certified": False, "error": message}


def solve_file(path: str, backends: list[str] | None, time_limit: float | None = None,
               seed: int | None = None, solver_options: dict | None = None,
               rule=None) -> list[dict]:
    """Rows for one instance file solved by each backend (``None``: the model's default).

    Multi-objective rows also carry ``pareto`` (a list of ``{"jobs", "objectives"}``) and
    ``rule``; their ``decision`` is the rule's pick."""
    from .instances import load_instance
    from .solvers import solve

    name = Path(path).name
    try:
        inst = load_instance(path)
    except (HpcoptError, OSError) as exc:
        return [_error_row(name, b, one_line(exc)) for b in backends or ["(default)"]]
    rows = []
    for backend in backends or [inst.model.default_backend]:
        try:
            res = solve(inst.model, backend, time_limit=time_limit, seed=seed,
                        solver_options=solver_options, rule=rule)
            row = {"instance": inst.name, **res.to_row(), "error": ""}
            if res.pareto is not None:
                row["rule"] = res.extra.get("rule")
                row["pareto"] = [{"jobs": list(inst.model.decision_ids(p.decision)),
                                  "objectives": list(p.objectives)} for p in res.pareto]
            rows.append(row)
        except Exception as exc:  # noqa: BLE001 - a batch never dies because of one instance
            rows.append(_error_row(inst.name, backend, one_line(exc), inst.model.kind))
    return rows


def solve_batch(patterns, backends=None, *, time_limit=None, seed=None, workers: int = 1,
                progress: bool = False, solver_options: dict | None = None,
                rule=None) -> list[dict]:
    """Solve every file matched by ``patterns`` (paths or quoted globs) with every backend
    (``None``: each model's default backend); ``rule`` picks from Pareto sets."""
    from .instances import expand_paths

    paths, rows = {}, []  # dict: dedup, keep order
    for pattern in patterns:
        try:
            paths.update((str(p), None) for p in expand_paths([pattern]))
        except HpcoptError as exc:
            rows.extend(_error_row(str(pattern), b, one_line(exc))
                        for b in backends or ["(default)"])
    args = [(p, None if backends is None else list(backends), time_limit, seed, solver_options,
             rule) for p in paths]
    from tqdm.auto import tqdm

    with tqdm(total=len(args), unit="file", desc="solve", disable=not progress) as bar:
        if workers > 1 and len(args) > 1:
            with ProcessPoolExecutor(max_workers=workers) as pool:
                for file_rows in pool.map(_solve_args, args):
                    rows.extend(file_rows)
                    bar.update(1)
        else:
            for a in args:
                rows.extend(solve_file(*a))
                bar.update(1)
    return rows


def _solve_args(args):
    return solve_file(*args)


def write_rows(rows: list[dict], path: str | Path) -> Path:
    """Write rows as CSV (decision as space-separated ids) or JSONL, chosen by suffix."""
    path = Path(path)
    if path.suffix == ".jsonl":
        with path.open("w") as fh:
            for row in rows:
                fh.write(json.dumps(row, default=str) + "\n")
    elif path.suffix == ".csv":
        import pandas as pd

        flat = [{**r, "decision": _ids_text(r.get("decision")),
                 **({"pareto": json.dumps(r["pareto"])} if "pareto" in r else {})} for r in rows]
        pd.DataFrame(flat, columns=_columns(flat)).to_csv(path, index=False)
    else:
        raise HpcoptError(f"--out {path}: expected a .csv or .jsonl file name")
    return path


def _ids_text(ids) -> str:
    return "" if ids is None else " ".join(str(i) for i in ids)


def _columns(rows: list[dict]) -> list[str]:
    extra = [k for r in rows for k in r if k not in COLUMNS]
    return COLUMNS + list(dict.fromkeys(extra))
