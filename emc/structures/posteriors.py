"""How `emc decode --posteriors` prints a token's distribution over values (heads, labels), a
sentence's span posteriors (whether each span is a constituent) and a segmentation's words."""
from __future__ import annotations

import numpy as np


def format_token_posteriors(words: list[str], marginals: np.ndarray) -> str:
    """Per token: the token, a tab, then VALUE:probability for the values above 1e-3, most
    probable first (ties in value order); `marginals` holds each token's values in turn."""
    m = marginals.reshape(len(words), -1) if len(words) else marginals.reshape(0, 1)
    out = []
    for w, row in zip(words, m):
        order = np.argsort(-row, kind="stable")
        out.append(f"{w}\t" + " ".join(f"{v}:{row[v]:.3f}" for v in order if row[v] >= 1e-3))
    return "\n".join(out) + "\n"


def nonempty_spans(n: int) -> list[tuple[int, int]]:
    """The non-empty spans (i, j) of a sentence of n symbols (fenceposts 0..n), by start then end:
    the order of span posteriors."""
    return [(i, j) for i in range(n) for j in range(i + 1, n + 1)]


def format_span_posteriors(n: int, marginals: np.ndarray) -> str:
    """`i-j:p` for each span that may or may not be a constituent (neither a single symbol nor
    the whole sentence), with P(constituent) = p >= 0.001, by start then end."""
    return " ".join(f"{i}-{j}:{p:.3f}" for (i, j), p in zip(nonempty_spans(n), marginals)
                    if 1 < j - i < n and p >= 1e-3)


def format_segment_posteriors(tokens: list[str], marginals: np.ndarray, joint: str = "") -> str:
    """One line per word (a run of tokens, joined by `joint`) with posterior probability >= 1e-3:
    its start (0-based position), the word and the probability; a blank line ends the example.
    `marginals` holds, per start, one value per length (1 up to its longest)."""
    m = marginals.reshape(len(tokens), -1) if len(tokens) else marginals.reshape(0, 1)
    out = [f"{i}\t{joint.join(tokens[i:i + l + 1])}\t{m[i, l]:.3f}" for i, l in zip(*np.nonzero(m >= 1e-3))]
    return "\n".join(out) + "\n"
