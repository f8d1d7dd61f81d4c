"""The built-in structures restated as rules (specs/rules/) are the same models: on the same
parameters they give the same log Z per example, the same expected counts in every table (tables
matched by name, as `emc fit --init RUN` matches them), the same hard-EM counts and the same best
structure; and on real data, 10 EM iterations from the same start give the same objectives."""
from __future__ import annotations

import math

import numpy as np
import pytest

from conftest import ROOT
from emc.cli import main
from emc.runtime.executor import LocalExecutor
from emc.runtime.params import ParamState
from emc.structures.rules.evaluation import derivation, segments, token_heads, token_labels
from emc.structures.semiring import MAX, SUM
from helpers import problem_from_lines, random_params

# no symbol twice in a sentence: a repeated one can give two best trees of equal score (a tie)
TOKENS = ["D N V A P", "N V", "D A N V P", "V", "A N V"]


def _chain(problem, ex, decoded):
    return tuple(int(s) for s in decoded)


def _chain_rules(problem, ex, decoded):
    return tuple(int(s) for s in token_labels(problem.model.checked, decoded, len(_tokens(problem, ex))))


def _segment(problem, ex, decoded):
    return tuple(int(i) for i in np.flatnonzero(decoded))


def _segment_rules(problem, ex, decoded):
    return tuple(i for i, _ in segments(problem.model.checked, decoded, len(_tokens(problem, ex))))


def _pcfg(problem, ex, decoded):
    return {span: label for span, (label, _) in problem.model.data.module.decoded_nodes(problem.model.checked, decoded).items()}


def _pcfg_rules(problem, ex, decoded):
    nodes = {}
    for name, values in derivation(problem.model.checked, decoded):
        if name == "leaf":
            nodes[(values[0], values[0] + 1)] = values[1]
        elif name == "binary":
            nodes[(values[0], values[2])] = values[3]
    return nodes


def _dmv(problem, ex, decoded):
    return tuple(int(h) for h in decoded)


def _dmv_rules(problem, ex, decoded):
    return tuple(token_heads(problem.model.checked, decoded, len(_tokens(problem, ex))))


def _tokens(problem, ex):
    return problem.corpus.fields[problem.model.checked.binding.observed["x"]].tokens(ex)


# (built-in spec, its twin, data, overrides, the built-in's and the twin's decodes as one form)
TWINS = [
    ("hmm.em", "rules/chain.em", ["a b c a", "b a", "c c a b b", "a"], {"states": 3}, _chain, _chain_rules),
    ("segment.em", "rules/segment.em", ["abcab", "cabab", "abc", "a"], {"maxlen": 3}, _segment, _segment_rules),
    ("pcfg.em", "rules/pcfg.em", TOKENS, {"labels": 3}, _pcfg, _pcfg_rules),
    ("dmv.em", "rules/dmv.em", TOKENS, {}, _dmv, _dmv_rules),
]


def twin_params(built_in, twin, params: ParamState) -> ParamState:
    """The built-in's parameters laid out for the twin, table by table name."""
    theta = twin.fixed_theta.copy()
    for table in twin.layout.learned():
        other = built_in.layout.table(table.name)
        assert (other.rows, other.outcomes) == (table.rows, table.outcomes), table.name
        theta[table.entries] = params.theta[other.entries]
    return ParamState.plain(theta, twin.layout)


def table_counts(problem, counts: np.ndarray) -> dict[str, np.ndarray]:
    return {t.name: counts[t.entries] for t in problem.layout.learned()}


@pytest.mark.parametrize("built_in, rules, data, overrides, form, rules_form", TWINS, ids=[t[0] for t in TWINS])
def test_twins_are_the_same_model(tmp_path, built_in, rules, data, overrides, form, rules_form):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = problem_from_lines(tmp_path / "a", (ROOT / "specs" / built_in).read_text(), data, None, overrides)
    b = problem_from_lines(tmp_path / "b", (ROOT / "specs" / rules).read_text(), data, None, overrides)
    examples = np.arange(len(data))
    for seed in range(2):
        pa = random_params(a, np.random.default_rng(seed))
        pb = twin_params(a, b, pa)
        for semiring in (SUM, MAX):
            ra = LocalExecutor(a, threads=1).estep(pa, examples, semiring, np.ones(len(data)))
            rb = LocalExecutor(b, threads=1).estep(pb, examples, semiring, np.ones(len(data)))
            np.testing.assert_allclose(rb.log_z, ra.log_z, rtol=1e-10)
            ca, cb = table_counts(a, ra.counts), table_counts(b, rb.counts)
            for name in ca:
                np.testing.assert_allclose(cb[name], ca[name], rtol=1e-8, atol=1e-12, err_msg=name)
        da, best_a = LocalExecutor(a, threads=1).decode(pa, examples)
        db, best_b = LocalExecutor(b, threads=1).decode(pb, examples)
        np.testing.assert_allclose(best_b, best_a, rtol=1e-10)
        for ex in examples:
            assert rules_form(b, ex, db[ex]) == form(a, ex, da[ex])


# (built-in, twin, a slice of a real corpus, fit options): 10 iterations from a run of the built-in
REAL = [
    ("hmm.em", "rules/chain.em", ("conll2000", "test.txt"), 1200,
     ["--format", "conll", "--gold-column", "2", "--states", "8"]),
    ("segment.em", "rules/segment.em", ("br-phono", "br-phono.txt"), 150, ["--gold-spaces"]),
    ("pcfg.em", "rules/pcfg.em", ("ptb-sample", "wsj_sample_trees.txt"), 60,
     ["--format", "ptb", "--max-length", "10", "--labels", "4"]),
    ("dmv.em", "rules/dmv.em", ("ptb-sample", "wsj_sample_trees.txt"), 60, ["--format", "ptb", "--max-length", "10"]),
]


def _final_objective(run) -> float:
    import json

    return json.loads((run / "run.json").read_text())["objective"]


@pytest.mark.realdata
@pytest.mark.parametrize("built_in, rules, corpus, lines, options", REAL, ids=[r[0] for r in REAL])
def test_twins_fit_alike_on_real_data(tmp_path, shared_data, built_in, rules, corpus, lines, options):
    text = (shared_data / corpus[0] / corpus[1]).read_text(encoding="utf-8").splitlines()
    cut = text[:lines]
    if options[:2] == ["--format", "conll"]:  # whole sentences
        while cut and cut[-1].strip():
            cut.pop()
    data = tmp_path / "data.txt"
    data.write_text("\n".join(cut) + "\n", encoding="utf-8")
    start, one, two = tmp_path / "start", tmp_path / "built_in", tmp_path / "rules"
    assert main(["fit", str(ROOT / "specs" / built_in), str(data), *options, "--iterations", "1", "--seed", "3",
                 "--out", str(start)]) == 0
    for spec, run in ((built_in, one), (rules, two)):
        assert main(["fit", str(ROOT / "specs" / spec), str(data), *options, "--iterations", "10",
                     "--init", str(start), "--out", str(run)]) == 0
    assert math.isclose(_final_objective(two), _final_objective(one), rel_tol=1e-9)
