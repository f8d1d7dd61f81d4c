"""A new word whose views were seen in training, each only in states the other blocks rule out,
still decodes (issue 33: 120 CoNLL-2000 test sentences had probability 0 under hmm_suffix): at
decode time an entry EM left at 0 in a learned table over a vocabulary takes a small share of the
value's training frequency (emc/runtime/unseen.py)."""
from __future__ import annotations

import numpy as np
import pytest

import emc
from emc.runtime.unseen import UNSEEN_WEIGHT, unseen_outcomes

SPEC = """model two_views
observed x : tokens
latent   z : chain(x, states=2)
multinomial trans  : P(z | z.prev)
multinomial emit   : P(x | z)
multinomial suffix : P(x.suffix(2) | z)
"""
# "ef" is the only hapax; the new word "zcd" has the suffix "cd" of a frequent word
LINES = ["ab cd", "ab cd ab", "cd ab ef"]


@pytest.fixture(scope="module")
def fitted():
    """A fitted model whose tables are then set by hand, with the exact zeros EM leaves: state 0
    emits ab and cd, state 1 only the hapax ef (so only state 1 has `<unk>` mass); the suffix
    cd only in state 0."""
    fitted = emc.load(SPEC).fit(LINES, iterations=1)
    saved = fitted.saved
    layout = fitted.problem.layout
    words, suffixes = saved.vocabs["vocab:x"], saved.vocabs["vocab:x.suffix(2)"]
    tables = {t.name: t.matrix(saved.theta) for t in layout.tables}
    tables["trans"][:] = 1.0 / tables["trans"].shape[0]
    for name, vocab in (("emit", words), ("suffix", suffixes)):
        table = tables[name]
        table[:] = 0.0
        table[[vocab.index["ab"], vocab.index["cd"]], 0] = 0.5
        table[vocab.index["ef"], 1] = 1.0
    return fitted


def test_the_blocks_of_a_new_word_share_no_state_without_interpolation(fitted):
    saved = fitted.saved
    layout = fitted.problem.layout
    theta = unseen_outcomes(saved.theta, layout, saved.vocabs, weight=0.0)
    tables = {t.name: t.matrix(theta) for t in layout.tables}
    unk_emission = tables["emit"][0]
    cd_suffix = tables["suffix"][saved.vocabs["vocab:x.suffix(2)"].index["cd"]]
    assert not np.any(unk_emission * cd_suffix)  # the cause: every state 0 for "zcd"


def test_a_new_word_whose_views_were_seen_apart_decodes(fitted):
    assert fitted.decode(["ab zcd"]) == ["ab/0 zcd/1"]


def test_only_the_zeros_of_tables_over_a_vocabulary_change(fitted):
    saved = fitted.saved
    layout = fitted.problem.layout
    plain = unseen_outcomes(saved.theta, layout, saved.vocabs, weight=0.0)
    floored = unseen_outcomes(saved.theta, layout, saved.vocabs)
    for t in layout.tables:
        before, after = t.matrix(plain), t.matrix(floored)
        if t.name == "trans":
            np.testing.assert_array_equal(after, before)  # over states, not a vocabulary
            continue
        counts = saved.vocabs[t.outcome_spaces[0]].counts.astype(float)
        counts[0] = np.count_nonzero(counts == 1)  # <unk>: the hapaxes' share
        frequencies = np.broadcast_to((counts / counts.sum())[:, None], before.shape)
        np.testing.assert_array_equal(after[before > 0], before[before > 0])  # EM's estimates, bit for bit
        np.testing.assert_allclose(after[before == 0], UNSEEN_WEIGHT * frequencies[before == 0], rtol=1e-12)
        assert np.all(after[counts > 0] > 0)


def test_known_words_decode_as_without_interpolation(fitted):
    """The weight is small enough that a training word's own rows decide (see UNSEEN_WEIGHT)."""
    assert fitted.decode(["ab cd ef", "cd ab"]) == ["ab/0 cd/0 ef/1", "cd/0 ab/0"]
