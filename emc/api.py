"""The Python API, for notebooks: the same engine as the CLI.

    import emc
    model = emc.load("specs/hmm.em", states=12)             # structure arguments / params by name
    fitted = model.fit(["the dog barks", "a cat sleeps"],   # lines in memory, or a path
                       algorithm="stepwise", passes=3, seed=1)
    fitted.history[-1]["objective"]
    fitted.decode(["the cat barks"])                         # ['the/3 cat/7 barks/1']
    fitted.evaluate("test.conll", format="conll", gold_column=2)
    fitted.save("runs/hmm")
    emc.load_run("runs/hmm").decode(["a dog sleeps"])

Keyword arguments of `fit` are the fit settings (emc.runtime.settings.FitSettings: algorithm,
iterations, passes, seed, alpha, batch_size, ...) or data options (format, gold_column,
dictionary, ... as on the command line, with underscores). Settings the CLI refuses are refused
here with the same message (FitSettings.validate), before the data are read; a keyword that is
neither is refused too, not passed on unread.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Callable, Iterable

from emc.io.readers import Lines
from emc.runtime.modes.dispatch import decode
from emc.runtime.fit import fit_with_restarts
from emc.runtime.model_dir import SavedRun, load_run as _load_saved, save_run
from emc.runtime.params import ParamState
from emc.runtime.problem import Model, Problem, bind
from emc.runtime.settings import FitSettings
from emc.spec.errors import EmcError

SETTINGS = {f.name for f in fields(FitSettings)}


def _data(data: str | Path | Iterable[str]) -> str | Lines:
    return str(data) if isinstance(data, (str, Path)) else Lines(data)


def _data_options(options: dict[str, Any], when: str, settings: bool = False) -> dict[str, Any]:
    """The keyword arguments given as data options, after refusing any that is not one (nor a fit
    setting, when `settings`)."""
    from emc.cli import data_option_names

    known = data_option_names(when)
    unknown = sorted(set(options) - known)
    if unknown:
        also = " nor a fit setting (FitSettings)" if settings else ""
        raise EmcError(f"{when}({unknown[0]}=...): not a data option of emc {when}{also}; data options: "
                       f"{', '.join(sorted(known))}")
    return options


def load(spec: str | Path, **overrides: Any) -> "EMModel":
    """A spec (a path, or the spec's text when it contains a newline), compiled."""
    if isinstance(spec, str) and "\n" in spec:
        return EMModel(Model.from_text(spec, "<spec>", overrides), overrides)
    return EMModel(Model.from_file(spec, overrides), overrides)


class EMModel:
    def __init__(self, model: Model, overrides: dict[str, Any]):
        self.model = model
        self.overrides = overrides

    @property
    def name(self) -> str:
        return self.model.name

    def problem(self, data, **options: Any) -> Problem:
        vocabs: dict = {}
        return bind(self.model, self.model.read(_data(data), options, vocabs), vocabs, options)

    def fit(self, data, observer: Callable[[dict], None] | None = None, init: "str | Fitted" = "default",
            **kwargs: Any) -> "Fitted":
        """`init` is an initializer's name (see emc.runtime.initialize) or a fitted model to start from."""
        settings = FitSettings(**{k: v for k, v in kwargs.items() if k in SETTINGS},
                               init=init if isinstance(init, str) else "default")
        settings.validate()  # the checks `emc fit` makes, before the data are read
        options = _data_options({k: v for k, v in kwargs.items() if k not in SETTINGS}, "fit", settings=True)
        problem = self.problem(data, **options)
        start = None
        if not isinstance(init, str):
            from emc.runtime.transfer import transfer_params
            start = transfer_params(init.saved, problem)
        result = fit_with_restarts(problem, settings, observer=observer, init=start)
        return Fitted(problem, result.params, settings, self.overrides, options, result.objective,
                      result.metrics, result.history)


@dataclass
class Fitted:
    problem: Problem | None
    params: ParamState | None
    settings: FitSettings
    overrides: dict[str, Any]
    options: dict[str, Any]
    objective: float
    metrics: dict[str, float]
    history: list[dict]
    _saved: SavedRun | None = None

    @property
    def saved(self) -> SavedRun:
        if self._saved is None:
            self._saved = SavedRun.in_memory(self.problem, self.params, self.settings, self.overrides, self.options,
                                             self.objective, self.metrics)
        return self._saved

    def decode(self, data, posteriors: bool = False, sample: int | None = None, seed: int = 1,
               **options: Any) -> list[str]:
        """The best structure of each example (or its posteriors, or `sample` structures drawn from
        its posterior, seeded by `seed`: see emc.runtime.decode.sample), in the task's output format."""
        return decode(self.saved, _data(data), _data_options(options, "decode"), posteriors, sample, seed).lines

    def evaluate(self, data, **options: Any) -> dict[str, float]:
        """Scores against the data's gold annotations (e.g. format="conll", gold_column=2)."""
        return decode(self.saved, _data(data), _data_options(options, "decode")).metrics

    def save(self, path: str | Path) -> None:
        if self.problem is None:
            raise ValueError("this model was loaded from disk; it is saved already")
        save_run(Path(path), self.problem, self.params, self.settings, self.overrides, self.options,
                 self.objective, self.metrics, self.history)


def load_run(path: str | Path) -> Fitted:
    saved = _load_saved(path)
    info = saved.info
    return Fitted(None, None, FitSettings.from_json(info["settings"]), info["overrides"], info["options"],
                  info["objective"], info["metrics"], [], saved)
