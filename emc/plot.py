"""`emc plot LOG... -o FILE.png`: objective and metric against passes and against seconds, runs
overlaid and labelled by their settings (the figure Liang & Klein use to compare batch and
stepwise EM). matplotlib is an optional extra: pip install 'emc[plot]'."""
from __future__ import annotations

import json
from pathlib import Path

from emc.spec.errors import EmcError


def read_log(path: str) -> list[dict]:
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as err:
        raise EmcError(f"{path}: error: cannot read the log ({err.strerror})") from None
    records = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as err:
            raise EmcError(f"{path}:{number}: error: not a JSON log line ({err.msg})") from None
    if not records:
        raise EmcError(f"{path}: error: the log is empty")
    return records


def plot(paths: list[str], out: str, metric: str | None = None) -> str:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise EmcError("emc plot needs matplotlib: pip install 'emc[plot]'") from None
    runs = [(path, read_log(path)) for path in paths]
    if metric is None:
        metric = next((k for _, records in runs for r in records for k in r.get("metrics", {})), None)
    rows = 2 if metric else 1
    figure, axes = plt.subplots(rows, 2, figsize=(11, 4 * rows), squeeze=False)
    for path, records in runs:
        label = records[0].get("label") or records[0].get("algorithm") or Path(path).stem
        steps = [r.get("iteration") or r.get("pass") for r in records]
        seconds = [r.get("seconds_total", 0.0) for r in records]
        objective = [r["objective"] for r in records]
        axes[0][0].plot(steps, objective, marker=".", label=label)
        axes[0][1].plot(seconds, objective, marker=".", label=label)
        if metric:
            scored = [(s, t, r["metrics"][metric]) for s, t, r in zip(steps, seconds, records)
                      if metric in r.get("metrics", {})]
            if scored:
                s, t, m = zip(*scored)
                axes[1][0].plot(s, m, marker=".", label=label)
                axes[1][1].plot(t, m, marker=".", label=label)
    for row, name in enumerate(["objective"] + ([metric] if metric else [])):
        axes[row][0].set_xlabel("passes over the data (batch: iterations)")
        axes[row][1].set_xlabel("seconds")
        for ax in axes[row]:
            ax.set_ylabel(name)
            ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(out, dpi=110)
    plt.close(figure)
    return out
