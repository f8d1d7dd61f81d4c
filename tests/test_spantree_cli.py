"""The CCM end to end through the CLI (the interface the issue fixes): fit on tag sequences with
--init random-split, decode to one bracketed tree per line, posteriors, PTB input with bracket
scores, and bad input named by file and line."""
from __future__ import annotations

import json
import re

from conftest import ROOT
from emc.cli import main

SPEC = str(ROOT / "specs" / "ccm.em")
SENTENCES = ["DT NN VBD DT NN", "DT JJ NN VBD", "PRP VBD DT NN IN DT NN", "NNS VBD", "DT NN VBD IN DT JJ NN"] * 4


def parse_bracketed(text: str) -> list:
    """A bracketed tree as nested lists; every pair of parentheses must hold exactly two items
    (binary), except a one-symbol sentence."""
    stack: list[list] = [[]]
    for token in re.findall(r"\(|\)|[^\s()]+", text):
        if token == "(":
            stack.append([])
        elif token == ")":
            node = stack.pop()
            stack[-1].append(node)
        else:
            stack[-1].append(token)
    assert len(stack) == 1 and len(stack[0]) == 1, text
    return stack[0][0]


def leaves(node) -> list[str]:
    return [node] if isinstance(node, str) else [leaf for child in node for leaf in leaves(child)]


def is_binary(node) -> bool:
    return isinstance(node, str) or (len(node) == 2 and all(is_binary(c) for c in node))


def test_fit_and_decode_tag_sequences(tmp_path, capsys):
    data = tmp_path / "tags.txt"
    data.write_text("\n".join(SENTENCES) + "\n")
    run = tmp_path / "run"
    assert main(["fit", SPEC, str(data), "--init", "random-split", "--iterations", "10", "--tolerance", "0", "--out", str(run)]) == 0
    assert "iter   10" in capsys.readouterr().err
    log = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in log] == list(range(1, 11))
    new = tmp_path / "new.txt"
    new.write_text("DT NN VBD DT NN\n\nNN\nDT XYZ VBD\n")
    assert main(["decode", str(run), str(new)]) == 0
    lines = capsys.readouterr().out.split("\n")
    assert lines[1] == "" and lines[2] == "(NN)"
    for line, words in ((lines[0], "DT NN VBD DT NN"), (lines[3], "DT XYZ VBD")):
        tree = parse_bracketed(line)
        assert leaves(tree) == words.split() and is_binary(tree), line
    assert main(["decode", str(run), str(new), "--posteriors"]) == 0
    posterior = capsys.readouterr().out.split("\n")
    spans = dict(item.split(":") for item in posterior[0].split())
    assert "0-2" in spans and all(0.0 <= float(p) <= 1.0 for p in spans.values())
    assert posterior[2] == ""  # one symbol: nothing is uncertain


def test_fit_on_ptb_trees_reports_bracket_scores(tmp_path, capsys):
    trees = tmp_path / "trees.txt"
    trees.write_text("((S (NP (DT The) (NN board)) (VP (VBD named) (NP (DT a) (NN director))) (. .)))\n"
                     "((S (NP (PRP It)) (VP (VBD rose) (NP (CD 5) (NN %)))))\n" * 5)
    assert main(["fit", SPEC, str(trees), "--format", "ptb", "--init", "random-split", "--iterations", "3",
                 "--out", str(tmp_path / "run")]) == 0
    err = capsys.readouterr().err
    assert re.search(r"final objective .*; precision [\d.]+%, recall [\d.]+%, f1 [\d.]+%, crossing_brackets", err)
    assert main(["decode", str(tmp_path / "run"), str(trees), "--format", "ptb"]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[0].count("(") == 4  # 5 tags: 4 constituents, the sentence included
    assert "f1" in captured.err


def test_bad_tree_is_reported_by_line(tmp_path, capsys):
    trees = tmp_path / "trees.txt"
    trees.write_text("((S (NN a) (VBZ is)))\n((S (NN a) (VBZ is))\n")
    assert main(["fit", SPEC, str(trees), "--format", "ptb", "--out", str(tmp_path / "run")]) == 1
    err = capsys.readouterr().err
    assert "trees.txt:2: error: not a Penn Treebank tree: unbalanced parentheses" in err
    assert "Traceback" not in err


def test_help_states_the_evaluation_convention(capsys):
    try:
        main(["fit", "--help"])
    except SystemExit:
        pass
    out = " ".join(capsys.readouterr().out.split())
    assert "no credit for the whole sentence or single symbols" in out and "random-split" in out
