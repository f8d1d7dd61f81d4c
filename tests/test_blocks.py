"""One M-step interface for every kind of block (emc/runtime/blocks/block.py): each table's block
is chosen once, with the layout; the command line's prior replaces a plain block's only; the
M-step and the log prior ask every table's block alike, and a featured block's answers are its
log-linear model's."""
from __future__ import annotations

import numpy as np

from conftest import ROOT
from emc.priors import Prior, SmoothedL0
from emc.runtime.blocks.block import Block, LogLinearBlock, PlainBlock, table_block
from emc.runtime.mstep import log_prior, maximize
from emc.runtime.params import ParamLayout, ParamState
from emc.spec.check import check
from emc.spec.parse import parse_text

SEGMENT = (ROOT / "specs" / "segment.em").read_text()  # a learned block and a fixed weight


def layout_of(text: str) -> ParamLayout:
    checked = check(parse_text(text, "test.em"))
    sizes = {space: 3 for f in checked.tables() for space in f.context_spaces + f.outcome_spaces}
    return ParamLayout.build(checked, sizes)


def test_each_table_gets_its_kinds_block_once():
    layout = layout_of(SEGMENT)
    kinds = {t.name: type(t.block) for t in layout.tables}
    assert set(kinds.values()) == {PlainBlock, Block}
    assert all((kinds[t.name] is PlainBlock) == (t.kind == "learned") for t in layout.tables)
    assert all(t.featured is None and t.prior is t.block.prior for t in layout.tables)


def test_the_command_lines_prior_replaces_a_plain_blocks_only():
    sparse = SmoothedL0(0.0, alpha=2.0, beta=0.5)
    for t in layout_of(SEGMENT).tables:
        block = table_block(t, {t.name: sparse})
        assert block.prior == (sparse if t.kind == "learned" else t.prior)
        assert table_block(t, None) is t.block
    featured = LogLinearBlock(Prior(), loglinear=object())
    assert featured.with_prior(sparse) is featured


class FakeLogLinear:
    """A log-linear model that records what the M-step hands it."""

    weight_shape = (2, 1)
    identity = None

    def maximize(self, counts, start, iterations, probabilities):
        probabilities[:] = 0.5
        self.seen = (counts.copy(), start.copy(), iterations)
        return start + 1.0

    def penalty(self, weights):
        return float(weights.sum())


def test_the_m_step_asks_every_block_alike():
    layout = layout_of(SEGMENT)
    learned = layout.learned()[0]
    fake = FakeLogLinear()
    learned.block = LogLinearBlock(learned.prior, fake)
    previous = ParamState.plain(np.full(layout.size, 0.25), layout)
    counts = np.arange(layout.size, dtype=float)
    new = maximize(layout, counts.copy(), previous, featured_iterations=7)
    assert fake.seen[2] == 7 and np.array_equal(fake.seen[1], np.zeros((2, 1)))
    assert np.array_equal(fake.seen[0].ravel(), counts[learned.entries])
    assert np.all(new.theta[learned.entries] == 0.5)
    assert np.array_equal(new.features[learned.name], np.ones((2, 1)))
    for t in layout.tables:
        if t is not learned:  # the fixed weight is kept as it was
            assert np.all(new.theta[t.entries] == 0.25)
    assert log_prior(layout, new) == -2.0  # minus the fake penalty, the sum of the weights
