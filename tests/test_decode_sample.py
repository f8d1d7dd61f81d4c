"""`emc decode RUN FILE --sample N --seed K`: N posterior samples per example, in decode's format,
grouped by example; their frequencies follow the posteriors `--posteriors` prints; the same seed
prints the same lines, another seed others; misuse gets a message."""
from __future__ import annotations

from collections import Counter

import pytest

from conftest import ROOT
from emc.cli import main

N = 2000


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("decode_sample")
    data = folder / "train.txt"
    data.write_text("a b c\nb a\nc c a b\na a b\nb c\n")
    out = folder / "run"
    assert main(["fit", str(ROOT / "specs" / "hmm.em"), str(data), "--states", "3", "--iterations", "4",
                 "--seed", "2", "--out", str(out), "--quiet"]) == 0
    return out


def sample_lines(run, path, capsys, *extra) -> list[str]:
    assert main(["decode", str(run), str(path), *extra]) == 0
    return capsys.readouterr().out.split("\n")[:-1]


def test_samples_follow_the_posteriors(run, tmp_path, capsys):
    text = tmp_path / "in.txt"
    text.write_text("a b\n\nc a b\n")
    lines = sample_lines(run, text, capsys, "--sample", str(N), "--seed", "3")
    assert len(lines) == 3 * N
    first, empty, third = lines[:N], lines[N:2 * N], lines[2 * N:]
    assert empty == [""] * N
    assert all([t.split("/")[0] for t in line.split()] == ["a", "b"] for line in first)
    assert all([t.split("/")[0] for t in line.split()] == ["c", "a", "b"] for line in third)
    posteriors = sample_lines(run, text, capsys, "--posteriors")
    marginals = [dict((state, float(p)) for state, p in (item.split(":") for item in line.split("\t")[1].split()))
                 for line in posteriors if "\t" in line]
    at = 0  # the token's index among every token of the file, as --posteriors lists them
    for group in (first, third):
        states = [[token.split("/")[1] for token in line.split()] for line in group]
        for t in range(len(states[0])):
            frequency = Counter(sample[t] for sample in states)
            for state, p in marginals[at].items():
                assert abs(frequency[state] / N - p) < 0.04, (at, state, frequency, p)
            at += 1
    assert at == len(marginals) == 5


def test_the_seed_decides_the_samples(run, tmp_path, capsys):
    text = tmp_path / "in.txt"
    text.write_text("a b c a b c\nc a b b\n")
    a = sample_lines(run, text, capsys, "--sample", "20", "--seed", "1")
    b = sample_lines(run, text, capsys, "--sample", "20", "--seed", "1")
    c = sample_lines(run, text, capsys, "--sample", "20", "--seed", "2")
    assert a == b and a != c and len(set(a)) > 2


def test_segmentation_samples_in_decode_format(tmp_path, capsys):
    data = tmp_path / "train.txt"
    data.write_text("abcab\ncabab\nabc\n")
    out = tmp_path / "run"
    assert main(["fit", str(ROOT / "specs" / "segment.em"), str(data), "--maxlen", "3", "--iterations", "3",
                 "--out", str(out), "--quiet"]) == 0
    capsys.readouterr()
    lines = sample_lines(out, data, capsys, "--sample", "50", "--seed", "5")
    assert len(lines) == 150
    assert all(line.replace(" ", "") == "abcab" for line in lines[:50])
    assert len(set(lines[:50])) > 1  # samples, not the Viterbi segmentation 50 times


@pytest.mark.parametrize("extra, message", [(["--sample", "0"], "at least 1"),
                                            (["--sample", "2", "--posteriors"], "not both")])
def test_misuse_gets_a_message(run, tmp_path, capsys, extra, message):
    text = tmp_path / "in.txt"
    text.write_text("a b\n")
    assert main(["decode", str(run), str(text), *extra]) == 1
    assert message in capsys.readouterr().err


def test_python_api_samples_every_structure_in_its_decode_format():
    """Run.decode(data, sample=N, seed=K): alignment and label runs too (their own output formats)."""
    import emc

    def links(line, source, target):  # "i-j": target word j links to source word i; NULL links unprinted
        pairs = [tuple(map(int, link.split("-"))) for link in line.split()]
        return all(i < len(source) and j < len(target) for i, j in pairs) and \
            len({j for _, j in pairs}) == len(pairs)

    cases = [("ibm1.em", ["a b ||| x y", "b c ||| y z z"], {},
              lambda line, text: links(line, *(side.split() for side in text.split("|||")))),
             ("naive_bayes.em", ["a b c a", "b c c", "a a b"], {"classes": 3},
              lambda line, text: line in {"0", "1", "2"}),
             ("ccm.em", ["D N V", "D N V D N"], {},
              lambda line, text: line.replace("(", "").replace(")", "") == text
              and line.count("(") == len(text.split()) - 1)]  # a binary bracketing: n - 1 nodes
    for spec, lines, overrides, well_formed in cases:
        fitted = emc.load(ROOT / "specs" / spec, **overrides).fit(lines, iterations=2, seed=1)
        drawn = fitted.decode(lines, sample=30, seed=4)
        assert len(drawn) == len(lines) and drawn == fitted.decode(lines, sample=30, seed=4)
        for text, block in zip(lines, drawn):
            samples = block.split("\n")
            assert len(samples) == 30 and all(well_formed(s, text) for s in samples), (spec, samples)
        assert len(set(drawn[-1].split("\n"))) > 1, spec  # draws, not one structure 30 times
