"""Posterior sampling, every structure: on tiny random models, the frequencies of sampled
structures (`sample_example`, what `emc decode --sample` prints) match the brute-force posterior
of tests/reference.py within a total-variation bound that a biased sampler fails; the sampling
E-step's counts average the sampled structures' counts (one draw: exactly that structure's; many:
close to the exact expected counts); and draws depend on the seed only."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import ROOT
from emc.runtime.executor import LocalExecutor
from emc.structures.sampling import sampling
from emc.structures.semiring import SUM
from helpers import Entries, problem_from_lines, random_params, structure_scores
from reference import ENUMERATORS, chain_structures, decoded_form

DRAWS = 20000

CHAIN = """
model chain_test
observed x : tokens
latent z : chain(x, states=3, order={order})
multinomial trans : P(z | {context})
multinomial emit : P(x | z)
"""

# (id, spec text, data lines, overrides, options); the example sampled is the first line
CASES = [
    ("chain1", CHAIN.format(order=1, context="z.prev"), ["a b c a", "b a"], {}, {}),
    ("chain2", CHAIN.format(order=2, context="z.prev, z.prev2"), ["a b c a", "b a"], {"states": 2}, {}),
    ("chain1_nostop", CHAIN.format(order=1, context="z.prev"), ["c a b", "b a"], {"stop": "no"}, {}),
    ("segmentation", (ROOT / "specs" / "segment.em").read_text(), ["abcab", "cab"], {"maxlen": 3}, {}),
    ("ibm1", (ROOT / "specs" / "ibm1.em").read_text(), ["a b ||| x y z", "b ||| y"], {}, {}),
    ("hmm_align", (ROOT / "specs" / "hmm_align.em").read_text(), ["a b c ||| x y z", "b ||| y"], {}, {}),
    ("spantree", (ROOT / "specs" / "ccm.em").read_text(), ["D N V D N", "N V"], {}, {}),
    ("label", (ROOT / "specs" / "naive_bayes.em").read_text(), ["a b c a", "b c"], {"classes": 4}, {}),
    ("pcfg", (ROOT / "specs" / "pcfg.em").read_text(), ["D N V", "N V"], {"labels": 2}, {}),
    ("tuples", (ROOT / "specs" / "verb_object.em").read_text(), ["eat ||| apple pie", "drive ||| car"],
     {"classes": 4}, {}),
    ("deptree", (ROOT / "specs" / "dmv.em").read_text(), ["D N V D", "N V"], {}, {}),
]


def key(form):
    """A decoded form as a dictionary key (a labeled tree's nodes come as a dict)."""
    return frozenset(form.items()) if isinstance(form, dict) else form


def posterior(problem, params, structures) -> dict:
    """Each structure's decoded form -> its posterior probability, by enumeration."""
    scores = structure_scores(problem, params, structures)
    return {key(form): score / scores.sum() for (_, form), score in zip(structures, scores)}


def empirical(problem, example: int, decoded: list[np.ndarray]) -> dict:
    counts: dict = {}
    for d in decoded:
        form = key(decoded_form(problem, example, d))
        counts[form] = counts.get(form, 0) + 1
    return {form: c / len(decoded) for form, c in counts.items()}


def total_variation(p: dict, q: dict) -> float:
    return 0.5 * sum(abs(p.get(k, 0.0) - q.get(k, 0.0)) for k in set(p) | set(q))


def bound(p: dict, draws: int) -> float:
    """Twice the expected total variation of an exact sampler's frequencies (at most
    1/2 sum sqrt(p (1 - p) / N)); a deviation beyond it has probability below exp(-2 N bound^2 / 4)."""
    return 2 * 0.5 * sum(np.sqrt(v * (1 - v) / draws) for v in p.values())


def biased_frequencies(p: dict, draws: int, rng: np.random.Generator) -> dict:
    """What a sampler drawing from p^1.5 (renormalised) would give: a plausible bug (e.g. a
    sum pass that squares part of the scores) the bound must catch."""
    forms = list(p)
    q = np.array([p[f] for f in forms]) ** 1.5
    drawn = rng.choice(len(forms), size=draws, p=q / q.sum())
    return {forms[i]: c / draws for i, c in zip(*np.unique(drawn, return_counts=True))}


def check_sampler(problem, params, structures, example: int = 0) -> None:
    executor = LocalExecutor(problem, threads=1)
    p = posterior(problem, params, structures)
    decoded, log_z = executor.sample(params, np.full(DRAWS, example), np.arange(DRAWS))
    assert np.allclose(log_z, np.log(structure_scores(problem, params, structures).sum()))
    limit = bound(p, DRAWS)
    assert total_variation(p, empirical(problem, example, decoded)) < limit
    assert total_variation(p, biased_frequencies(p, DRAWS, np.random.default_rng(0))) > limit
    check_sampled_counts(problem, params, structures, example, executor, decoded[:5])


def check_sampled_counts(problem, params, structures, example, executor, first_draws) -> None:
    """One draw per E-step: the counts of exactly the structure sample_example drew with that
    seed; many: close to the expected counts."""
    layout = problem.layout
    learned = layout.learned_mask()
    entries = Entries(problem)
    by_form = {key(form): firings for firings, form in structures}
    ex = np.array([example])
    for base, drawn in enumerate(first_draws):
        counts = executor.estep(params, ex, sampling(1, base), np.ones(1)).counts
        expected = np.zeros(layout.size)
        for i in entries.of(by_form[key(decoded_form(problem, example, drawn))]):
            expected[i] += 1.0
        expected[~learned] = 0.0
        np.testing.assert_allclose(counts, expected, atol=1e-12)
    exact = executor.estep(params, ex, SUM, np.ones(1))
    many = executor.estep(params, ex, sampling(DRAWS, 7), np.ones(1))
    assert many.log_z[0] == pytest.approx(exact.log_z[0], rel=1e-12)
    assert np.max(np.abs(many.counts - exact.counts)) < 0.03
    assert np.max(np.abs(many.counts - exact.counts)) > 0.0  # sampled, not the exact counts


@pytest.mark.parametrize("name, spec, lines, overrides, options", CASES, ids=[c[0] for c in CASES])
def test_samples_follow_the_posterior(tmp_path, name, spec, lines, overrides, options):
    problem = problem_from_lines(tmp_path, spec, lines, options, overrides)
    params = random_params(problem, np.random.default_rng(3))
    structure = problem.model.checked.structure.name
    check_sampler(problem, params, list(ENUMERATORS[structure](problem, 0)))


@pytest.mark.parametrize("order", [1, 2])
def test_constrained_chain_samples_only_allowed_paths(tmp_path, order):
    """A tag dictionary restricts the states; samples follow the restricted posterior."""
    dictionary = tmp_path / "dict.txt"
    tags = {"a": ["N", "V"], "b": ["D"], "c": ["N", "V", "D"]}
    dictionary.write_text("".join(f"{w} {' '.join(ts)}\n" for w, ts in tags.items()))
    context = "z.prev" if order == 1 else "z.prev, z.prev2"
    problem = problem_from_lines(tmp_path, CHAIN.format(order=order, context=context), ["a c b a c", "b"],
                                 options={"dictionary": str(dictionary)})
    names = problem.labels["states"]
    params = random_params(problem, np.random.default_rng(5))
    allowed = [{names.index(t) for t in tags[w]} for w in "a c b a c".split()]
    check_sampler(problem, params, list(chain_structures(problem, 0, allowed)))


def test_draws_depend_on_the_seed_only(tmp_path):
    """Same bases: the same draws, whatever the threads; other bases: other draws."""
    problem = problem_from_lines(tmp_path, CHAIN.format(order=1, context="z.prev"),
                                 ["a b c a b c", "b a c", "c c a b"] * 5)
    params = random_params(problem, np.random.default_rng(1))
    examples = np.arange(problem.n_examples)
    one = LocalExecutor(problem, threads=1)
    two = LocalExecutor(problem, threads=2)
    a = one.sample(params, examples, np.zeros(len(examples)))[0]
    b = two.sample(params, examples, np.zeros(len(examples)))[0]
    c = one.sample(params, examples, np.full(len(examples), 1))[0]
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c))
    request = sampling(3, 11)
    counts_one = one.estep(params, examples, request, np.ones(len(examples))).counts
    counts_two = two.estep(params, examples, request, np.ones(len(examples))).counts
    np.testing.assert_allclose(counts_one, counts_two, rtol=1e-12)
    other = one.estep(params, examples, sampling(3, 12), np.ones(len(examples))).counts
    assert not np.allclose(counts_one, other)
