"""Structures written as rules against brute force: every derivation of tiny examples enumerated
from the grounded program (tests/reference.py: rule_derivations, which lists firings and unfolds
them with no dynamic program), then log Z, every expected count, the Viterbi derivation and the
hard-EM counts compared with the generated code, for every rule program in specs/ (small sizes)
and for random small programs; posterior draws against the enumerated posterior."""
from __future__ import annotations

import os

import numpy as np
import pytest

from conftest import ROOT
from emc.spec.check import check
from emc.spec.parse import parse_text
from emc.structures.rules.program import evaluate
from emc.runtime.executor import LocalExecutor
from emc.structures.posteriors import nonempty_spans
from emc.structures.rules import codegen, posterior_kind, posterior_size, posterior_width
from emc.structures.rules.spans import longest_span
from helpers import check_against_enumeration, problem_from_lines, random_params, structure_scores
from random_programs import random_program
from reference import projective_trees, rule_decoded_form, rule_derivations, rule_structures

TOKENS = ["a b c", "b c a a", "c a", "a", "b b c"]
# (spec, overrides, data): the reference rule programs at sizes brute force can enumerate
CASES = [
    ("rules/chain.em", {"states": 2}, TOKENS),
    ("rules/segment.em", {"maxlen": 3}, ["abcab", "cab", "a", "bca"]),
    ("rules/pcfg.em", {"labels": 2}, TOKENS),
    ("rules/dmv.em", {}, TOKENS),
    ("hsmm.em", {"classes": 2, "maxlen": 2}, TOKENS),
    ("evg.em", {}, TOKENS),
    ("hmm_mixture.em", {"components": 2, "states": 2}, TOKENS[:3]),
    ("hmm_prevword.em", {"states": 2}, TOKENS),
]


def spec_text(name: str) -> str:
    return (ROOT / "specs" / name).read_text(encoding="utf-8")


def check_program(problem, seeds=(0, 1)) -> None:
    for seed in seeds:
        params = random_params(problem, np.random.default_rng(seed))
        for example in range(problem.n_examples):
            check_against_enumeration(problem, params, example, rule_structures(problem, example),
                                      lambda decoded: rule_decoded_form(problem, decoded))


@pytest.mark.parametrize("name, overrides, data", CASES, ids=[c[0] for c in CASES])
def test_reference_rule_programs_match_enumeration(tmp_path, name, overrides, data):
    check_program(problem_from_lines(tmp_path, spec_text(name), data, None, overrides))


POSTERIOR_CASES = [c for c in CASES if c[0] in ("rules/chain.em", "hsmm.em", "rules/dmv.em", "hmm_prevword.em",
                                                 "rules/pcfg.em", "rules/segment.em")]


def _posterior_places(program, rule, env: dict, n: int, longest: int) -> list[int]:
    """Where a part's marginal goes among the posteriors: (token, label) or (token, head) pairs
    in rows of posterior_width, each span built (by start then end), or each word read (by start,
    then length)."""
    kind, width = posterior_kind(program), posterior_width(program, env, n)
    if kind == "labels" and rule.label is not None:
        _, start, end, variable = rule.label
        first = evaluate(start, env)
        return [t * width + env[variable] for t in range(first, first + 1 if end is None else evaluate(end, env))]
    if kind == "attaches" and rule.attach is not None:
        dependent, head = rule.attach
        return [evaluate(dependent, env) * width + (0 if head is None else evaluate(head, env) + 1)]
    positions = program.items[rule.head.name].positions
    if kind == "spans" and len(positions) == 2:
        i, j = (evaluate(rule.head.args[d], env) for d in positions)
        return [nonempty_spans(n).index((i, j))]
    spans = [a for a in rule.where if a.kind == "span"]
    if kind == "segments" and spans:
        i, j = evaluate(spans[0].index, env), evaluate(spans[0].end, env)
        return [i * longest + j - i - 1]
    return []


@pytest.mark.parametrize("name, overrides, data", POSTERIOR_CASES, ids=[c[0] for c in POSTERIOR_CASES])
def test_rule_posteriors_are_the_enumerated_marginals(tmp_path, name, overrides, data):
    """posterior_example (emc decode --posteriors): P(token t gets label v), P(token t's head is h),
    P(span (i, j) is built) or P(x[i:j] is a word), summed over the enumerated derivations whose
    parts say so."""
    problem = problem_from_lines(tmp_path, spec_text(name), data, None, overrides)
    program = problem.model.checked.structure.program
    params = random_params(problem, np.random.default_rng(4))
    marginals, log_z = LocalExecutor(problem, threads=1).posterior(params, np.arange(problem.n_examples))
    rules = {rule.name: rule for rule in program.parts}
    longest = longest_span(program, problem.args)
    for example in range(problem.n_examples):
        n = len(problem.corpus.fields["x"].tokens(example))
        structures = list(rule_structures(problem, example))
        scores = structure_scores(problem, params, structures)
        expected = np.zeros(posterior_size(program, problem.args, n))
        for (_, form), score in zip(structures, scores):
            for rule_name, values in form:
                rule = rules[rule_name]
                env = {"n": n, **problem.args, **dict(zip(rule.params, values))}
                for place in _posterior_places(program, rule, env, n, longest):
                    expected[place] += score
        assert np.isclose(log_z[example], np.log(scores.sum()))
        np.testing.assert_allclose(marginals[example], expected / scores.sum(), rtol=1e-9, atol=1e-12)


# Each seed compiles a program (20 s and more), so a run draws one of each family. More:
# EMC_RANDOM_PROGRAMS=40 pytest tests/test_rules_bruteforce.py -k random
RANDOM_SEEDS = range(int(os.environ.get("EMC_RANDOM_PROGRAMS", "2")))


@pytest.mark.parametrize("seed", RANDOM_SEEDS)
def test_random_rule_programs_match_enumeration(tmp_path, seed):
    text, data = random_program(seed)
    check_program(problem_from_lines(tmp_path, text, data, None, {}))


def test_a_program_in_many_functions_matches_enumeration(tmp_path, monkeypatch):
    """The inside pass of a long program calls its rules' loop nests as functions, a few rules to
    one (codegen.CHUNK_LINES): here one rule to each, on a random program."""
    monkeypatch.setattr(codegen, "CHUNK_LINES", 1)
    text, data = random_program(0)
    problem = problem_from_lines(tmp_path, text, data, None, {})
    assert hasattr(problem.model.module, "_inside_values_1")
    check_program(problem, seeds=(0,))


@pytest.mark.parametrize("name, overrides, data", [CASES[2], CASES[3], CASES[4]], ids=["pcfg", "dmv", "hsmm"])
def test_rule_samples_follow_the_posterior(tmp_path, name, overrides, data):
    """Posterior draws (emc decode --sample, stochastic EM's counts) against the enumerated
    posterior, within the total-variation bound a biased sampler fails (tests/test_sampling.py)."""
    from test_sampling import check_sampler

    problem = problem_from_lines(tmp_path, spec_text(name), data[:2], None, overrides)
    params = random_params(problem, np.random.default_rng(3))
    check_sampler(problem, params, list(rule_structures(problem, 0)))


@pytest.mark.parametrize("name", ["rules/dmv.em", "evg.em"])
def test_dependency_programs_derive_each_projective_tree_once(name):
    """Split heads with valence are unambiguous: one derivation per projective tree, and each
    derivation's attachments form that tree."""
    program = check(parse_text(spec_text(name), name)).structure.program
    for n in range(1, 6):
        trees = set()
        for derivation in rule_derivations(program, n, {}):
            heads = [None] * n
            for firing in derivation:
                if firing.rule.attach is not None:
                    dependent, head = firing.rule.attach
                    heads[evaluate(dependent, firing.env)] = 0 if head is None else evaluate(head, firing.env) + 1
            trees.add(tuple(heads))
        assert trees == set(projective_trees(n))
        assert sum(1 for _ in rule_derivations(program, n, {})) == len(trees)
