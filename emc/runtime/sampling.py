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


# Peak memory of `emc sample` per token drawn, measured on 200,000 tokens (mean length 100): a chain
# 130 bytes, a DMV 110, a PCFG 390 (its trees); and per distinct word, its name and a row of
# probabilities per state (a generous 1 KB).
BYTES_PER_TOKEN = 400
BYTES_PER_WORD = 1024


def check_sample_request(examples: int, seed: int, options: dict[str, Any], available: int | None = None) -> None:
    """Refuses counts no sample can be drawn with, and a request that cannot fit in memory (with
    the estimate), before drawing anything."""
    import math

    from emc.runtime.problem import available_memory

    if examples < 1:
        raise EmcError(f"emc sample --examples {examples}: give the number of examples to draw (at least 1)")
    if seed < 0:
        raise EmcError(f"emc sample --seed {seed}: give a whole number of at least 0")
    vocab_size = options.get("vocab_size")
    if vocab_size is not None and vocab_size < 1:
        raise EmcError(f"emc sample --vocab-size {vocab_size}: give the number of distinct values (at least 1)")
    mean_length = options.get("mean_length")
    if mean_length is not None and not (math.isfinite(mean_length) and mean_length > 0):
        raise EmcError(f"emc sample --mean-length {mean_length}: give a mean sentence length above 0")
    need = examples * (mean_length or 15.0) * BYTES_PER_TOKEN + (vocab_size or 1000) * BYTES_PER_WORD
    available = available_memory() if available is None else available
    if available is not None and need > available:
        raise EmcError(f"emc sample: {examples:,} examples of mean length {mean_length:g} over {vocab_size or 1000:,} "
                       f"values would need about {need / 2 ** 30:,.1f} GiB, but this machine has "
                       f"{available / 2 ** 30:.1f} GiB available; draw fewer or shorter examples")


def sample_text(spec: str, overrides: dict[str, Any], examples: int, seed: int, options: dict[str, Any]) -> str:
    check_sample_request(examples, seed, options)
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
