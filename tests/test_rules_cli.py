"""A structure written as rules through the command line: fit, decode (best derivation, posterior
draws, posteriors), info, and the front end's messages for programs that are wrong."""
from __future__ import annotations

import re

import pytest

from conftest import ROOT
from emc.cli import main
from emc.spec.errors import EmcError

SPEC = str(ROOT / "specs" / "hsmm.em")
CONLL = """Rockwell NNP B-NP
said VBD B-VP
the DT B-NP
agreement NN I-NP
calls VBZ B-VP
. . O

He PRP B-NP
ran VBD B-VP
"""


def test_fit_decode_sample_info(tmp_path, capsys):
    data = tmp_path / "train.txt"
    data.write_text(CONLL)
    run = tmp_path / "run"
    assert main(["fit", SPEC, str(data), "--format", "conll", "--word-column", "2", "--gold-column", "3",
                 "--set", "classes=3", "--set", "maxlen=3", "--iterations", "3", "--out", str(run)]) == 0
    err = capsys.readouterr().err
    assert "boundary_f1" in err and "class_many_to_one" in err
    tags = tmp_path / "tags.txt"
    tags.write_text("NNP VBD DT NN\n\nPRP VBD\n")
    assert main(["decode", str(run), str(tags)]) == 0
    lines = capsys.readouterr().out.split("\n")
    assert lines[1] == ""  # an empty example prints an empty line
    parts = re.findall(r"(\w+)\(([\d,]+)\)", lines[0])
    assert parts and {name for name, _ in parts} <= {"start", "grow", "close"}
    # the closed segments cover the sentence left to right
    closed = [tuple(map(int, v.split(","))) for name, v in parts if name == "close"]
    assert [(i - l, i) for i, c, l in closed][0][0] == 0 and closed[-1][0] == 4
    assert main(["decode", str(run), str(tags), "--sample", "3", "--seed", "5"]) == 0
    drawn = capsys.readouterr().out.split("\n")
    # example 1's three draws, the empty example's three empty lines, example 3's three draws
    assert all(line.startswith("start(0,") for line in drawn[:3] + drawn[6:9]) and drawn[3:6] == ["", "", ""]
    assert main(["decode", str(run), str(tags), "--posteriors"]) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.split("\n") if "\t" in line]
    # each token of the two sentences lies in one segment of one class: its classes sum to one
    assert [word for word, _ in rows] == ["NNP", "VBD", "DT", "NN", "PRP", "VBD"]
    for _, values in rows:
        assert abs(sum(float(v.split(":")[1]) for v in values.split()) - 1) < 0.01
    assert main(["info", str(run)]) == 0
    assert "written as rules" in capsys.readouterr().out


@pytest.mark.parametrize("program, message", [
    ("part  seg(i, j, c) : done(j, c) += done(i, b) for c in 0..classes-1",
     "declares the variables (i, j, c) but uses"),
    ("part  seg(i, j, b, c) : done(j, c) += donee(i, b) for c in 0..classes-1, i in j-2..j-1",
     "unknown item 'donee'"),
    ("part  seg(i, j, b, c) : done(j, c) += done(i, b, c) for c in 0..classes-1, i in j-2..j-1",
     "item 'done' has 2 indices, not 3"),
    ("part  seg(i, j, b, c) : done(j, c) += done(i, b) for c in 0..classes-1, i in j..j+1",
     "cannot order the chart"),
    ("part  seg(i, j, b, c, z) : done(j, c) += done(i, b) for c in 0..classes-1, i in j-2..j-1",
     "declares the variables"),
    ("part  seg(i, j, b, c) : done(j, c) += done(i, b) for c in 0..classes-1, i in 0..j-1 where w = x[i:j]",
     "the span x[i:j] can grow with the input"),
])
def test_wrong_programs_are_named_with_their_position(tmp_path, capsys, program, message):
    spec = tmp_path / "bad.em"
    spec.write_text(f"""model bad
observed x : tokens
structure chunks(x, classes=2)
  item  done(i in 0..n, c in 0..classes)
  axiom done(0, classes)
  {program}
  goal  done(n, c) for c in 0..classes-1
latent s : chunks(x)
multinomial trans : P(s.c | s.b)
""")
    assert main(["check", str(spec)]) != 0
    err = capsys.readouterr().err
    assert message in err
    assert re.search(r"bad\.em:6:\d+: error", err), err
    assert "Traceback" not in err


def test_posteriors_of_a_program_that_labels_nothing_are_refused():
    from emc.spec.check import check
    from emc.spec.parse import parse_text
    from emc.structures.rules.data import posterior_length

    # a chain whose steps label no token: built by position, reading no word
    text = """model walk
observed x : tokens
structure walk(x, states=2)
  item  state(t in 0..n, k in 0..states-1)
  axiom state(0, 0)
  part  step(t, j, k) : state(t, k) += state(t - 1, j) for k in 0..states-1 where w = x[t - 1]
  goal  state(n, k) for k in 0..states-1
latent z : walk(x)
multinomial emit : P(z.w | z.k)
"""
    with pytest.raises(EmcError, match="label .* or attach"):
        posterior_length(None, check(parse_text(text, "walk.em")), {})
