"""The result of a simulation run: the per-job table, the summary metrics and the settings
(what ``hpcopt.simulate`` and ``hpcopt.osdec.simulate_osdec`` return; a sweep row holds its
summary)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import SimulationError
from .forecast import write_forecast_csv
from .metrics import timeline, units_of, write_job_csv, write_timeline_csv


class SimulationResult:
    """A finished simulation: the per-job table, the summary metrics and the settings.

    ``jobs`` is a pandas DataFrame, one row per job; it is built on first use from the plain
    columns the simulation produced (``hpcopt.sim.metrics.job_columns``), so that a run that
    only needs the summary or ``write()`` never imports pandas."""

    def __init__(self, jobs: Any, summary: dict, settings: dict | None = None,
                 cleaning: dict | None = None, forecasts: list[dict] | None = None) -> None:
        self._jobs = jobs  # a DataFrame, or a dict of columns until first use
        self.summary = summary
        self.settings = {} if settings is None else settings
        self.cleaning = cleaning
        self.forecasts = forecasts  # rows of start forecasts along the run (forecast_every)

    @property
    def jobs(self):
        """The per-job table (pandas DataFrame)."""
        if isinstance(self._jobs, dict):
            import pandas as pd  # heavy: loaded only when a DataFrame is asked for

            self._jobs = pd.DataFrame(self._jobs)
        return self._jobs

    @jobs.setter
    def jobs(self, value) -> None:
        self._jobs = value

    def __repr__(self) -> str:
        return (f"SimulationResult(jobs={self.summary.get('job_count')} rows, "
                f"summary={self.summary!r}, settings={self.settings!r})")

    def timeline(self) -> dict:
        """The queue length, running jobs, busy nodes and utilization after each event
        (``hpcopt.sim.metrics.timeline``: columns ``time_s``, ``queued_jobs``,
        ``running_jobs``, ``busy_nodes``, ``utilization``)."""
        nodes = self.settings.get("nodes")
        if not nodes:
            raise SimulationError("timeline: the run records no machine size (settings.nodes)")
        return timeline(self._jobs if isinstance(self._jobs, dict) else self.jobs, nodes)

    def write_timeline(self, path: str | Path) -> Path:
        """Write ``timeline()`` as CSV to ``path``."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_timeline_csv(self.timeline(), path)
        return path

    def write(self, out_dir: str | Path) -> tuple[Path, Path]:
        """Write ``jobs.csv`` and ``summary.json`` (metrics, their ``units``, settings,
        cleaning) to ``out_dir``, and ``forecasts.csv`` when the run made forecasts; times in
        all are seconds of the trace's clock."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        jobs_csv, summary_json = out / "jobs.csv", out / "summary.json"
        if not (isinstance(self._jobs, dict) and write_job_csv(self._jobs, jobs_csv)):
            self.jobs.to_csv(jobs_csv, index=False)
        doc = {**self.summary, "units": units_of(self.summary), "settings": self.settings}
        if self.cleaning is not None:
            doc["cleaning"] = self.cleaning
        summary_json.write_text(json.dumps(doc, indent=2, default=str) + "\n")
        if self.forecasts is not None:
            write_forecast_csv(self.forecasts, out / "forecasts.csv")
        return jobs_csv, summary_json
