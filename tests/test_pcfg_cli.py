"""The PCFG (spantree with labels=K) end to end through the CLI: fit on Penn Treebank trees with
--max-length, unlabeled bracket F1 in the final line and in run.json, decoding to labeled
brackets whose spans score as the fit said, empty lines for skipped sentences, posteriors."""
from __future__ import annotations

import json
import re

from conftest import ROOT
from emc.cli import main
from emc.eval.brackets import bracket_scores
from emc.io.ptb import read_tree

SPEC = str(ROOT / "specs" / "pcfg.em")
TREES = [
    "(S (NP (DT the) (NN dog)) (VP (VBD saw) (NP (DT a) (NN cat))))",
    "(S (NP (PRP it)) (VP (VBD ran) (PP (IN into) (NP (DT the) (JJ big) (NN house)))) (. .))",
    "(S (NP (DT a) (JJ small) (NN cat)) (VP (VBD slept)))",
    "(S (NP (NNS dogs)) (VP (VBP bark) (ADVP (RB loudly))))",
    "(S (NP (DT the) (NN man) (PP (IN in) (NP (DT the) (NN hat) (NN shop) (NN window) (NN display)))) (VP (VBD left)))",
]


def labeled_tree(text: str):
    """`(3 (1 DT NN) VBD)` as (label, left, right) tuples with symbols as leaves; a one-symbol
    sentence `(3 DT)` as (label, symbol)."""
    tokens = re.findall(r"\(|\)|[^\s()]+", text)
    pos = 0

    def node():
        nonlocal pos
        if tokens[pos] != "(":
            pos += 1
            return tokens[pos - 1]
        label = int(tokens[pos + 1])
        pos += 2
        children = []
        while tokens[pos] != ")":
            children.append(node())
        pos += 1
        return (label, *children)

    tree = node()
    assert pos == len(tokens), text
    return tree


def spans_of(tree, start: int = 0) -> tuple[set, int]:
    """The (start, end) of every labeled node, and the end."""
    if isinstance(tree, str):
        return set(), start + 1
    spans, end = set(), start
    for child in tree[1:]:
        inner, end = spans_of(child, end)
        spans |= inner
    return spans | {(start, end)}, end


def test_fit_scores_and_decodes_labeled_trees(tmp_path, capsys):
    data = tmp_path / "trees.mrg"
    data.write_text("\n".join(TREES) + "\n")
    run = tmp_path / "run"
    assert main(["fit", SPEC, str(data), "--format", "ptb", "--max-length", "6", "--labels", "3",
                 "--iterations", "5", "--seed", "2", "--out", str(run)]) == 0
    final = capsys.readouterr().err.strip().splitlines()[-2]
    assert final.startswith("emc: final objective") and "unlabeled_f1" in final, final
    metrics = json.loads((run / "run.json").read_text())["metrics"]
    assert 0.0 <= metrics["unlabeled_f1"] <= 1.0

    assert main(["decode", str(run), str(data), "--format", "ptb", "--max-length", "6"]) == 0
    lines = capsys.readouterr().out.split("\n")
    assert lines[4] == ""  # longer than --max-length: skipped
    predicted, gold, lengths = [], [], []
    for line, text in zip(lines[:4], TREES):
        tree = read_tree(text)
        parsed = labeled_tree(line)
        spans, n = spans_of(parsed)
        assert n == len(tree.tags) and len(spans) == n - 1  # binary: n - 1 nodes above the symbols
        assert all(0 <= label < 3 for label in re.findall(r"\((\d+)", line) for label in [int(label)])
        predicted.append(spans)
        gold.append(tree.spans)
        lengths.append(n)
    assert metrics["unlabeled_f1"] == bracket_scores(predicted, gold, lengths)["f1"]

    assert main(["decode", str(run), str(data), "--format", "ptb", "--max-length", "6", "--posteriors"]) == 0
    first = capsys.readouterr().out.split("\n")[0]
    assert all(0.0 <= float(p.split(":")[1]) <= 1.0 for p in first.split())


def test_one_symbol_sentence_and_bad_settings(tmp_path, capsys):
    data = tmp_path / "tags.txt"
    data.write_text("DT NN VBD\nNN\nDT NN\n")
    run = tmp_path / "run"
    assert main(["fit", SPEC, str(data), "--labels", "2", "--iterations", "2", "--out", str(run)]) == 0
    capsys.readouterr()
    assert main(["decode", str(run), str(data)]) == 0
    lines = capsys.readouterr().out.split("\n")
    assert re.fullmatch(r"\(\d NN\)", lines[1]), lines[1]
    assert re.fullmatch(r"\(\d DT NN\)", lines[2]), lines[2]
    spec = tmp_path / "bad.em"
    spec.write_text("model bad\nobserved x : tokens\nlatent t : spantree(x, labels=2)\nmultinomial m : P(t.label)\n")
    assert main(["check", str(spec)]) != 0
    assert "t.label alone" in capsys.readouterr().err
    spec.write_text("model bad\nobserved x : tokens\nlatent t : spantree(x, labels=2, empty=yes)\n"
                    "multinomial m : P(x | t.label)\n")
    assert main(["check", str(spec)]) != 0
    assert "a labeled tree (labels=K) has none" in capsys.readouterr().err
