"""Agreement training (Liang, Taskar & Klein 2006): the combined posterior is the product of the
two directions' link posteriors, checked by hand on one pair and against brute force on random
pairs, and the agreement E-step's counts are those products (each model keeping its own NULL
posteriors; the word links scaled to one link per target word). The joint fit runs in the shared
EM loop: its records are the loop's, its objective is both models' MAP objective, and options it
cannot honour are refused."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT
from emc.cli import main
from emc.runtime.decode import bind_saved
from emc.runtime.executor import LocalExecutor
from emc.runtime.state import Objective, example_weights
from emc.runtime.model_dir import load_run
from emc.runtime.mstep import log_prior
from emc.runtime.params import ParamState
from emc.runtime.settings import FitSettings
from emc.runtime.modes import agreement
from helpers import problem_from_lines, random_params
from helpers_alignment import spec_copy
from reference import alignment_structures

IBM1 = (ROOT / "specs" / "ibm1.em").read_text()


def both_directions(tmp_path, lines, null="yes"):
    forward = problem_from_lines(tmp_path, IBM1, lines, overrides={"null": null})
    reverse = problem_from_lines(tmp_path, IBM1, lines, options={"reverse": True}, overrides={"null": null})
    return forward, reverse


def set_table(problem, probabilities: dict[tuple[str, str], float]) -> ParamState:
    """t(outcome word | row word) as given; every entry of the table must be listed."""
    table = problem.layout.table("trans")
    e, f = problem.vocabs["vocab:e"].values, problem.vocabs["vocab:f"].values
    theta = np.zeros(problem.layout.size)
    for k, (r, o) in enumerate(zip(table.entry_rows, table.entry_outcomes)):
        theta[table.offset + k] = probabilities[(e[r], f[o])]
    return ParamState.plain(theta, problem.layout)


def test_product_posteriors_by_hand(tmp_path):
    """a b ||| x y without NULL: P1(x<-a) = .6/.8, P1(y<-a) = .4/1.2; P2(a->x) = .9/1.4,
    P2(b->x) = .1/.6, so q(a, x) = .75 * 9/14 = .482 (below .5) and q(b, y) = 2/3 * 5/6 = .556."""
    forward, reverse = both_directions(tmp_path, ["a b ||| x y"], null="no")
    p1 = set_table(forward, {("a", "x"): .6, ("a", "y"): .4, ("b", "x"): .2, ("b", "y"): .8})
    p2 = set_table(reverse, {("x", "a"): .9, ("x", "b"): .1, ("y", "a"): .5, ("y", "b"): .5})
    one = agreement.Direction(forward, LocalExecutor(forward, threads=1)).posteriors(p1, np.array([0]))[0][0]
    two = agreement.Direction(reverse, LocalExecutor(reverse, threads=1)).posteriors(p2, np.array([0]))[0][0]
    q = agreement.product_posteriors(one, two, 0)
    np.testing.assert_allclose(q, [[.75 * 9 / 14, .25 * 1 / 6], [1 / 3 * 5 / 14, 2 / 3 * 5 / 6]])
    assert agreement.agreed_links(q, 0.5) == {(1, 1)}


def marginals(problem, params, example):
    """P(a_j = i) by enumeration, as a (target words x source positions, NULL last) matrix."""
    weights = params.weights(problem.layout)
    table = problem.layout.table("trans")
    index = {(int(r), int(o)): table.offset + k for k, (r, o) in enumerate(zip(table.entry_rows, table.entry_outcomes))}
    width = len(problem.corpus.fields["e"].example(example)) + int(problem.args["null"])
    out = np.zeros((len(problem.corpus.fields["f"].example(example)), width))
    for firings, links in alignment_structures(problem, example):
        score = np.prod([weights[index[(r, o)]] for _, r, o in firings])
        for j, i in enumerate(links):
            out[j, width - 1 if i == -1 else i] += score
    return out / out[0].sum()


WORDS = ["a", "b", "c"]


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.lists(st.tuples(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
                               st.lists(st.sampled_from(WORDS), min_size=1, max_size=3)), min_size=1, max_size=3),
       seed=st.integers(0, 2**16))
def test_agreement_counts_are_the_product_posteriors(tmp_path, data, seed):
    lines = [f"{' '.join(e)} ||| {' '.join(f)}" for e, f in data]
    forward, reverse = both_directions(tmp_path, lines)
    rng = np.random.default_rng(seed)
    params = [random_params(forward, rng), random_params(reverse, rng)]
    examples = np.arange(len(data))
    directions = [agreement.Direction(p, LocalExecutor(p, threads=1)) for p in (forward, reverse)]
    post = [d.posteriors(p, examples)[0] for d, p in zip(directions, params)]
    for k in examples:
        np.testing.assert_allclose(post[0][k], marginals(forward, params[0], k), rtol=1e-9)
        np.testing.assert_allclose(post[1][k], marginals(reverse, params[1], k), rtol=1e-9)
    counts, _ = agreement._link_counts(directions[0], params[0], np.ones(len(data)), post[0], post[1])
    table = forward.layout.table("trans")
    index = {(int(r), int(o)): table.offset + k for k, (r, o) in enumerate(zip(table.entry_rows, table.entry_outcomes))}
    expected = np.zeros(forward.layout.size)
    null = len(forward.vocabs["vocab:e"])
    for k, (e, f) in enumerate(data):
        e_ids = forward.corpus.fields["e"].example(k)
        f_ids = forward.corpus.fields["f"].example(k)
        q = agreement.product_posteriors(post[0][k], post[1][k], 1)
        for j in range(len(f)):
            for i in range(len(e)):
                expected[index[(int(e_ids[i]), int(f_ids[j]))]] += q[j, i]
            expected[index[(null, int(f_ids[j]))]] += post[0][k][j, len(e)]  # its own NULL posterior
    # the word links scaled so that, with the NULL links, they count one link per target word
    words = table.offset + np.flatnonzero(table.entry_rows != null)
    null_mass = expected[table.offset:table.offset + table.size].sum() - expected[words].sum()
    expected[words] *= (sum(len(f) for _, f in data) - null_mass) / expected[words].sum()
    np.testing.assert_allclose(counts, expected, rtol=1e-9, atol=1e-12)
    assert counts.sum() == pytest.approx(sum(len(f) for _, f in data))


PAIRS = ["the house ||| la maison", "the blue house ||| la maison bleue", "the flower ||| la fleur",
         "a blue flower ||| une fleur bleue", "a house ||| une maison", "small ||| petite"] * 2


def test_the_joint_fit_runs_in_the_shared_loop_with_both_models_map_objective(tmp_path):
    """The agreement fit's records are the shared loop's, and its final objective is that of the
    final parameters: both models' log-likelihoods plus their log priors."""
    bitext, run = tmp_path / "train.txt", tmp_path / "run"
    bitext.write_text("".join(p + "\n" for p in PAIRS))
    assert main(["fit", spec_copy(tmp_path, "ibm1.em"), str(bitext), "--agree", "--out", str(run), "--iterations", "3",
                 "--tolerance", "0", "--prior", "trans=dirichlet(1.5)", "--seed", "2", "--quiet"]) == 0
    total, priors = 0.0, 0.0
    for folder in (run, run / "reverse"):
        saved = load_run(folder)
        problem, params = bind_saved(saved, str(bitext), {})
        settings = FitSettings.from_json(saved.info["settings"])
        examples = np.arange(problem.n_examples)
        _, log_z = LocalExecutor(problem).posterior(params, examples)
        total += Objective(problem, settings)(params, examples, log_z, example_weights(problem, settings))
        priors += log_prior(problem.layout, params, settings.regularizers)
    info = json.loads((run / "run.json").read_text())
    assert priors < -1 and info["objective"] == pytest.approx(total, rel=1e-9)
    log = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in log] == [1, 2, 3]
    assert [r["examples_seen"] for r in log] == [len(PAIRS), 2 * len(PAIRS), 3 * len(PAIRS)]
    assert all(r["algorithm"] == "batch" and r["label"] == "agreement batch seed=2" for r in log)


@pytest.mark.parametrize("extra, message", [
    (["--restarts", "2"], "--agree does not support --restarts 2"),
    (["--algorithm", "stepwise"], "--agree does not support --algorithm stepwise"),
])
def test_the_joint_fit_rejects_what_it_cannot_honour(tmp_path, capsys, extra, message):
    bitext = tmp_path / "train.txt"
    bitext.write_text("".join(p + "\n" for p in PAIRS))
    assert main(["fit", spec_copy(tmp_path, "ibm1.em"), str(bitext), "--agree", "--iterations", "1", "--quiet",
                 *extra]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
