"""The user's workflow: the Python API, learning-curve plots, `emc info`, and tied blocks."""
from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

import emc
from conftest import ROOT
from emc.cli import main
from helpers import check_against_enumeration, problem_from_lines, random_params
from reference import chain_structures

SENTENCES = ["the dog barks", "a cat sleeps", "the cat barks", "a dog sleeps"] * 5


def test_api_fit_decode_evaluate_save_load(tmp_path):
    model = emc.load(ROOT / "specs" / "hmm.em", states=3)
    fitted = model.fit(SENTENCES, algorithm="stepwise", passes=3, seed=2)
    assert len(fitted.history) == 3 and np.isfinite(fitted.objective)
    decoded = fitted.decode(["the cat barks", "", "a zebra"])
    assert decoded[1] == "" and decoded[2].startswith("a/") and "zebra/" in decoded[2]
    # "the" is tagged D once and N once, so no tagging of these words scores 1
    gold_sentences = [("the cat barks", "D N V"), ("a dog sleeps", "D N V"), ("the cat barks", "N N V")]
    gold = tmp_path / "gold.conll"
    gold.write_text("".join("".join(f"{w} {t}\n" for w, t in zip(s.split(), tags.split())) + "\n"
                            for s, tags in gold_sentences))
    scores = fitted.evaluate(str(gold), format="conll", gold_column=2)
    assert scores["many_to_one"] == pytest.approx(many_to_one(fitted.decode([s for s, _ in gold_sentences]),
                                                              [tags for _, tags in gold_sentences]))
    assert scores["many_to_one"] < 1
    fitted.save(tmp_path / "run")
    again = emc.load_run(tmp_path / "run")
    assert again.decode(["the cat barks", "", "a zebra"]) == decoded
    with np.load(tmp_path / "run" / "params.npz") as params:
        np.testing.assert_allclose(params["theta"], fitted.params.weights(fitted.problem.layout))


def many_to_one(decoded: list[str], gold: list[str]) -> float:
    """Each state maps to the gold tag it most often marks: the share of tokens that tag is right for."""
    tags_of: dict[str, Counter] = {}
    for line, tags in zip(decoded, gold):
        for token, tag in zip(line.split(), tags.split()):
            tags_of.setdefault(token.rsplit("/", 1)[1], Counter())[tag] += 1
    return sum(max(c.values()) for c in tags_of.values()) / sum(sum(c.values()) for c in tags_of.values())


def test_api_takes_spec_text_and_an_initializer():
    text = (ROOT / "specs" / "hmm.em").read_text()
    uniform = emc.load(text, states=2).fit(SENTENCES, init="uniform", iterations=1, tolerance=0)
    emit = uniform.problem.layout.table("emit")
    # from uniform parameters every state has the same posterior: rows stay equal after EM
    m = emit.matrix(uniform.params.theta)
    np.testing.assert_allclose(m[:, 0], m[:, 1])


def test_plot_draws_objective_and_metric(tmp_path):
    data = tmp_path / "d.conll"
    data.write_text("".join(f"{w} {t}\n" for s in SENTENCES for w, t in zip(s.split(), "DNV")) + "\n")
    logs = []
    for algorithm in ("batch", "stepwise"):
        log = tmp_path / f"{algorithm}.jsonl"
        assert main(["fit", str(ROOT / "specs" / "hmm.em"), str(data), "--format", "conll", "--gold-column", "2",
                     "--states", "3", "--algorithm", algorithm, "--iterations", "4", "--passes", "3", "--quiet",
                     "--log", str(log)]) == 0
        logs.append(str(log))
    out = tmp_path / "curve.png"
    assert main(["plot", *logs, "-o", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000
    labels = {json.loads(open(log).readline())["label"] for log in logs}
    assert labels == {"batch seed=1", "stepwise alpha=0.7 m=1 seed=1"}


def test_plot_reports_a_bad_log(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"iteration": 1, "objective": -3}\nnot json\n')
    assert main(["plot", str(bad), "-o", str(tmp_path / "x.png")]) == 1
    assert "bad.jsonl:2: error: not a JSON log line" in capsys.readouterr().err


def test_info_describes_spaces_tables_and_cost(tmp_path, capsys):
    data = tmp_path / "d.txt"
    data.write_text("\n".join(SENTENCES) + "\n")
    assert main(["info", str(ROOT / "specs" / "hmm_suffix.em"), str(data), "--states", "4"]) == 0
    out = capsys.readouterr().out
    for expected in ("latent z: chain(", "z.prev", "suffix: P(x.lower.suffix(3) | z)", "emission slot",
                     "forward-backward", "O(n K^2)", "table suffix (learned): 4 rows x", "MiB"):
        assert expected in out, expected


TIED = """
model tied
observed x : tokens
latent z : chain(x, states=2, order=2)
multinomial trans : P(z | z.prev)
multinomial skip : P(z | z.prev2) shares trans
multinomial emit : P(x | z)
"""


def test_tied_blocks_share_one_table_and_pool_their_counts(tmp_path):
    problem = problem_from_lines(tmp_path, TIED, ["a b a", "b b"])
    assert [t.name for t in problem.layout.tables] == ["trans", "emit"]
    params = random_params(problem, np.random.default_rng(3))
    for example in range(problem.n_examples):
        check_against_enumeration(problem, params, example, list(chain_structures(problem, example)),
                                  lambda decoded: tuple(int(s) for s in decoded))


def test_sharing_needs_the_same_spaces():
    from emc.spec.errors import SpecError
    with pytest.raises(SpecError, match="cannot share the table of 'emit'"):
        emc.load(TIED + "multinomial e2 : P(x.lower | z) shares emit\n")
