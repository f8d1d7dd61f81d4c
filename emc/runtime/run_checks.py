"""Checking a saved run folder before anything is decoded with it: a folder copied in part, edited
by hand or put together from two runs must be refused with what is wrong, never decode silently
with parameters that belong to another model (a cut vocab.json shifted no ids but made words
`<unk>`; a spec.em of another model read the parameters as tables of other shapes).

Each check raises EmcError naming the file and what is wrong; `load_run` adds what to do.
"""
from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from emc.io.vocab import Vocabulary
from emc.spec.errors import EmcError

# run.json's entries that decoding and `--init RUN` read, and the JSON type each must have
RUN_INFO_TYPES: dict[str, type | tuple[type, ...]] = {
    "model": str, "structure": str, "overrides": dict, "args": dict, "labels": dict, "vocab_sizes": dict,
    "sizes": dict, "settings": dict, "options": dict, "metrics": dict,
}


def spec_digest(text: str) -> str:
    """What run.json records of the spec it was fitted with (`spec_sha256`)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _json_type(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "true/false", type(None): "null"}.get(
        type(value), "a number")


def check_run_info(info: Any) -> None:
    """run.json's entries have the types the fit wrote (raises EmcError naming the first that has not)."""
    if not isinstance(info, dict):
        raise EmcError(f"run.json holds {_json_type(info)}, not the object emc fit writes")
    for key, kind in RUN_INFO_TYPES.items():
        if key not in info:
            raise EmcError(f"run.json has no '{key}'")
        if not isinstance(info[key], kind):
            raise EmcError(f"run.json's '{key}' is {_json_type(info[key])}, not {_json_type(kind())}")
    if info.get("workdir") is not None and not isinstance(info["workdir"], str):
        raise EmcError(f"run.json's 'workdir' is {_json_type(info['workdir'])}, not a folder's name")
    for name, size in info["vocab_sizes"].items():
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise EmcError(f"run.json's vocabulary size of '{name}' is {size!r}, not a whole number of at least 1")
    for name, values in info["labels"].items():
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise EmcError(f"run.json's labels of '{name}' are not a list of names")
    for name, value in info["args"].items():
        if not isinstance(value, (int, float, str)):
            raise EmcError(f"run.json's structure argument '{name}' is {_json_type(value)}")
    _check_settings(info["settings"])


def _check_settings(settings: dict[str, Any]) -> None:
    from emc.runtime.settings import FitSettings, fit_options, option_type

    for f in fit_options():
        if f.name not in settings or (settings[f.name] is None and f.default is None):
            continue
        value, kind = settings[f.name], option_type(f)
        fits = isinstance(value, (int, float)) and not isinstance(value, bool) if kind is float else \
            isinstance(value, kind) and not (kind is int and isinstance(value, bool))
        if not fits:
            raise EmcError(f"run.json's setting '{f.name}' is {value!r}, not {kind.__name__}")
    if not isinstance(settings.get("algorithm", ""), str) or not isinstance(settings.get("regularizers", {}), dict):
        raise EmcError("run.json's settings 'algorithm' or 'regularizers' are of the wrong type")
    try:
        FitSettings.from_json(settings)
    except (TypeError, ValueError, AttributeError) as err:
        raise EmcError(f"run.json's settings cannot be read ({err})") from None


def check_spec_text(info: dict[str, Any], text: str) -> None:
    """spec.em is the spec the model was fitted with, by the digest run.json records (checked
    before the spec is: another spec may not even check with this run's overrides)."""
    recorded = info.get("spec_sha256")
    if isinstance(recorded, str) and recorded != spec_digest(text):
        raise EmcError("spec.em is not the spec this model was fitted with (its text changed after the fit)")


def check_spec(info: dict[str, Any], model_name: str, structure: str) -> None:
    """spec.em declares the model the parameters are of (all a run saved before the digest was
    recorded can tell)."""
    if model_name != info["model"] or structure != info["structure"]:
        raise EmcError(f"spec.em declares model {model_name} ({structure}), but the parameters are of model "
                       f"{info['model']} ({info['structure']})")


def check_vocabularies(info: dict[str, Any], vocabs: dict[str, Vocabulary]) -> None:
    """vocab.json holds every vocabulary the model was trained on, whole."""
    for name, size in info["vocab_sizes"].items():
        if name not in vocabs:
            raise EmcError(f"vocab.json has no vocabulary '{name}', which the model was trained on")
        if len(vocabs[name]) != size:  # both are written from one vocabulary when the model is saved
            raise EmcError(f"vocab.json's '{name}' has {len(vocabs[name])} values, but the model was trained on "
                           f"{size}: " + ("the file was cut" if len(vocabs[name]) < size else "values were added to it"))


def check_theta(theta: np.ndarray, expected: int) -> None:
    """params.npz's theta is the model's parameters: a flat array of `expected` probabilities."""
    if theta.dtype.kind not in "fiu":
        raise EmcError(f"params.npz's theta holds {theta.dtype} values, not numbers")
    if theta.ndim != 1 or theta.size != expected:
        raise EmcError(f"params.npz's theta has shape {theta.shape}, but this spec's tables at the trained sizes "
                       f"hold {expected} parameters: the parameters are of another model")
    if not np.all(np.isfinite(theta)) or np.any(theta < 0):
        raise EmcError("params.npz's theta holds values that are not probabilities (NaN, infinite or negative)")
