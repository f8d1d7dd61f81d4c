"""Text in a random language with known word boundaries: `emc sample specs/segment.em`, and the
tests' unseen language.

The language is a lexicon of --vocab-size distinct words over an alphabet of ALPHABET_SIZE symbols
(word lengths 1..maxlen, most of them 2 to 5), used with Zipfian frequencies; an utterance is a
Poisson number of words (mean --mean-length, at least one) drawn independently. Printed with
spaces between words, which are the gold segmentation (`emc fit --gold-spaces`).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from emc.spec.errors import EmcError
from emc.spec.model import CheckedModel

FORMATS = ("tokens",)  # the spaces are the gold segmentation

ALPHABET_SIZE = 16
# Greek letters: the symbols of a "language" emc has never been shown (any characters would do).
DEFAULT_ALPHABET = "αβγδεζηθικλμνξοπρστυφχψω"[:ALPHABET_SIZE]


def lexicon(rng: np.random.Generator, size: int, max_length: int, alphabet: str = DEFAULT_ALPHABET) -> list[str]:
    """`size` distinct random words, lengths 1..max_length (mostly 2 to 5)."""
    words: list[str] = []
    seen: set[str] = set()
    attempts = 0
    while len(words) < size:
        attempts += 1
        if attempts > 100 * size:
            raise EmcError(f"cannot draw {size} distinct words of at most {max_length} symbols")
        length = int(min(max_length, max(1, rng.poisson(3.0))))
        word = "".join(rng.choice(list(alphabet), size=length))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


def sample(model: CheckedModel, args: dict[str, Any], rng: np.random.Generator, examples: int,
           options: dict[str, Any]) -> list[list[str]]:
    """`examples` utterances, each a list of words."""
    words = lexicon(rng, options.get("vocab_size") or 1000, args["maxlen"])
    frequency = 1.0 / np.arange(1, len(words) + 1)
    frequency /= frequency.sum()
    mean_length = options.get("mean_length") or 15.0
    lengths = np.maximum(1, rng.poisson(mean_length, size=examples))
    return [[words[w] for w in rng.choice(len(words), size=n, p=frequency)] for n in lengths]


def format_sentences(utterances: list[list[str]], fmt: str) -> str:
    return "".join(" ".join(words) + "\n" for words in utterances)
