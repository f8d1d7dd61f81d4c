"""The DMV end to end: Penn Treebank trees with gold heads by Collins' head rules, CoNLL with a head
column and CoNLL-U with HEAD as gold; attachment accuracy in the fit's last line and run.json;
decoding as word/HEAD, as posteriors, and written back into CoNLL-U."""
from __future__ import annotations

import json

import pytest

from conftest import ROOT
from emc.cli import main
from emc.eval.dependencies import attachment_scores, left_attach, right_attach
from emc.io.conllu import read_conllu
from emc.io.heads import read_dependencies

DMV = str(ROOT / "specs" / "dmv.em")
TINY_CONLLU = ROOT / "tests" / "data" / "tiny.conllu"
TREES = [
    "((S (NP-SBJ (DT The) (NN board)) (VP (VBD approved) (NP (DT the) (NN plan))) (. .)))",
    "((S (NP-SBJ (PRP It)) (VP (MD will) (VP (VB rain))) (. .)))",
    "((S (NP-SBJ (NP (NNP Vinken) (POS 's)) (NN son)) (VP (VBZ is) (ADJP-PRD (JJ old))) (. .)))",
    "((S (NP-SBJ (-NONE- *)) (VP (TO to) (VP (VB go) (PP (IN into) (NP (DT the) (NN city)))))))",
]


def test_collins_head_rules_on_known_trees():
    assert read_dependencies(TREES[0]) == (["DT", "NN", "VBD", "DT", "NN"], [2, 3, 0, 5, 3])
    assert read_dependencies(TREES[1]) == (["PRP", "MD", "VB"], [2, 0, 2])  # VP: MD before VB
    assert read_dependencies(TREES[2]) == (["NNP", "POS", "NN", "VBZ", "JJ"], [2, 3, 4, 0, 4])  # NP: POS last
    assert read_dependencies(TREES[3]) == (["TO", "VB", "IN", "DT", "NN"], [0, 1, 2, 5, 3])  # PP: IN; empty NP gone


def test_attachment_scores_and_baselines():
    gold = [[2, 3, 0, 5, 3]]
    assert attachment_scores([[2, 3, 0, 5, 3]], gold) == {"directed": 1.0, "undirected": 1.0}
    assert left_attach(5) == [0, 1, 2, 3, 4] and right_attach(5) == [2, 3, 4, 5, 0]
    # right-attach gets words 1, 2 and 4; its arcs (3, 4) and (5, root) are no gold arcs either way
    scores = attachment_scores([right_attach(5)], gold)
    assert scores["directed"] == pytest.approx(3 / 5)
    assert scores["undirected"] == pytest.approx(3 / 5)
    assert attachment_scores([[0, 1, 2]], [[0, 1, 2]])["directed"] == 1.0
    assert attachment_scores([[2, 0]], [[0, 1]]) == {"directed": 0.0, "undirected": 0.5}  # the arc reversed
    assert attachment_scores([[1]], [None]) == {}


def test_fit_and_decode_on_ptb_trees(tmp_path, capsys):
    data = tmp_path / "trees.txt"
    data.write_text("\n".join(TREES * 3) + "\n")
    run = tmp_path / "run"
    assert main(["fit", DMV, str(data), "--format", "ptb", "--iterations", "3", "--out", str(run)]) == 0
    err = capsys.readouterr().err
    last = [line for line in err.splitlines() if line.startswith("emc: final")][0]
    assert "directed" in last and "undirected" in last
    metrics = json.loads((run / "run.json").read_text())["metrics"]
    assert set(metrics) == {"directed", "undirected"} and 0 <= metrics["directed"] <= metrics["undirected"] <= 1
    assert main(["decode", str(run), str(data), "--format", "ptb"]) == 0
    out = capsys.readouterr()
    first = out.out.splitlines()[0].split()
    assert [t.split("/")[0] for t in first] == ["DT", "NN", "VBD", "DT", "NN"]
    heads = [int(t.split("/")[1]) for t in first]
    assert heads.count(0) == 1 and all(0 <= h <= 5 for h in heads)
    assert "directed" in out.err
    assert main(["decode", str(run), str(data), "--format", "ptb", "--posteriors"]) == 0
    block = capsys.readouterr().out.split("\n\n")[0].splitlines()
    assert [line.split("\t")[0] for line in block] == ["DT", "NN", "VBD", "DT", "NN"]
    for line in block:
        probabilities = [float(p.split(":")[1]) for p in line.split("\t")[1].split()]
        assert 0.99 < sum(probabilities) <= 1.0 + 1e-9


def test_conll_head_column_and_its_errors(tmp_path, capsys):
    data = tmp_path / "deps.conll"
    data.write_text("1 The DT 2\n2 dog NN 3\n3 barks VBZ 0\n\n1 Dogs NNS 2\n2 bark VBP 0\n")
    run = tmp_path / "run"
    assert main(["fit", DMV, str(data), "--format", "conll", "--word-column", "3", "--head-column", "4",
                 "--iterations", "2", "--out", str(run)]) == 0
    assert "directed" in capsys.readouterr().err
    bad = tmp_path / "bad.conll"
    bad.write_text("1 The DT 2\n2 dog NN 7\n")
    assert main(["fit", DMV, str(bad), "--format", "conll", "--word-column", "3", "--head-column", "4"]) != 0
    assert "bad.conll:2: error: head '7'" in capsys.readouterr().err


def test_conllu_fit_decode_and_write_back(tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["fit", DMV, str(TINY_CONLLU), "--format", "conllu", "--iterations", "2", "--out", str(run)]) == 0
    assert "undirected" in capsys.readouterr().err
    assert main(["decode", str(run), str(TINY_CONLLU), "--format", "conllu", "--output", "conllu"]) == 0
    out = tmp_path / "out.conllu"
    out.write_text(capsys.readouterr().out)
    original, decoded = read_conllu(TINY_CONLLU), read_conllu(out)
    assert len(decoded) == len(original)
    for a, b in zip(original, decoded):
        assert a.column("upos") == b.column("upos") and len(a.rows) == len(b.rows)
        heads = b.heads()
        assert heads.count(0) == 1
        assert b.column("deprel") == ["root" if h == 0 else "dep" for h in heads]
    assert main(["decode", str(run), str(TINY_CONLLU), "--format", "conllu", "--token-column", "xpos"]) == 0
    assert capsys.readouterr().out.splitlines()[0].split()[0].startswith("DT/")
