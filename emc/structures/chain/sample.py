"""Data from a random chain model: `emc sample`, and the demo's known HMM.

The true model is drawn so that its states are recoverable: each state emits mostly from its own
words (Dirichlet(0.05) over the vocabulary), transitions are Dirichlet(0.5), and the STOP
probability gives sentences of about --mean-length tokens.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from emc.spec.model import CheckedModel

FORMATS = ("tokens", "conll")  # conll: each word with its true state, the gold of `emc fit --format conll`


def sample(model: CheckedModel, args: dict[str, Any], rng: np.random.Generator, examples: int,
           options: dict[str, Any]) -> list[list[tuple[str, str]]]:
    """`examples` sentences of (word, state) pairs from a random order-1/2 chain."""
    K = args["states"]
    order = args["order"]
    vocab_size = options.get("vocab_size") or 1000
    mean_length = options.get("mean_length") or 15.0
    words = [f"w{i}" for i in range(vocab_size)]
    emit = np.cumsum(rng.dirichlet(np.full(vocab_size, 0.05), size=K), axis=1)
    contexts = (K + 1) ** order
    trans = np.cumsum(rng.dirichlet(np.full(K, 0.5), size=contexts), axis=1)
    stop = 1.0 / mean_length if args["stop"] else 0.0
    out = []
    for _ in range(examples):
        history = [K] * order  # START
        sentence = []
        length = None if args["stop"] else max(1, rng.poisson(mean_length))
        while True:
            context = 0
            for h in history:
                context = context * (K + 1) + h
            z = min(int(np.searchsorted(trans[context], rng.random())), K - 1)
            w = min(int(np.searchsorted(emit[z], rng.random())), vocab_size - 1)
            sentence.append((words[w], str(z)))
            history = (history + [z])[-order:]
            if (length is None and rng.random() < stop) or (length is not None and len(sentence) >= length):
                break
        out.append(sentence)
    return out


def format_sentences(sentences: list[list[tuple[str, str]]], fmt: str) -> str:
    if fmt == "conll":
        return "".join("".join(f"{w} {z}\n" for w, z in s) + "\n" for s in sentences)
    return "".join(" ".join(w for w, _ in s) + "\n" for s in sentences)
