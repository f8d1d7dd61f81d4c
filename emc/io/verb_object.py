"""Verb-object pairs from CoNLL-2000 chunked text (`word POS IOB-chunk` per line, blank lines
between sentences), for latent classes over tuples (specs/verb_object.em): a VP chunk's last verb
(a token tagged VB*) and the last noun (NN*) of the NP chunk right after it, both lowercased, so
"[VP has acquired] [NP a stake]" gives (acquired, stake). A VP chunk with no verb, or an NP chunk
with no noun, gives no pair."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

from emc.io.readers import read_lines
from emc.spec.errors import DataError

Chunk = tuple[str, list[tuple[str, str]]]  # (chunk type, or "O" outside chunks; its (word, tag)s)


def chunked_sentences(path: str | Path) -> Iterator[list[Chunk]]:
    """Each sentence as its chunks, from IOB2 chunk tags (an I- tag after a different type starts a chunk)."""
    sentence: list[Chunk] = []
    for number, line in read_lines(path):
        parts = line.split()
        if not parts:
            if sentence:
                yield sentence
            sentence = []
            continue
        if len(parts) != 3:
            raise DataError(str(path), number, f"expected `word POS chunk`, found {len(parts)} column(s)")
        word, tag, chunk = parts
        kind = "O" if chunk == "O" else chunk[2:]
        if chunk.startswith("B-") or kind == "O" or not sentence or sentence[-1][0] != kind:
            sentence.append((kind, []))
        sentence[-1][1].append((word, tag))
    if sentence:
        yield sentence


def verb_object_pairs(path: str | Path) -> list[tuple[str, str]]:
    """(verb, noun) for each VP chunk followed at once by an NP chunk, as the module docstring says."""
    out = []
    for sentence in chunked_sentences(path):
        for (kind, tokens), (next_kind, next_tokens) in zip(sentence, sentence[1:]):
            if kind != "VP" or next_kind != "NP":
                continue
            verbs = [w for w, t in tokens if t.startswith("VB")]
            nouns = [w for w, t in next_tokens if t.startswith("NN")]
            if verbs and nouns:
                out.append((verbs[-1].lower(), nouns[-1].lower()))
    return out
