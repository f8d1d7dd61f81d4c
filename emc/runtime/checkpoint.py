"""Checkpoints: the whole state of a fit in one file, written atomically after each iteration or
pass, so `emc fit --resume RUN` continues after a kill (even SIGKILL) and ends with exactly the
parameters an uninterrupted run ends with.

RUN/checkpoint.npz holds the parameter state, the random generator's state, the variant's own
state (annealing temperature, stepwise update count, incremental statistics, ...) and, as JSON,
the job (emc/runtime/job.py: the spec text, its overrides, the data and the settings), everything
needed to rebuild the problem. It is written to a temporary name and renamed, so it is whole.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from emc.io.atomic import atomic_file
from emc.runtime.state import FitState
from emc.runtime.model_dir import reading_run_file
from emc.runtime.params import ParamState
from emc.spec.errors import EmcError

NAME = "checkpoint.npz"
PARAM_FIELDS = ("theta", "row_total", "row_add_den", "table_add", "scale")


def save_checkpoint(run: Path, state: FitState, job: dict[str, Any], corpus: list[dict[str, Any]] | None = None) -> None:
    """`corpus`: the identity of each data file the fit read (emc.io.readers.recording_reads)."""
    arrays: dict[str, np.ndarray] = {f"params/{k}": v for k, v in zip(PARAM_FIELDS, state.params.abi())}
    arrays.update({f"features/{k}": v for k, v in state.params.features.items()})
    scalars: dict[str, Any] = {}
    for key, value in state.extra.items():
        if isinstance(value, np.ndarray):
            arrays[f"extra/{key}"] = value
        else:
            scalars[key] = value
    meta = {
        "job": job,
        "step": state.step,
        "objective": state.objective,
        "converged": state.converged,
        "history": state.history,
        "rng": state.rng.bit_generator.state,
        "extra": scalars,
        "corpus": corpus or [],
        "saved_at": time.time(),
    }
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode("utf-8"), np.uint8)
    had_one = (run / NAME).exists()
    try:
        with atomic_file(run / NAME) as f:
            np.savez(f, **arrays)
    except EmcError as err:  # a full disk: the previous checkpoint is whole, and resumable
        raise EmcError(f"{err}" + (f": make room, then continue the fit with `emc fit --resume {run}`" if had_one
                                   else "")) from None


def _checkpoint_path(run: Path) -> Path:
    path = run / NAME
    if not path.exists():
        raise EmcError(f"{run}: no checkpoint to resume from ({NAME} is written by `emc fit --out {run}`)")
    return path


def _meta(npz) -> dict[str, Any]:
    return json.loads(bytes(npz["meta"]).decode("utf-8"))


def _damaged(run: Path):
    return reading_run_file(run / NAME, f"the fit in {run} cannot be resumed from it: start it again with "
                                        f"`emc fit ... --out {run} --overwrite`")


def load_job(run: Path) -> dict[str, Any]:
    """The job a checkpoint was written for. Only the small `meta` entry is read (np.load reads
    entries on access), not the parameters, which can be large."""
    with _damaged(run), np.load(_checkpoint_path(run)) as npz:
        return _meta(npz)["job"]


def saved_at(run: Path) -> float:
    """When the checkpoint in `run` was written (time.time())."""
    with _damaged(run), np.load(_checkpoint_path(run)) as npz:
        return float(_meta(npz)["saved_at"])


def load_corpus_identity(run: Path) -> list[dict[str, Any]]:
    """The identity of the data files the checkpointed fit read ([] for a checkpoint without it)."""
    with _damaged(run), np.load(_checkpoint_path(run)) as npz:
        return _meta(npz).get("corpus") or []


def corpus_change(then: list[dict[str, Any]], now: list[dict[str, Any]]) -> str | None:
    """What differs between the data a fit began on and the data read now (None: the same). A
    file is the same when its bytes are: a changed modification time alone does not count."""
    current = {r["path"]: r for r in now}
    for old in then:
        new = current.get(old["path"])
        if new is None or new["sha256"] == old["sha256"]:
            continue
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(new["mtime"]))
        size = (f"{old['size']} -> {new['size']} bytes" if new["size"] != old["size"]
                else f"same size, other content")
        return f"{old['path']} changed since the fit began ({size}, modified {when})"
    return None


def load_checkpoint(run: Path) -> tuple[dict[str, Any], FitState]:
    with _damaged(run), np.load(_checkpoint_path(run)) as npz:
        meta = _meta(npz)
        params = ParamState(*(npz[f"params/{k}"].copy() for k in PARAM_FIELDS),
                            {k[len("features/"):]: npz[k].copy() for k in npz.files if k.startswith("features/")})
        extra = {k[len("extra/"):]: npz[k].copy() for k in npz.files if k.startswith("extra/")}
    extra.update(meta["extra"])
    rng = np.random.default_rng()
    rng.bit_generator.state = meta["rng"]
    state = FitState(params=params, rng=rng, step=meta["step"], objective=meta["objective"],
                     converged=meta["converged"], history=meta["history"], extra=extra)
    return meta["job"], state


class Checkpointer:
    """Saves the state after a step, at most every `seconds` (0: after every step)."""

    def __init__(self, run: Path, job: dict[str, Any], seconds: float = 0.0,
                 corpus: list[dict[str, Any]] | None = None):
        self.run, self.job, self.seconds, self.corpus = run, job, seconds, corpus
        self.last = 0.0

    def __call__(self, state: FitState) -> None:
        now = time.monotonic()
        if self.seconds and now - self.last < self.seconds:
            return
        save_checkpoint(self.run, state, self.job, self.corpus)
        self.last = now
