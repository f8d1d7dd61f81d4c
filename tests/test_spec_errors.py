"""Broken specs: each gives one clear message with file:line:column, the line, a caret and (where
obvious) a hint; never a traceback."""
from __future__ import annotations

import pytest

from emc.cli import main
from emc.spec.check import check
from emc.spec.errors import SpecError
from emc.spec.parse import parse_text

HEAD = "model hmm\nobserved x : tokens\n"
CHAIN = HEAD + "latent z : chain(x, states=4)\n"

CASES = [
    # (name, spec, line, column, message, hint or None)
    ("misspelt attribute", CHAIN + "multinomial trans : P(z | z.prevv)\n", 4, 29, "unknown attribute 'z.prevv'", "did you mean 'z.prev'?"),
    ("misspelt structure", HEAD + "latent z : chian(x, states=4)\nmultinomial e : P(x | z)\n", 3, 12, "unknown structure 'chian'", "did you mean 'chain'?"),
    ("missing argument", HEAD + "latent z : chain(x)\nmultinomial e : P(x | z)\n", 3, 1, "chain needs the argument 'states'", "write chain(x, states=K"),
    ("argument out of range", HEAD + "latent z : chain(x, states=0)\nmultinomial e : P(x | z)\n", 3, 28, "states: 0 is too small", "states must be an integer >= 1"),
    ("fractional argument", HEAD + "latent z : chain(x, states=2.5)\nmultinomial e : P(x | z)\n", 3, 28, "2.5 is not a whole number", None),
    ("order not allowed", HEAD + "latent z : chain(x, states=4, order=3)\nmultinomial e : P(x | z)\n", 3, 37, "order: 3 is not allowed", "order must be 1 or 2"),
    ("misspelt argument", HEAD + "latent z : chain(x, staets=4)\nmultinomial e : P(x | z)\n", 3, 21, "chain has no argument 'staets'", "did you mean 'states'?"),
    ("bad boolean", HEAD + "latent z : chain(x, states=4, stop=maybe)\nmultinomial e : P(x | z)\n", 3, 36, "'maybe' is not yes or no", None),
    ("duplicate block", CHAIN + "multinomial emit : P(x | z)\nmultinomial emit : P(z | z.prev)\n", 5, 13, "the name 'emit' is already used", "shares emit"),
    ("unknown variable", CHAIN + "multinomial emit : P(y | z)\n", 4, 22, "unknown variable 'y'", None),
    ("misspelt prior", CHAIN + "multinomial emit : P(x | z) prior dirichlt(0.5)\n", 4, 35, "unknown prior 'dirichlt'", "did you mean 'dirichlet'?"),
    ("prior arity", CHAIN + "multinomial emit : P(x | z) prior sparse(80)\n", 4, 29, "prior sparse takes 2 argument(s)", "alpha=..., beta=..."),
    ("negative smoothing", CHAIN + "multinomial emit : P(x | z) smooth add(-1)\n", 4, 29, "smoothing must be >= 0", None),
    ("block without the latent", CHAIN + "multinomial emit : P(x)\n", 4, 1, "does not involve the latent structure", "'z', 'z.prev'"),
    ("two slots in one block", CHAIN + "multinomial emit : P(x | z, z.prev)\n", 4, 1, "either on the previous states", None),
    ("prev2 needs order 2", CHAIN + "multinomial trans : P(z | z.prev2)\n", 4, 29, "unknown attribute 'z.prev2'", None),
    ("misspelt view", CHAIN + "multinomial s : P(x.sufix(3) | z)\n", 4, 21, "unknown view 'sufix'", "did you mean 'suffix'?"),
    ("view without length", CHAIN + "multinomial s : P(x.suffix | z)\n", 4, 21, "the view 'suffix' takes a length", "x.suffix(3)"),
    ("unfinished statement", HEAD + "latent z : chain(x, states=4\nmultinomial e : P(x | z)\n", 3, 29, "this statement is not finished", "')'"),
    ("stray character", CHAIN + "multinomial emit : P(x | z) @\n", 4, 29, "unexpected character '@'", None),
    ("two latents", CHAIN + "latent y : chain(x, states=4)\nmultinomial e : P(x | z)\n", 4, 1, "exactly one latent variable", None),
    ("misspelt kind", "model m\nobserved x : token\nlatent z : chain(x, states=4)\nmultinomial e : P(x | z)\n", 2, 14, "unknown kind of observed data 'token'", "did you mean 'tokens'?"),
    ("wrong kind", "model m\nobserved x : symbols\nlatent z : chain(x, states=4)\nmultinomial e : P(x | z)\n", 3, 18, "needs observed data of kind tokens", None),
    ("no model line", "observed x : tokens\nlatent z : chain(x, states=4)\nmultinomial e : P(x | z)\n", 1, 1, "a spec starts by naming its model", None),
    ("unknown function", "model s\nobserved x : symbols\nlatent s : segmentation(x)\nmultinomial w : P(s.word)\nweight expp(-s.length)\n", 5, 8, "unknown function 'expp'", "did you mean 'exp'?"),
    ("weight over a word", "model s\nobserved x : symbols\nlatent s : segmentation(x)\nmultinomial w : P(s.word)\nweight exp(-s.word)\n", 5, 13, "'s.word' is not a number", "'s.length'"),
    ("alignment without from", "model a\nobserved e : tokens, f : tokens\nlatent a : alignment(f, e)\nmultinomial t : P(a.target | a.source)\n", 3, 22, "TARGET from SOURCE", None),
    ("shares a missing block", CHAIN + "multinomial emit : P(x | z)\nmultinomial e2 : P(x | z) shares emitt\n", 5, 34, "no earlier block named 'emitt'", "did you mean 'emit'?"),
    ("attribute twice", CHAIN + "multinomial emit : P(x | z, z)\n", 4, 29, "'z' appears twice in this block", None),
    ("ends mid-statement", CHAIN + "multinomial emit : P(x |", 4, 25, "the spec ends in the middle of a statement", None),
    ("transition outcome", CHAIN + "multinomial t : P(z.prev | z)\n", 4, 1, "the outcome of a transition block is the current state 'z'", None),
    ("fixed and smoothed", CHAIN + "multinomial emit : P(x | z) fixed smooth add(1)\n", 4, 1, "is fixed: it is never re-estimated", None),
    ("infinite smoothing", CHAIN + "multinomial emit : P(x | z) smooth add(1e999)\n", 4, 40, "inf is not a finite number", "write a finite number"),
    ("infinite param", CHAIN + "param a = -1e400\nmultinomial emit : P(x | z)\n", 4, 1, "-inf is not a finite number", None),
    ("infinite argument", HEAD + "latent z : chain(x, states=1e999)\nmultinomial e : P(x | z)\n", 3, 28, "inf is not a finite number", None),
    ("infinite weight", "model s\nobserved x : symbols\nlatent s : segmentation(x)\nmultinomial w : P(s.word)\nweight exp(-1e999 * s.length)\n", 5, 12, "-inf is not a finite number", None),
    ("unknown param", CHAIN + "multinomial emit : P(x | z) smooth add(a)\n", 4, 40, "'a' is not a number or a param", None),
    ("max read by a constraint", "model m\nobserved x : tokens\nlatent max : deptree(x)\nmultinomial a : P(max.dependent | max.head)\n"
     "constraint c : E[max.head, max.dependent in \"r.txt\"] >= 0.5\n", 5, 21, "unexpected '.'", "'max' is a keyword after 'E['"),
]


@pytest.mark.parametrize("name,text,line,column,message,hint", CASES, ids=[c[0] for c in CASES])
def test_broken_spec(name, text, line, column, message, hint):
    with pytest.raises(SpecError) as info:
        check(parse_text(text, "bad.em"))
    first = info.value.first
    assert (first.pos.line, first.pos.column) == (line, column), str(info.value)
    assert message in first.message, str(info.value)
    if hint is not None:
        assert first.hint and hint in first.hint, str(info.value)
    report = str(info.value)
    assert report.startswith(f"bad.em:{line}:{column}: error: ")
    shown, caret = report.splitlines()[1:3]
    assert shown.strip() == text.splitlines()[line - 1].strip()
    assert caret.index("^") == column - 1 + 4  # under the fault, after the 4-space indent


def test_every_problem_is_reported_at_once():
    text = CHAIN + "multinomial a : P(z | z.prevv)\nmultinomial b : P(x.sufix(2) | z)\n"
    with pytest.raises(SpecError) as info:
        check(parse_text(text, "bad.em"))
    assert [d.pos.line for d in info.value.diagnostics] == [4, 5]


def test_cli_check_exit_codes(tmp_path, capsys):
    good = tmp_path / "good.em"
    good.write_text(CHAIN + "multinomial emit : P(x | z)\n")
    assert main(["check", str(good)]) == 0
    assert "ok" in capsys.readouterr().out
    bad = tmp_path / "bad.em"
    bad.write_text(CASES[0][1])
    assert main(["check", str(bad)]) != 0
    err = capsys.readouterr().err
    assert f"{bad}:4:29: error: unknown attribute 'z.prevv'" in err and "Traceback" not in err


def test_non_utf8_spec(tmp_path, capsys):
    bad = tmp_path / "latin.em"
    bad.write_bytes(b"model m\n# caf\xe9\nobserved x : tokens\n")
    assert main(["check", str(bad)]) == 1
    assert f"{bad}:2: error: the spec is not valid UTF-8" in capsys.readouterr().err


def test_bad_override(tmp_path, capsys):
    good = tmp_path / "good.em"
    good.write_text(CHAIN + "multinomial emit : P(x | z)\n")
    assert main(["check", str(good), "--states", "0"]) == 1
    assert "states must be an integer >= 1" in capsys.readouterr().err
    assert main(["check", str(good), "--set", "colour=3"]) == 1
    assert "no structure argument or param of that name" in capsys.readouterr().err
