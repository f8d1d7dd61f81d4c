"""What a trained model gives, at decode time, to what it never saw in training: new values
(`<unk>`, emc/runtime/params.py: unknown_outcomes) and values never seen with a row (below).

EM leaves most entries of a learned table exactly 0: an E-step posterior that underflows is 0, and
a 0 stays 0 in every later iteration (specs/hmm_suffix.em on CoNLL-2000: 95% of `emit`, 97% of
`suffix`, 96% of `shape`). Such a 0 says "this state did not produce this value in training", not
"it cannot". For a training word it does no harm: the word's blocks were trained on the same
positions and agree on some state. A new word is scored by the product of blocks that never saw
its values together (its `<unk>` emission, a suffix seen in a few states, a shape seen in others),
and when their non-zero states do not meet, every state is 0 and the sentence has probability 0
(121 of CoNLL-2000's 2,012 test sentences). So at decode time, in each learned table over one
vocabulary, an entry EM left at exactly 0 takes the value interpolating with the vocabulary's
training frequencies would give it (Jelinek-Mercer):

    p'(v | row) = p(v | row)               where p(v | row) > 0
                  UNSEEN_WEIGHT * f(v)     where p(v | row) = 0

where f(v) is v's share of the training tokens, and `<unk>`'s share is that of the hapaxes (the
estimate unknown_outcomes gives a row). Every value seen in training is then possible in every
row. The entries EM estimated keep their exact values: interpolating them too, (1 - w) p + w f,
moves them by less than w, but that was enough to break a PCFG's ties between equally likely
trees the other way, so that decoding the training data no longer gave the fit's score. The fit
itself, and tables over anything else (transitions, lengths, ...), are unchanged.
"""
from __future__ import annotations

import numpy as np

from emc.io.vocab import Vocabulary
from emc.runtime.params import ParamLayout, unknown_outcomes

# The weight of the training frequencies in place of a 0: small enough that the rows a value was
# seen with decide wherever they allow anything, large enough not to underflow in a product of a
# few blocks.
# Measured on CoNLL-2000 test with hmm_suffix (45 states, fitted on train as the guide does): at
# 0, 121 sentences have probability 0; at 1e-10 to 1e-6, none, and the other 1,891 decode exactly
# as at 0 (many-to-one 55.33% over all 2,012); 1e-4 changes 3 of them, 1e-2 39 (55.37%).
UNSEEN_WEIGHT = 1e-6


def hapax_ids(vocabs: dict[str, Vocabulary]) -> dict[str, np.ndarray]:
    """The ids of the values seen once in training, per vocabulary."""
    return {name: np.flatnonzero(v.counts == 1) for name, v in vocabs.items()}


def training_frequencies(vocab: Vocabulary, size: int) -> np.ndarray | None:
    """f over a table's `size` outcomes: each value's share of the training tokens, `<unk>`'s the
    hapaxes' share; None when the vocabulary has no training counts."""
    counts = np.zeros(size)
    seen = vocab.counts[:size]
    counts[:len(seen)] = seen
    counts[0] = np.count_nonzero(seen == 1)
    total = counts.sum()
    return counts / total if total > 0 else None


def unseen_outcomes(theta: np.ndarray, layout: ParamLayout, vocabs: dict[str, Vocabulary],
                    featured: frozenset[str] = frozenset(), weight: float = UNSEEN_WEIGHT) -> np.ndarray:
    """The trained parameters as decoding reads them: `<unk>` given the hapax estimate, then the
    zeros of each dense learned table over one vocabulary, but the `featured` ones, given
    `weight` times the value's training frequency."""
    out = unknown_outcomes(theta, layout, hapax_ids(vocabs))
    for t in layout.learned():
        if t.sparse or t.name in featured or len(t.outcome_spaces) != 1 or t.outcome_spaces[0] not in vocabs:
            continue  # a sparse table gives unseen pairs its floor, a featured one its features' weight
        frequencies = training_frequencies(vocabs[t.outcome_spaces[0]], t.outcomes)
        if frequencies is not None:
            m = t.matrix(out)
            np.copyto(m, np.broadcast_to(weight * frequencies[:, None], m.shape), where=m == 0)
    return out
