"""`emc sample`: examples drawn from a random model of a spec, for structures that can sample."""
from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from emc.spec.check import check
from emc.spec.errors import EmcError
from emc.spec.parse import parse_file


def sample_text(spec: str, overrides: dict[str, Any], examples: int, seed: int, options: dict[str, Any]) -> str:
    model = check(parse_file(spec), overrides)
    name = model.structure.name
    try:
        sampler = importlib.import_module(f"emc.structures.{name}.sample")
    except ModuleNotFoundError:
        raise EmcError(f"emc sample: the {name} structure cannot sample data yet") from None
    rng = np.random.default_rng(seed)
    drawn = sampler.sample(model, model.binding.args, rng, examples, options)
    return sampler.format_sentences(drawn, options.get("format") or "tokens")
