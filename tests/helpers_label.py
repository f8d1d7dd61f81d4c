"""Documents drawn from a known mixture of multinomials, written as JSON lines, for the label tests."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from emc.runtime.problem import Model, Problem, bind


def mixture_documents(rng: np.random.Generator, classes: int, documents: int, vocab_size: int = 40,
                      length: tuple[int, int] = (10, 40), concentration: float = 0.1) -> tuple[list[list[str]], list[int]]:
    """Documents from a random mixture: each class's word distribution is Dirichlet(concentration)
    over `vocab_size` letter words, the class is uniform."""
    words = [_word(i) for i in range(vocab_size)]
    emit = rng.dirichlet(np.full(vocab_size, concentration), size=classes)
    docs, gold = [], []
    for _ in range(documents):
        c = int(rng.integers(classes))
        n = int(rng.integers(length[0], length[1] + 1))
        docs.append([words[w] for w in rng.choice(vocab_size, size=n, p=emit[c])])
        gold.append(c)
    return docs, gold


def _word(i: int) -> str:
    """A letters-only word for id i (the default tokenizer splits on anything else)."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    return letters[i % 26] + letters[i // 26 % 26] + "w"


def write_jsonl(path: Path, docs: list[list[str]], gold: list, labeled: set[int] = frozenset(),
                field: str = "given") -> Path:
    """One JSON object per document: its text, its gold `label`, and `field` = its label for the
    documents in `labeled`."""
    with path.open("w", encoding="utf-8") as f:
        for i, (doc, g) in enumerate(zip(docs, gold)):
            record = {"text": " ".join(doc), "label": f"c{g}"}
            if i in labeled:
                record[field] = f"c{g}"
            f.write(json.dumps(record) + "\n")
    return path


def jsonl_problem(model: Model, path: Path, **options) -> Problem:
    options = {"format": "jsonl", **options}
    vocabs: dict = {}
    return bind(model, model.read(str(path), options, vocabs), vocabs, options)
