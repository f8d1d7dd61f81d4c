"""How `emc decode --posteriors` prints a token's distribution over values (heads, labels)."""
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
