"""Data of a label over several fields, label(v, n, classes=K): one example per line, its fields
separated by `|||` in the order the latent declaration names them (`v ||| n`), each field's
tokens its own vocabulary (emc/io/fields.py); one class per line as output; the classes' most
probable tokens per field for `emc info RUN` (summary)."""
from __future__ import annotations

from typing import Any

import numpy as np

from emc.io.corpus import Corpus
from emc.io.fields import SEPARATOR, read_fields
from emc.io.readers import require_examples
from emc.io.vocab import Vocabulary
from emc.spec.errors import DataError
from emc.spec.model import CheckedModel
from emc.structures.label import field_slots
from emc.structures.label.data import format_posterior, posterior_length, space_sizes  # noqa: F401

FORMATS = ("fields",)
FORMAT_HELP = {"fields": f"label over several observed variables: one example per line, its fields separated "
                         f"by '{SEPARATOR}' in the order the latent declaration names them"}


def read(model: CheckedModel, path: str, options: dict[str, Any], vocabs: dict[str, Vocabulary]) -> Corpus:
    fmt = options.get("format")
    if fmt not in (None, *FORMATS):
        raise DataError(path, None, f"a label over several fields reads `{SEPARATOR}`-separated fields, not '{fmt}'")
    names = list(field_slots(model.binding))
    fields, lines = read_fields(path, [vocabs.setdefault(f"vocab:{d}", Vocabulary()) for d in names], names)
    corpus = Corpus(path, dict(zip(names, fields)), lines)
    require_examples(path, len(corpus.nonempty()), "example with every field")
    return corpus


def pack(model: CheckedModel, corpus: Corpus, args: dict[str, Any], labels: dict[str, list[str]],
         options: dict[str, Any], vocabs: dict[str, Vocabulary], frozen: dict[str, int] | None) -> dict[str, np.ndarray]:
    if corpus.labeled_mask is not None and corpus.labeled_mask.any():
        raise DataError(corpus.path, None, "a label over several fields does not take labeled examples (--labeled) yet")
    return {f"offsets:{d}": corpus.fields[d].offsets for d in field_slots(model.binding)}


def decoded_length(corpus: Corpus, model: CheckedModel) -> np.ndarray:
    """One class per example."""
    return np.ones(len(corpus), np.int64)


def format_decoded(corpus: Corpus, model: CheckedModel, ex: int, decoded: np.ndarray, labels: dict[str, list[str]]) -> str:
    return str(int(decoded[0]))


def summary(model: CheckedModel, layout, vocabs: dict[str, Vocabulary], args: dict[str, Any], weights: np.ndarray,
            top: int = 8) -> list[str]:
    """`emc info RUN`: per class, most probable first (by the block over the class alone, when
    there is one), its probability and, for each learned block P(field | class), its `top` most
    probable tokens with their probabilities."""
    c = model.binding.latent
    learned = [f for f in model.factors if f.kind == "learned"]
    prior = next((f for f in learned if [a.text for a in f.outcome] == [c] and not f.context), None)
    K = args["classes"]
    p_class = layout.table(prior.table).matrix(weights)[:, 0] if prior is not None else np.full(K, 1.0 / K)
    blocks = [f for f in learned if [a.text for a in f.context] == [c] and len(f.outcome) == 1
              and f.outcome[0].attribute.tokens_of is not None]
    lines = []
    for k in np.argsort(-p_class, kind="stable"):
        lines.append(f"class {k}  P = {p_class[k]:.3f}")
        for f in blocks:
            column = layout.table(f.table).matrix(weights)[:, k]
            values = vocabs[f.outcome_spaces[0]].values
            best = np.argsort(-column, kind="stable")[:top]
            lines.append(f"  {f.name:<8} " + " ".join(f"{values[i]} {column[i]:.3f}" for i in best))
    return lines
