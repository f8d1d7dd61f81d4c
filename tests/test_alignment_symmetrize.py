"""Symmetrisation heuristics and alignment error rate, on hand-worked examples."""
from __future__ import annotations

import pytest

from emc.eval.alignment import alignment_scores
from emc.io.bitext import read_gold
from emc.spec.errors import DataError
from emc.structures.alignment.symmetrize import symmetrize

# forward (source->target) and reverse links of one pair; the intersection is {(0,0), (2,2)}
FORWARD = {(0, 0), (1, 1), (2, 2), (4, 4)}
REVERSE = {(0, 0), (1, 2), (2, 2), (3, 5), (3, 4)}


def test_intersection_and_union():
    assert symmetrize(FORWARD, REVERSE, "intersection") == {(0, 0), (2, 2)}
    assert symmetrize(FORWARD, REVERSE, "union") == FORWARD | REVERSE


def test_grow_diag_adds_union_neighbours_of_unaligned_words():
    # (1, 1) neighbours (0, 0) and aligns source word 1 and target word 1, both unaligned; then
    # (1, 2) would align words already aligned; (3, 4), (3, 5), (4, 4) neighbour no link
    assert symmetrize(FORWARD, REVERSE, "grow-diag") == {(0, 0), (1, 1), (2, 2)}


def test_final_and_adds_only_links_between_two_unaligned_words():
    grown = {(0, 0), (1, 1), (2, 2)}
    # forward links first: (4, 4) joins two unaligned words; then the reverse ones: (3, 4) has
    # its target word aligned already, (3, 5) neither
    assert symmetrize(FORWARD, REVERSE, "grow-diag-final-and") == grown | {(4, 4), (3, 5)}
    # grow-diag-final: one unaligned word is enough, so (3, 4) joins, and then (3, 5) for target 5
    assert symmetrize(FORWARD, REVERSE, "grow-diag-final") == grown | {(4, 4), (3, 4), (3, 5)}


def test_unknown_heuristic():
    with pytest.raises(ValueError, match="unknown symmetrization"):
        symmetrize(FORWARD, REVERSE, "grow")


def test_alignment_error_rate_by_hand():
    """A = {a, b, c, d}, S = {a, e}, P = S + {b}: |A&S| = 1, |A&P| = 2: AER = 1 - 3/6."""
    a, b, c, d, e = (0, 0), (1, 1), (2, 2), (3, 3), (4, 4)
    scores = alignment_scores([{a, b, c, d}], [(frozenset({a, e}), frozenset({a, e, b}))])
    assert scores == {"aer": 0.5, "precision": 0.5, "recall": 0.5}


def test_naacl_gold_is_one_based_with_the_source_position_first(tmp_path):
    gold = tmp_path / "gold.wa"
    gold.write_text("0001 1 2 S\n0001 2 1 P\n0002 1 1\n")
    (sure, possible), (sure2, _) = read_gold(str(gold), "naacl", ([2, 1], [2, 1]))
    assert sure == {(0, 1)} and possible == {(0, 1), (1, 0)} and sure2 == {(0, 0)}


@pytest.mark.parametrize("content, message", [
    ("0001 1 3 S\n", "gold.wa:1: error: link 0-2 (0-based) is outside pair 1"),
    ("0003 1 1 S\n", "gold.wa:1: error: sentence 3 does not exist"),
    ("0001 1 x\n", "gold.wa:1: error: expected `SENT I J [S|P]`"),
])
def test_bad_gold_names_file_and_line(tmp_path, content, message):
    gold = tmp_path / "gold.wa"
    gold.write_text(content)
    with pytest.raises(DataError) as err:
        read_gold(str(gold), "naacl", ([2, 1], [2, 1]))
    assert message in str(err.value)


def test_pharaoh_gold_marks_possible_links_with_a_question_mark(tmp_path):
    gold = tmp_path / "gold.a"
    gold.write_text("0-0 1?1\n\n")
    (sure, possible), (sure2, possible2) = read_gold(str(gold), "pharaoh", ([2, 1], [2, 1]))
    assert sure == {(0, 0)} and possible == {(0, 0), (1, 1)} and not sure2 and not possible2
