"""`emc sample` for the PCFG, the DMV and latent classes over tuples (issue 16): the samples read
back through `emc fit` (the PCFG's and the DMV's with their true structures as gold), are
determined by the seed, and have the shape of their models: binary trees over their yields,
projective single-rooted dependency trees, fields dependent through the class."""
from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from conftest import ROOT
from emc.cli import main
from emc.io.ptb import parse_stripped
from emc.runtime.sampling import sample_text

PCFG, DMV, TUPLES = (str(ROOT / "specs" / name) for name in ("pcfg.em", "dmv.em", "verb_object.em"))
SMALL = {"vocab_size": 8, "mean_length": 5.0}
CASES = {  # spec, overrides, `emc fit` arguments, the metrics its run.json holds
    "pcfg": (PCFG, {"labels": "3"}, ["--labels", "3", "--format", "ptb"], "unlabeled_f1"),
    "dmv": (DMV, {}, ["--format", "conll"], "directed"),
    "tuples": (TUPLES, {"classes": "3"}, ["--classes", "3"], None),
}


@pytest.mark.parametrize("name", CASES)
def test_samples_read_back_by_emc_fit(name, tmp_path, capsys):
    spec, overrides, fit_args, metric = CASES[name]
    data = tmp_path / "sampled.txt"
    data.write_text(sample_text(spec, overrides, 60, 1, SMALL))
    run = tmp_path / "run"
    assert main(["fit", spec, str(data), *fit_args, "--iterations", "2", "--out", str(run)]) == 0
    metrics = json.loads((run / "run.json").read_text())["metrics"]
    if metric is not None:
        assert 0.0 <= metrics[metric] <= 1.0


@pytest.mark.parametrize("name", CASES)
def test_the_seed_determines_the_sample(name):
    spec, overrides, _, _ = CASES[name]
    first = sample_text(spec, overrides, 20, 7, SMALL)
    assert sample_text(spec, overrides, 20, 7, SMALL) == first
    assert sample_text(spec, overrides, 20, 8, SMALL) != first


def test_pcfg_lines_are_binary_trees_over_their_yields():
    trees = sample_text(PCFG, {"labels": "4"}, 200, 3, SMALL).splitlines()
    yields = sample_text(PCFG, {"labels": "4"}, 200, 3, {**SMALL, "format": "tokens"}).splitlines()
    assert len(trees) == len(yields) == 200
    for line, words in zip(trees, yields):
        root = parse_stripped(line)
        binary, leaves, stack = 0, [], [root]
        while stack:
            node = stack.pop()
            if node.is_leaf:
                leaves.append(node.label)
            elif len(node.children) == 1:  # a preterminal over its symbol
                assert node.children[0].is_leaf and 0 <= int(node.label) < 4, line
                stack.append(node.children[0])
            else:
                assert len(node.children) == 2 and 0 <= int(node.label) < 4, line
                binary += 1
                stack += reversed(node.children)
        assert leaves == words.split()
        assert binary == len(leaves) - 1
    assert 3.0 < np.mean([len(w.split()) for w in yields]) < 7.0  # --mean-length 5


def _conll_sentences(text: str) -> list[list[tuple[str, int]]]:
    blocks = [b for b in text.split("\n\n") if b.strip()]
    return [[(cols[3], int(cols[6])) for cols in (line.split("\t") for line in b.splitlines())] for b in blocks]


def _is_projective_tree(heads: list[int]) -> bool:
    """heads[i - 1] is word i's head (0 the root): one root, no cycle, and every word between a
    head and its dependent descends from that head."""
    if heads.count(0) != 1:
        return False

    def ancestors(word: int) -> list[int]:
        chain = []
        while word != 0:
            if word in chain or len(chain) > len(heads):
                return []
            chain.append(word)
            word = heads[word - 1]
        return chain

    if any(not ancestors(w) for w in range(1, len(heads) + 1)):
        return False
    for dependent, head in enumerate(heads, 1):
        if head == 0:
            continue
        for between in range(min(head, dependent) + 1, max(head, dependent)):
            if head not in ancestors(between):
                return False
    return True


def test_projectivity_check_refuses_crossing_arcs():
    assert _is_projective_tree([2, 0, 2]) and _is_projective_tree([0, 1, 1, 3])
    assert not _is_projective_tree([3, 0, 2, 2])  # the root, word 2, lies under the arc 3 -> 1
    assert not _is_projective_tree([0, 0]) and not _is_projective_tree([2, 1])


def test_dmv_samples_are_projective_trees_with_one_root():
    text = sample_text(DMV, {}, 300, 4, {"vocab_size": 6, "mean_length": 8.0})
    sentences = _conll_sentences(text)
    assert len(sentences) == 300
    for sentence in sentences:
        assert _is_projective_tree([h for _, h in sentence]), sentence
    assert 6.0 < np.mean([len(s) for s in sentences]) < 10.0  # --mean-length 8
    tokens = sample_text(DMV, {}, 300, 4, {"vocab_size": 6, "mean_length": 8.0, "format": "tokens"})
    assert [line.split() for line in tokens.splitlines()] == [[t for t, _ in s] for s in sentences]


def _mutual_information(pairs: list[tuple[str, str]]) -> float:
    joint = Counter(pairs)
    left, right = Counter(a for a, _ in pairs), Counter(b for _, b in pairs)
    n = len(pairs)
    return sum(c / n * np.log(c * n / (left[a] * right[b])) for (a, b), c in joint.items())


def test_tuple_fields_depend_on_each_other_through_the_class():
    lines = sample_text(TUPLES, {"classes": "3"}, 2000, 5, {"vocab_size": 10}).splitlines()
    pairs = [tuple(part.strip() for part in line.split("|||")) for line in lines]
    assert len(pairs) == 2000 and all(v.startswith("v") and n.startswith("n") for v, n in pairs)
    rng = np.random.default_rng(0)
    shuffled = list(zip([v for v, _ in pairs], rng.permutation([n for _, n in pairs])))
    # independent fields would show only the small-sample MI of the shuffled pairs (~0.02 nats)
    assert _mutual_information(pairs) > 5 * _mutual_information(shuffled)
