"""A saved model is a directory:

    spec.em       the spec, as fitted (with the command line's overrides in run.json)
    params.npz    `theta` (every table, flat) and one array per table, shaped (outcomes, rows); a
                  sparse table as its values with `sparse_NAME_rows` / `sparse_NAME_outcomes`; a
                  featured table's weights as `features_NAME` (features x rows)
    vocab.json    the vocabularies, so new data is encoded as in training
    run.json      settings, structure arguments, state names, sizes, final objective and metrics
    log.jsonl     one JSON object per iteration or pass

Every file is written to a temporary name and they are renamed together once all are whole, so a
kill or a full disk never leaves a half-written one, nor a new spec beside old parameters.
`emc decode RUN` and `emc fit --init RUN` reload it.
"""
from __future__ import annotations

import json
import time
import zipfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Iterator

import numpy as np

from emc.version import __version__
from emc.io.atomic import staged_files
from emc.io.vocab import Vocabulary, load_vocabularies, vocabularies_json
from emc.runtime import run_checks
from emc.runtime.params import ParamLayout, ParamState
from emc.runtime.problem import Model, Problem
from emc.runtime.settings import FitSettings
from emc.spec.errors import EmcError


def save_params(f: BinaryIO, params: ParamState, layout: ParamLayout) -> None:
    theta = params.weights(layout)
    tables = {}
    for t in layout.tables:
        if t.sparse:  # (row, outcome, value) of every entry it has
            tables[f"sparse_{t.name}_rows"] = t.entry_rows
            tables[f"sparse_{t.name}_outcomes"] = t.entry_outcomes
            tables[f"table_{t.name}"] = theta[t.entries]
        else:
            tables[f"table_{t.name}"] = t.matrix(theta)
    tables.update({f"features_{name}": weights for name, weights in params.features.items()})
    np.savez(f, theta=theta, **tables)


def save_run(run: Path, problem: Problem, params: ParamState, settings: FitSettings, overrides: dict[str, Any],
             options: dict[str, Any], objective: float, metrics: dict[str, float], history: list[dict],
             finished: bool = True) -> None:
    """`finished`: the fit ended (not a Ctrl-C's model so far); with `saved_at`, what tells
    `emc fit --resume` that the folder already holds its final model (`holds_finished_model`)."""
    info = run_info(problem, settings, overrides, options, objective, metrics)
    info.update(finished=finished, saved_at=time.time())
    with staged_files(run) as stage:  # all of them or none: a full disk leaves the previous model whole
        stage.write("spec.em", problem.model.checked.spec.text)
        with stage.open("params.npz") as f:
            save_params(f, params, problem.layout)
        stage.write("vocab.json", vocabularies_json(problem.vocabs))
        stage.write("run.json", json.dumps(info, indent=2))
        stage.write("log.jsonl", "".join(json.dumps(r) + "\n" for r in history))


def run_info(problem: Problem, settings: FitSettings, overrides: dict[str, Any], options: dict[str, Any],
             objective: float, metrics: dict[str, float]) -> dict[str, Any]:
    """What run.json records: enough to decode new data as the training data were read."""
    return {
        "emc_version": __version__,
        "model": problem.model.name,
        "structure": problem.model.checked.structure.name,
        "spec_path": problem.model.checked.spec.path,
        "workdir": problem.model.checked.base_dir,  # what the spec's relative file names are relative to
        "overrides": overrides,
        "args": problem.args,
        "labels": problem.labels,
        "vocab_sizes": {name: len(v) for name, v in problem.vocabs.items()},
        "sizes": problem.sizes,
        "settings": settings.to_json(),
        "options": {k: v for k, v in options.items() if _jsonable(v)},
        "examples": problem.n_examples,
        "spec_sha256": run_checks.spec_digest(problem.model.checked.spec.text),
        "objective": objective,
        "metrics": metrics,
    }


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
        return True
    except TypeError:
        return False


@dataclass
class SavedRun:
    path: Path
    info: dict[str, Any]
    model: Model
    vocabs: dict[str, Vocabulary]
    theta: np.ndarray
    sparse: dict[str, tuple[np.ndarray, np.ndarray]]  # sparse tables' (rows, outcomes)
    features: dict[str, np.ndarray] = field(default_factory=dict)  # featured tables' weights

    @staticmethod
    def in_memory(problem: Problem, params: ParamState, settings: FitSettings, overrides: dict[str, Any],
                  options: dict[str, Any], objective: float, metrics: dict[str, float]) -> "SavedRun":
        """A fitted model as if saved and loaded (the Python API decodes with it directly)."""
        layout = problem.layout
        sparse = {t.name: (t.entry_rows, t.entry_outcomes) for t in layout.tables if t.sparse}
        info = json.loads(json.dumps(run_info(problem, settings, overrides, options, objective, metrics)))
        return SavedRun(Path("<memory>"), info, problem.model, {k: v.copy() for k, v in problem.vocabs.items()},
                        params.weights(layout), sparse, {k: v.copy() for k, v in params.features.items()})

    @property
    def trained(self) -> dict[str, Any]:
        return {"args": self.info["args"], "labels": self.info["labels"], "vocab_sizes": self.info["vocab_sizes"],
                "sparse": self.sparse}


def holds_finished_model(run: Path, since: float) -> bool:
    """Whether `run` holds the final model of a fit saved after `since` (a checkpoint's saved_at)."""
    try:
        info = json.loads((run / "run.json").read_text(encoding="utf-8"))
        return info.get("finished") is True and float(info.get("saved_at", 0.0)) >= since
    except (OSError, ValueError, TypeError, AttributeError):
        return False


# what reading a damaged file of a run folder raises: truncated or garbled npz (zip), JSON, text
DAMAGED = (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile)


@contextmanager
def reading_run_file(path: Path, advice: str) -> Iterator[None]:
    """Turns any failure to read `path` into a message naming the file and what to do."""
    try:
        yield
    except DAMAGED as err:
        raise EmcError(f"{path}: error: damaged or unreadable ({type(err).__name__}: {err}); {advice}") from None


def load_run(run: str | Path) -> SavedRun:
    """A saved model, checked whole (emc/runtime/run_checks.py): each file readable and of the
    shape the fit wrote, and all of them of one model."""
    run = Path(run)
    for name in ("spec.em", "params.npz", "vocab.json", "run.json"):
        if not (run / name).exists():
            raise EmcError(f"{run}: not a saved model (no {name}); `emc fit ... --out {run}` writes one")
    advice = (f"the saved model in {run} cannot be used: fit it again with `emc fit ... --out {run} --overwrite`"
              f"{f', or continue it with `emc fit --resume {run}`' if (run / 'checkpoint.npz').exists() else ''}")
    with reading_run_file(run / "run.json", advice):
        info = json.loads((run / "run.json").read_text(encoding="utf-8"))
    with _refused(run, advice):
        run_checks.check_run_info(info)
    with reading_run_file(run / "spec.em", advice):
        text = (run / "spec.em").read_text(encoding="utf-8")
    with _refused(run, advice):
        run_checks.check_spec_text(info, text)
    with _refused(run, advice, "spec.em: "):
        model = Model.from_text(text, str(run / "spec.em"), info["overrides"], base_dir=info.get("workdir"))
    with reading_run_file(run / "params.npz", advice), np.load(run / "params.npz") as npz:
        theta = npz["theta"]
        sparse = {key[len("sparse_"):-len("_rows")]: (npz[key], npz[key[:-len("_rows")] + "_outcomes"])
                  for key in npz.files if key.startswith("sparse_") and key.endswith("_rows")}
        features = {key[len("features_"):]: npz[key] for key in npz.files if key.startswith("features_")}
    with reading_run_file(run / "vocab.json", advice):
        vocabs = load_vocabularies(run / "vocab.json")
    with _refused(run, advice):
        run_checks.check_spec(info, model.name, model.checked.structure.name)
        run_checks.check_vocabularies(info, vocabs)
        run_checks.check_theta(theta, _trained_layout_size(model, info, sparse))
    return SavedRun(run, info, model, vocabs, theta, sparse, features)


def _trained_layout_size(model: Model, info: dict[str, Any], sparse: dict[str, tuple[np.ndarray, np.ndarray]]) -> int:
    """How many parameters the spec's tables hold at the sizes the model was trained at."""
    checked = model.checked
    try:
        sizes = {**info["vocab_sizes"], **model.data.space_sizes(checked, info["args"])}
        return ParamLayout.build(checked, sizes, sparse).size
    except (KeyError, TypeError, ValueError) as err:
        raise EmcError(f"run.json's sizes do not fit spec.em's tables ({type(err).__name__}: {err})") from None


@contextmanager
def _refused(run: Path, advice: str, prefix: str = "") -> Iterator[None]:
    """A check's EmcError as one line naming the run and what to do."""
    try:
        yield
    except EmcError as err:
        raise EmcError(f"{run}/{prefix}{err}; {advice}") from None
