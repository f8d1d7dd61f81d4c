"""bench/alignment_pr_hansards.py --halves: the AER of the odd- and of the even-numbered test
pairs, read from the links `emc decode` prints."""
import importlib
import sys

import pytest

from conftest import ROOT


def _bench():
    bench = str(ROOT / "bench")
    sys.path.insert(0, bench)
    try:
        return importlib.import_module("alignment_pr_hansards")
    finally:
        while bench in sys.path:  # the script puts bench/ on the path for its sibling too
            sys.path.remove(bench)


def test_each_half_sums_its_own_pairs():
    """Sentence 1 and 3 are the odd half, 2 the even one; a half's AER sums its pairs' counts as
    emc's AER does (33.3%, where the mean of the pairs' AERs would be 25%)."""
    gold = [(frozenset({(0, 0)}), frozenset({(0, 0), (1, 1)})),
            (frozenset({(0, 1)}), frozenset({(0, 1)})),
            (frozenset({(0, 0), (1, 1)}), frozenset({(0, 0), (1, 1)}))]
    predicted = [{(0, 0)}, {(1, 0)}, {(0, 0), (0, 1)}]
    halves = _bench().half_scores(predicted, gold)
    assert halves["odd"] == pytest.approx(100 / 3)
    assert halves["even"] == pytest.approx(100.0)


def test_printed_links_are_read_one_set_a_pair():
    """`i-j` links, one line a pair; an empty line is a pair with no links."""
    assert _bench().read_links("0-1 2-0\n\n1-1\n") == [{(0, 1), (2, 0)}, set(), {(1, 1)}]
