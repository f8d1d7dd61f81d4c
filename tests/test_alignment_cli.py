"""The aligners end to end through the CLI: fit both directions, decode Pharaoh links (Viterbi,
posterior threshold, the reverse direction, symmetrised, agreement), two-file input, gold
scores, new words, empty pairs, and bad input named by file and line."""
from __future__ import annotations

import json
import re

import pytest

import emc
from emc.cli import main
from helpers_alignment import spec_copy
PAIRS = ["the house ||| la maison", "the blue house ||| la maison bleue", "the flower ||| la fleur",
         "a blue flower ||| une fleur bleue", "the house is blue ||| la maison est bleue",
         "a house ||| une maison", "the flower is small ||| la fleur est petite", "small ||| petite"] * 3
LINK = re.compile(r"^(\d+-\d+( \d+-\d+)*)?$")


@pytest.fixture(scope="module")
def specs(tmp_path_factory) -> dict[str, str]:
    return {name: spec_copy(tmp_path_factory.mktemp(name), f"{name}.em") for name in ("ibm1", "hmm_align")}


@pytest.fixture(scope="module")
def runs(tmp_path_factory, specs):
    """An IBM 1 run (both directions) and an agreement run, on the same bitext."""
    tmp = tmp_path_factory.mktemp("align")
    bitext = tmp / "train.txt"
    bitext.write_text("".join(p + "\n" for p in PAIRS))
    for name, extra in (("ibm1", []), ("agree", ["--agree"])):
        assert main(["fit", specs["ibm1"], str(bitext), "--out", str(tmp / name), "--iterations", "8", "--quiet",
                     *extra]) == 0
    return tmp


def decode(capsys, *args) -> list[str]:
    return decode_with_messages(capsys, *args)[0]


def decode_with_messages(capsys, *args) -> tuple[list[str], str]:
    assert main(["decode", *map(str, args)]) == 0
    captured = capsys.readouterr()
    return captured.out.split("\n")[:-1], captured.err


def links(line: str) -> set[tuple[int, int]]:
    return {tuple(map(int, link.split("-"))) for link in line.split()}


def test_fit_saves_both_directions(runs):
    for run in (runs / "ibm1", runs / "ibm1" / "reverse", runs / "agree", runs / "agree" / "reverse"):
        assert {"spec.em", "params.npz", "vocab.json", "run.json"} <= {p.name for p in run.iterdir()}
    assert json.loads((runs / "ibm1" / "reverse" / "run.json").read_text())["options"]["reverse"] is True
    assert json.loads((runs / "agree" / "run.json").read_text())["options"]["agree"] is True


def test_decode_prints_pharaoh_links_one_line_per_pair(runs, tmp_path, capsys):
    data = tmp_path / "test.txt"
    data.write_text("the blue house ||| la maison bleue\n ||| \nthe zebra ||| le zèbre\n")
    for extra in ([], ["--threshold", "0.3"], ["--direction", "reverse"], ["--symmetrize", "grow-diag-final-and"],
                  ["--symmetrize", "intersection"]):
        out = decode(capsys, runs / "ibm1", data, *extra)
        assert len(out) == 3 and out[1] == "" and all(LINK.match(line) for line in out), (extra, out)
        assert {(0, 0), (1, 2), (2, 1)} <= links(out[0]), extra  # the-la, blue-bleue, house-maison
    agreed = decode(capsys, runs / "agree", data)
    assert len(agreed) == 3 and (2, 1) in links(agreed[0])


def test_posteriors_print_each_link_with_its_probability(runs, tmp_path, capsys):
    data = tmp_path / "test.txt"
    data.write_text("the blue house ||| la maison bleue\n")
    (line,) = decode(capsys, runs / "ibm1", data, "--posteriors")
    probabilities = {link: float(p) for link, p in (token.split(":") for token in line.split())}
    assert max(probabilities, key=probabilities.get) in {"0-0", "1-2", "2-1"}
    assert all(0.001 <= p <= 1 for p in probabilities.values())
    for j in range(3):  # each target word's links (NULL aside) add up to at most 1
        assert sum(p for link, p in probabilities.items() if link.endswith(f"-{j}")) <= 1 + 1e-3


def test_posteriors_of_the_reverse_run_in_its_orientation(runs, tmp_path, capsys):
    data = tmp_path / "test.txt"
    data.write_text("the blue house ||| la maison\n")  # 3 source words, 2 target words
    (line,) = decode(capsys, runs / "ibm1" / "reverse", data, "--posteriors")
    probabilities = {tuple(map(int, link.split("-"))): float(p) for link, p in (t.split(":") for t in line.split())}
    assert {i for i, _ in probabilities} <= {0, 1} and max(probabilities, key=probabilities.get) in {(0, 0), (1, 2)}
    assert main(["decode", str(runs / "ibm1" / "reverse"), str(data), "--posteriors", "--direction", "reverse"]) == 1
    assert "this reverse model's link posteriors" in capsys.readouterr().err


def test_the_threshold_trades_links_for_precision(runs, tmp_path, capsys):
    data = tmp_path / "test.txt"
    data.write_text("".join(p + "\n" for p in PAIRS[:8]))
    loose = [links(line) for line in decode(capsys, runs / "agree", data, "--threshold", "0.01")]
    strict = [links(line) for line in decode(capsys, runs / "agree", data, "--threshold", "0.9")]
    assert all(s <= lo for s, lo in zip(strict, loose)) and sum(map(len, strict)) < sum(map(len, loose))


def test_symmetrizations_nest(runs, tmp_path, capsys):
    data = tmp_path / "test.txt"
    data.write_text("".join(p + "\n" for p in PAIRS[:8]))
    forward = [links(line) for line in decode(capsys, runs / "ibm1", data)]
    reverse = [links(line) for line in decode(capsys, runs / "ibm1", data, "--direction", "reverse")]
    inter = [links(line) for line in decode(capsys, runs / "ibm1", data, "--symmetrize", "intersection")]
    union = [links(line) for line in decode(capsys, runs / "ibm1", data, "--symmetrize", "union")]
    gdfa = [links(line) for line in decode(capsys, runs / "ibm1", data, "--symmetrize", "grow-diag-final-and")]
    for f, r, i, u, g in zip(forward, reverse, inter, union, gdfa):
        assert i == f & r and u == f | r and i <= g <= u


def test_two_files_and_gold_scores(runs, specs, tmp_path, capsys):
    source, target, gold = tmp_path / "e.txt", tmp_path / "f.txt", tmp_path / "gold.wa"
    source.write_text("the house\nthe blue house\n")
    target.write_text("la maison\nla maison bleue\n")
    gold.write_text("1 1 1 S\n1 2 2 S\n2 1 1 S\n2 2 3 S\n2 3 2 P\n")
    out, err = decode_with_messages(capsys, runs / "ibm1", "--source", source, "--target", target, "--gold", gold)
    assert out == ["0-0 1-1", "0-0 1-2 2-1"]
    # 5 links found, all sure or possible; 4 sure links, all found: AER = 1 - (4 + 5) / (5 + 4) = 0
    assert "aer 0.00%, precision 100.00%, recall 100.00%" in err
    run = tmp_path / "run"
    assert main(["fit", specs["hmm_align"], "--source", str(source), "--target", str(target), "--out", str(run), "--iterations", "2",
                 "--forward-only", "--quiet"]) == 0
    assert not (run / "reverse").exists()
    assert len(decode(capsys, run, "--source", source, "--target", target)) == 2


@pytest.mark.parametrize("run, options", [
    ("agree", {}), ("agree", {"threshold": 0.3}), ("ibm1", {"symmetrize": "grow-diag-final-and"}),
    ("ibm1", {"threshold": 0.3}), ("ibm1", {"direction": "reverse"}), ("ibm1/reverse", {})])
def test_every_way_of_decoding_links_returns_its_scores(runs, tmp_path, capsys, run, options):
    """A structure's own decoding hands its scores to the caller: the API's evaluate() has them,
    and `emc decode` prints them once."""
    data, gold = tmp_path / "test.txt", tmp_path / "gold.wa"
    data.write_text("the house ||| la maison\nthe blue house ||| la maison bleue\n")
    gold.write_text("1 1 1 S\n1 2 2 S\n2 1 1 S\n2 2 3 S\n2 3 2 S\n")
    metrics = emc.load_run(runs / run).evaluate(str(data), gold=str(gold), **options)
    assert set(metrics) == {"aer", "precision", "recall"} and metrics["aer"] < 0.5, metrics
    flags = [x for key, value in options.items() for x in (f"--{key}", str(value))]
    out, err = decode_with_messages(capsys, runs / run, data, "--gold", gold, *flags)
    assert len(out) == 2 and err.count("emc: aer ") == 1 and f"aer {100 * metrics['aer']:.2f}%" in err, err


@pytest.mark.parametrize("content, extra, message", [
    ("a b ||| x\nno separator here\n", [], "data.txt:2: error: expected `source ||| target`, found no '|||'"),
    ("a ||| b ||| c\n", [], "data.txt:1: error: expected `source ||| target`, found 2 '|||'"),
    (" ||| \n\n", [], "data.txt: error: contains no sentence pairs"),
])
def test_bad_bitext_names_file_and_line(specs, tmp_path, capsys, content, extra, message):
    data = tmp_path / "data.txt"
    data.write_text(content)
    assert main(["fit", specs["ibm1"], str(data), "--iterations", "1", *extra]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_two_files_of_different_lengths(specs, tmp_path, capsys):
    source, target = tmp_path / "e.txt", tmp_path / "f.txt"
    source.write_text("a\nb\nc\n")
    target.write_text("x\ny\n")
    assert main(["fit", specs["ibm1"], "--source", str(source), "--target", str(target)]) == 1
    err = capsys.readouterr().err
    assert "f.txt:3: error: the file ends here, but" in err and "3 lines" in err


def test_symmetrize_needs_both_directions(specs, tmp_path, capsys):
    data = tmp_path / "data.txt"
    data.write_text("a b ||| x y\n")
    run = tmp_path / "run"
    assert main(["fit", specs["ibm1"], str(data), "--out", str(run), "--iterations", "1", "--forward-only", "--quiet"]) == 0
    assert main(["decode", str(run), str(data), "--symmetrize", "union"]) == 1
    assert "holds one direction only" in capsys.readouterr().err
