"""The chain's batched E-step (estep_batch: many sentences per matrix product) equals the
per-sentence E-step (estep_example, which test_chain_bruteforce holds to enumeration) summed over
the sentences: same log Z per sentence and the same weighted counts, across batch boundaries,
with sentences of many lengths, impossible sentences (zero parameters), per-sentence weights,
STOP on or off, and tag-dictionary sentences mixed in."""
from __future__ import annotations

import numpy as np
import pytest

from emc.runtime.executor import LocalExecutor
from emc.runtime.kernels import batch_estep
from emc.structures.semiring import MAX, SUM
from helpers import problem_from_lines, random_params

SPEC = """
model chain_batch
observed x : tokens
latent z : chain(x, states=3)
multinomial trans : P(z | z.prev)
multinomial emit : P(x | z)
multinomial sfx : P(x.suffix(1) | z)
"""

WORDS = ["a", "b", "c", "dd", "ee", "ff"]


def per_sentence(problem, params, semiring, weights):
    """The E-step one sentence at a time through estep_example."""
    executor = LocalExecutor(problem, threads=1)
    examples = np.arange(problem.n_examples, dtype=np.int64)
    counts = np.zeros((1, problem.layout.size))
    log_z = np.empty(problem.n_examples)
    batch_estep(problem.model.module.estep_example, examples, np.array([0, problem.n_examples], np.int64), weights,
                problem.ints, problem.array_bounds, problem.meta, params.abi(), executor.prepare(params), semiring,
                counts, log_z)
    return counts[0], log_z


@pytest.mark.parametrize("stop", ["yes", "no"])
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("dictionary", [False, True])
def test_batched_estep_equals_per_sentence(tmp_path, stop, seed, dictionary):
    rng = np.random.default_rng(seed)
    lines = [" ".join(rng.choice(WORDS, size=rng.integers(1, 9))) for _ in range(150)]
    options = {}
    if dictionary:  # sentences with "a" are constrained (per-sentence path), the others batched
        (tmp_path / "dict.txt").write_text("a N V\nb N\n")
        options = {"dictionary": str(tmp_path / "dict.txt")}
    problem = problem_from_lines(tmp_path, SPEC, lines, options, overrides={"stop": stop})
    assert hasattr(problem.model.module, "estep_batch")
    params = random_params(problem, rng, zeros=0.15)
    # every state scores 0 for one word: each sentence with that word is impossible
    problem.layout.table("emit").matrix(params.theta)[problem.corpus.fields["x"].ids[0], :] = 0.0
    weights = rng.uniform(0.5, 2.0, problem.n_examples)
    examples = np.arange(problem.n_examples)
    for semiring in (SUM, MAX):
        result = LocalExecutor(problem, threads=1).estep(params, examples, semiring, weights)
        counts, log_z = per_sentence(problem, params, semiring, weights)
        impossible = np.isneginf(log_z)
        assert 0 < impossible.sum() < len(log_z)  # both kinds are exercised
        np.testing.assert_array_equal(np.isneginf(result.log_z), impossible)
        np.testing.assert_allclose(result.log_z[~impossible], log_z[~impossible], rtol=1e-12)
        np.testing.assert_allclose(result.counts, counts, rtol=1e-10, atol=1e-12)


def test_wide_batches_equal_per_sentence(tmp_path):
    """From WIDE states on, estep_batch takes WIDE_BATCH sentences a product: 300 sentences cross
    one such boundary."""
    rng = np.random.default_rng(2)
    lines = [" ".join(rng.choice(WORDS, size=rng.integers(1, 6))) for _ in range(300)]
    module_states = 256
    problem = problem_from_lines(tmp_path, SPEC, lines, {}, overrides={"states": module_states})
    assert module_states >= problem.model.module.WIDE and len(lines) > problem.model.module.WIDE_BATCH
    params = random_params(problem, rng)
    weights = rng.uniform(0.5, 2.0, problem.n_examples)
    result = LocalExecutor(problem, threads=1).estep(params, np.arange(problem.n_examples), SUM, weights)
    counts, log_z = per_sentence(problem, params, SUM, weights)
    np.testing.assert_allclose(result.log_z, log_z, rtol=1e-12)
    np.testing.assert_allclose(result.counts, counts, rtol=1e-10, atol=1e-12)


def test_incremental_blocks_mix_batched_and_constrained_sentences(tmp_path):
    """Incremental EM in blocks runs each block's E-step through estep_batch, which hands the
    tag-dictionary sentences back for estep_example (emc/runtime/online.py): the kept statistics
    still follow the textbook block update."""
    from emc.runtime.fit import fit
    from emc.runtime.settings import FitSettings
    from reference import dense_incremental

    rng = np.random.default_rng(5)
    lines = [" ".join(rng.choice(WORDS, size=rng.integers(1, 9))) for _ in range(60)]
    (tmp_path / "dict.txt").write_text("a N V\nb N\n")
    problem = problem_from_lines(tmp_path, SPEC, lines, {"dictionary": str(tmp_path / "dict.txt")})
    constrained = problem.model.code_layout.arrays.index("constrained")
    flags = problem.ints[problem.array_bounds[constrained]:problem.array_bounds[constrained + 1]]
    assert 0 < flags.sum() < len(flags)  # both kinds in the blocks
    settings = FitSettings(algorithm="incremental", passes=3, block_size=7, tolerance=0, eval_every=0, seed=2)
    np.testing.assert_allclose(fit(problem, settings).params.weights(problem.layout),
                               dense_incremental(problem, settings), rtol=1e-8, atol=1e-12)
