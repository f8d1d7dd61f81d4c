"""`emc sample`: examples drawn from a random model of a spec, for structures that can sample.

The sampler is the `sample` module of the package holding the structure's code for this binding
(emc/structures/registry.py `package_for`: a span tree with labels samples as a PCFG, a label over
several fields as tuples). It declares FORMATS, the output formats it prints, the first its
default: the format `emc fit` reads with the true structures as gold.
"""
from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from emc.spec.check import check
from emc.spec.errors import EmcError
from emc.spec.parse import parse_file
from emc.structures.registry import package_for


def sample_text(spec: str, overrides: dict[str, Any], examples: int, seed: int, options: dict[str, Any]) -> str:
    model = check(parse_file(spec), overrides)
    name = model.structure.name
    package = package_for(name, model.binding)
    module = f"emc.structures.{package}.sample"
    try:
        sampler = importlib.import_module(module)
    except ModuleNotFoundError as err:
        if err.name != module:
            raise
        raise EmcError(f"emc sample: the {name} structure cannot sample data yet") from None
    fmt = options.get("format") or sampler.FORMATS[0]
    if fmt not in sampler.FORMATS:
        raise EmcError(f"emc sample: the {package} sampler prints formats {', '.join(sampler.FORMATS)}, not '{fmt}'")
    rng = np.random.default_rng(seed)
    drawn = sampler.sample(model, model.binding.args, rng, examples, options)
    return sampler.format_sentences(drawn, fmt)
