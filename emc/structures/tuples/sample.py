"""Tuples from a random latent-class model: `emc sample specs/verb_object.em`.

Each example is one token per field the latent declaration binds (`v ||| n`): its class is drawn
from the class prior (Dirichlet(1) over args["classes"]), then each field's token independently
given the class, from --vocab-size values named after the field (v0, v1, ...; n0, n1, ...), each
class's distribution Dirichlet(0.05): peaked on values of its own, so the fields are dependent
through the class. Printed one example per line, fields separated by `|||` in the order the
latent declaration names them, which `emc fit` reads.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from emc.io.fields import SEPARATOR
from emc.spec.model import CheckedModel
from emc.structures.label import field_slots

FORMATS = ("fields",)


def sample(model: CheckedModel, args: dict[str, Any], rng: np.random.Generator, examples: int,
           options: dict[str, Any]) -> list[list[str]]:
    """`examples` tuples, each one token per field."""
    K = int(args["classes"])
    vocab_size = options.get("vocab_size") or 1000
    fields = list(field_slots(model.binding))
    prior = rng.dirichlet(np.ones(K))
    per_class = [rng.dirichlet(np.full(vocab_size, 0.05), size=K) for _ in fields]
    classes = rng.choice(K, size=examples, p=prior)
    columns = [[f"{name}{int(rng.choice(vocab_size, p=table[c]))}" for c in classes]
               for name, table in zip(fields, per_class)]
    return [list(row) for row in zip(*columns)]


def format_sentences(tuples: list[list[str]], fmt: str) -> str:
    return "".join(f" {SEPARATOR} ".join(row) + "\n" for row in tuples)
