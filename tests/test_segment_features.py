"""A featured word distribution for segmentation (`P(s.word) features(s.word, s.word.length, ...)`):
views of a segment's word inside features only, the E-step over weight-given probabilities against
brute force, the identity-only block against the plain table's EM trace, EM's monotonicity in the
regularised objective, and `emc fit` / `emc decode` / `emc info` on specs/segment_features.em."""
from __future__ import annotations

import json

import numpy as np
import pytest

import emc.runtime.blocks.features as features
from conftest import ROOT
from emc.io.views import apply_views
from emc.runtime.fit import fit
from emc.runtime.settings import FitSettings
from emc.spec.check import check
from emc.spec.errors import SpecError
from emc.spec.parse import parse_text
from helpers import check_against_enumeration, problem_from_lines, random_params
from reference import segmentation_structures

HEAD = "model s\nobserved x : symbols\nlatent s : segmentation(x, maxlen=3)\nweight penalty : exp(-s.length ^ 1.6)\n"
PLAIN = HEAD + "multinomial word : P(s.word)\n"
IDENTITY = HEAD + "multinomial word : P(s.word) features(s.word)\n"
FEATURED = HEAD + "multinomial word : P(s.word) features(s.word, s.word.length, s.word.prefix(1), s.word.suffix(1)) l2(0.5)\n"
LINES = ["abcab", "cabab", "abc", "bca", "aabcc", "abab cab", "ca bab"]


def test_views_of_a_segments_word_are_features_only():
    with pytest.raises(SpecError) as info:
        check(parse_text(HEAD + "multinomial word : P(s.word.length)\n", "bad.em"))
    assert "unknown attribute 's.word.length'" in str(info.value)
    assert (info.value.first.pos.line, info.value.first.pos.column) == (5, 29)
    assert "use them inside features(...)" in str(info.value)
    (factor,) = [f for f in check(parse_text(FEATURED)).factors if f.name == "word"]
    assert [f.text for f in factor.features] == ["s.word", "s.word.length", "s.word.prefix(1)", "s.word.suffix(1)"]


def test_the_feature_matrix_reads_each_substring(tmp_path):
    problem = problem_from_lines(tmp_path, FEATURED, LINES)
    block = problem.layout.table("word").featured
    words = problem.vocabs["substrings"].values
    for i, word in enumerate(words[1:], start=1):
        names = {block.feature_names[c] for c in block.phi[i].indices}
        assert names == {f"{f.text}={apply_views(word, f.views)}" for f in block.features}


@pytest.mark.parametrize("seed", range(4))
def test_the_estep_over_featured_probabilities_equals_enumeration(tmp_path, seed):
    problem = problem_from_lines(tmp_path, FEATURED, ["abcab", "cab", "aab"])
    params = random_params(problem, np.random.default_rng(seed))
    for example in range(problem.n_examples):
        check_against_enumeration(problem, params, example, segmentation_structures(problem, example))


def test_identity_features_without_penalty_give_the_plain_trace(tmp_path, monkeypatch):
    monkeypatch.setattr(features, "MAX_ITERATIONS", 2000)
    settings = FitSettings(iterations=10, tolerance=0, eval_every=0, init="uniform")
    plain = [r["objective"] for r in fit(problem_from_lines(tmp_path, PLAIN, LINES), settings).history]
    featured = [r["objective"] for r in fit(problem_from_lines(tmp_path, IDENTITY, LINES), settings).history]
    np.testing.assert_allclose(featured, plain, rtol=1e-6)
    assert plain[-1] > plain[0]


def test_fit_decode_and_info_on_the_featured_segmenter(tmp_path, capsys):
    from emc.cli import main

    data = tmp_path / "train.txt"
    data.write_text("\n".join(LINES) + "\n")
    run = tmp_path / "run"
    assert main(["fit", str(ROOT / "specs" / "segment_features.em"), str(data), "--gold-spaces", "--init", "random",
                 "--iterations", "8", "--tolerance", "0", "--maxlen", "4", "--out", str(run)]) == 0
    values = [json.loads(line)["objective"] for line in (run / "log.jsonl").read_text().splitlines()]
    assert len(values) == 8 and values[-1] > values[0]
    assert all(b >= a - 1e-9 * abs(a) for a, b in zip(values, values[1:])), values
    new = tmp_path / "new.txt"
    new.write_text("abcab\nddab\n")  # d: a symbol never seen in training
    capsys.readouterr()
    assert main(["decode", str(run), str(new)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.replace(" ", "") for line in lines] == ["abcab", "ddab"]
    assert main(["info", str(run)]) == 0
    out = capsys.readouterr().out
    assert "block word:" in out and "l2(1)" in out
    (row,) = [line for line in out.splitlines() if line.startswith("  row ")]
    assert "s.word" in row and row.count(" +") + row.count(" -") == 8


def test_a_saved_featured_segmenter_scores_runs_never_seen_in_training_from_their_features(tmp_path):
    """Decoding new text: a run never seen in training keeps its own substring id and gets
    exp(w . f(run)) / Z from the weights of its features seen in training (its length, its first
    and last symbols), not `<unk>`'s probability; the plain segmenter keeps `<unk>`."""
    from emc.cli import main
    from emc.runtime.decode import bind_saved
    from emc.runtime.model_dir import load_run

    data = tmp_path / "train.txt"
    data.write_text("\n".join(LINES) + "\n")
    spec = tmp_path / "featured.em"
    spec.write_text(FEATURED)
    run = tmp_path / "run"
    assert main(["fit", str(spec), str(data), "--init", "random", "--iterations", "3", "--out", str(run)]) == 0
    saved = load_run(run)
    new = tmp_path / "new.txt"
    new.write_text("abcc\nccc\n")  # ccc, bcc, abc...: runs of seen symbols, some never seen as runs
    problem, params = bind_saved(saved, str(new), {})
    word = problem.layout.table("word")
    vocab = problem.vocabs[word.outcome_spaces[0]]
    trained = saved.info["vocab_sizes"][word.outcome_spaces[0]]
    new_runs = [run for run in ("ccc", "bcc", "abcc") if vocab.index.get(run, 0) >= trained]
    assert new_runs and all(run in vocab.index for run in new_runs)
    table = word.matrix(params.weights(problem.layout))[:, 0]
    block, weights = word.featured, saved.features["word"][:, 0]
    scores = block.phi[:trained, :len(weights)][block.active[:trained]] @ weights
    log_z = np.log(np.exp(scores).sum())
    columns = {name: i for i, name in enumerate(block.feature_names)}
    for text in new_runs:
        keys = [f"{f.text}={apply_views(text, f.views)}" for f in block.features]
        seen = [columns[k] for k in keys if columns.get(k, len(weights)) < len(weights)]
        assert seen and len(seen) < len(keys)  # the run itself is new; its length or ends are not
        np.testing.assert_allclose(table[vocab.index[text]], np.exp(weights[seen].sum() - log_z), rtol=1e-10)
    assert len({round(float(table[vocab.index[t]]), 15) for t in new_runs}) == len(new_runs)  # not one <unk>

    plain_spec = tmp_path / "plain.em"
    plain_spec.write_text(PLAIN)
    plain = tmp_path / "plain"
    assert main(["fit", str(plain_spec), str(data), "--iterations", "2", "--out", str(plain)]) == 0
    plain_saved = load_run(plain)
    problem, _ = bind_saved(plain_saved, str(new), {})
    assert problem.sizes[word.outcome_spaces[0]] == plain_saved.info["vocab_sizes"][word.outcome_spaces[0]]
