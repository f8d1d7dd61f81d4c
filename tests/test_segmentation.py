"""The segmentation end to end: batch EM is monotone, maxlen bounds the words, the same spec
segments a language it has never seen, the CLI fits and decodes, bad input is named by file and
line, the substring index numbers every run exactly, and the metrics count what they say."""
from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import ROOT
from emc.cli import main
from emc.eval.segmentation import segmentation_scores
from emc.io.vocab import Vocabulary
from emc.runtime.fit import fit
from emc.runtime.state import FitError
from emc.runtime.params import ParamState
from emc.runtime.sampling import sample_text
from emc.runtime.settings import FitSettings
from emc.structures.segmentation.substrings import NO_RUN, word_ids
from helpers import problem_from_lines, write_lines

SPEC_PATH = ROOT / "specs" / "segment.em"
SEGMENT = SPEC_PATH.read_text()


def synthetic_language(tmp_path, examples: int = 600, seed: int = 4) -> list[str]:
    """Utterances (words separated by spaces) of a random language over Greek letters."""
    path = write_lines(tmp_path / "spec.em", [SEGMENT])
    text = sample_text(str(path), {}, examples, seed, {"vocab_size": 40, "mean_length": 4.0})
    return text.splitlines()


def assert_monotone(history, rel=1e-10):
    objectives = [r["objective"] for r in history]
    for before, after in zip(objectives, objectives[1:]):
        assert after >= before - rel * abs(before), (before, after)


def test_batch_em_never_lowers_the_objective(tmp_path):
    problem = problem_from_lines(tmp_path, SEGMENT, synthetic_language(tmp_path))
    for init in ("uniform", "random"):
        result = fit(problem, FitSettings(iterations=30, tolerance=0, eval_every=0, init=init))
        assert_monotone(result.history)
        assert result.history[-1]["objective"] > result.history[0]["objective"]


@pytest.mark.parametrize("start_mass, row_total", [(None, 1.0), ("row", 1.0), ("entry", None)])
def test_online_em_starts_from_one_pseudo_count_per_row(tmp_path, start_mass, row_total):
    """The segmentation's word row has an outcome per substring: online EM weighs its start as one
    pseudo-count (ONLINE_START_MASS), unless --start-mass entry says one per substring."""
    from emc.runtime.executor import LocalExecutor
    from emc.runtime.state import FitState
    from emc.runtime.params import random_init
    from emc.runtime.variants import make_variant

    problem = problem_from_lines(tmp_path, SEGMENT, ["abcab", "cabab"])
    settings = FitSettings(algorithm="stepwise", start_mass=start_mass)
    variant = make_variant("stepwise", problem, LocalExecutor(problem, 1), settings)
    rng = np.random.default_rng(0)
    state = FitState(params=random_init(problem.layout, problem.fixed_theta, rng, 1.0), rng=rng)
    variant.start(state)
    word = problem.layout.table("word")
    expected = row_total if row_total is not None else word.outcomes
    assert state.params.row_total[word.row_slice] == pytest.approx([expected])


def test_an_unseen_language_is_segmented_with_no_code_change(tmp_path):
    """Greek-letter words from a random lexicon: the English spec finds them (token F1 of about
    0.9 on this sample; chance-level splitting scores far below)."""
    lines = synthetic_language(tmp_path)
    problem = problem_from_lines(tmp_path, SEGMENT, lines, options={"gold_spaces": True})
    result = fit(problem, FitSettings(iterations=10, tolerance=0, eval_every=0, init="uniform"))
    assert result.metrics["token_f1"] > 0.85, result.metrics
    assert result.metrics["boundary_f1"] > 0.9, result.metrics


def test_maxlen_cuts_the_longest_words(tmp_path):
    """With maxlen 3 no decoded word is longer than 3 symbols, so every gold word longer than that
    is cut; with the spec's maxlen (10) the same data gives such words whole."""
    lines = synthetic_language(tmp_path)
    data = write_lines(tmp_path / "data.txt", lines)
    decoded = {}
    for maxlen in ("3", "10"):
        run = tmp_path / f"run{maxlen}"
        assert main(["fit", str(SPEC_PATH), str(data), "--maxlen", maxlen, "--iterations", "10", "--init", "uniform",
                     "--quiet", "--out", str(run)]) == 0
        decoded[maxlen] = [set(line.split()) for line in decode(run, data)]
    long_words = [{w for w in line.split() if len(w) > 3} for line in lines]
    assert sum(map(len, long_words)) > 50
    assert max(len(w) for words in decoded["3"] for w in words) == 3
    assert not any(gold & found for gold, found in zip(long_words, decoded["3"]))
    assert sum(len(gold & found) for gold, found in zip(long_words, decoded["10"])) > 50


def decode(run, path, *extra) -> list[str]:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["decode", str(run), str(path), *extra]) == 0
    return out.getvalue().splitlines()


def test_fit_and_decode_from_the_command_line(tmp_path, capsys):
    lines = synthetic_language(tmp_path, examples=300)
    data = write_lines(tmp_path / "data.txt", lines[:150] + [""] + lines[150:])
    run = tmp_path / "run"
    assert main(["fit", str(SPEC_PATH), str(data), "--gold-spaces", "--iterations", "8", "--out", str(run)]) == 0
    err = capsys.readouterr().err
    assert re.search(r"\b1 empty \w+ skipped", err) and "token_f1" in err and "boundary_f1" in err
    out = decode(run, data, "--gold-spaces")
    assert len(out) == len(lines) + 1 and out[150] == ""
    assert [o.replace(" ", "") for o in out] == [line.replace(" ", "") for line in lines[:150] + [""] + lines[150:]]
    assert "emc: token_precision" in capsys.readouterr().err
    # the spaces of the input are ignored: the unsegmented text decodes the same
    bare = write_lines(tmp_path / "bare.txt", [line.replace(" ", "") for line in lines[:20]])
    assert decode(run, bare) == out[:20]


def test_decoding_symbols_never_seen_in_training(tmp_path):
    data = write_lines(tmp_path / "data.txt", ["abab", "ab ab ab", "ba"])
    run = tmp_path / "run"
    assert main(["fit", str(SPEC_PATH), str(data), "--iterations", "5", "--quiet", "--out", str(run)]) == 0
    out = decode(run, write_lines(tmp_path / "new.txt", ["abzz", "q"]))
    assert [o.replace(" ", "") for o in out] == ["abzz", "q"]


def test_posteriors_list_segments_with_their_probability(tmp_path):
    data = write_lines(tmp_path / "data.txt", ["abab", "abab", "ab"])
    run = tmp_path / "run"
    assert main(["fit", str(SPEC_PATH), str(data), "--iterations", "5", "--quiet", "--out", str(run)]) == 0
    out = decode(run, write_lines(tmp_path / "new.txt", ["ab"]), "--posteriors")
    rows = [line.split("\t") for line in out if line]
    by_segment = {(int(i), w): float(p) for i, w, p in rows}
    # 'ab' is one word or two: P(word 'ab' at 0) + P(word 'a' at 0) = 1
    assert abs(by_segment.get((0, "ab"), 0) + by_segment.get((0, "a"), 0) - 1) < 2e-3


# --- bad input --------------------------------------------------------------------------------

def run_fit(tmp_path, capsys, *args) -> tuple[int, str]:
    code = main(["fit", str(SPEC_PATH), *map(str, args), "--iterations", "2", "--quiet"])
    return code, capsys.readouterr().err


def test_gold_file_with_other_symbols_names_its_line(tmp_path, capsys):
    data = write_lines(tmp_path / "data.txt", ["ab cd", "ef"])
    gold = write_lines(tmp_path / "gold.txt", ["ab cd", "e g"])
    code, err = run_fit(tmp_path, capsys, data, "--gold", gold)
    assert code == 1 and "gold.txt:2: error: the symbols 'eg' differ from those on line 2" in err
    assert "Traceback" not in err


def test_gold_file_with_another_line_count(tmp_path, capsys):
    data = write_lines(tmp_path / "data.txt", ["ab cd", "ef"])
    gold = write_lines(tmp_path / "gold.txt", ["ab cd"])
    code, err = run_fit(tmp_path, capsys, data, "--gold", gold)
    assert code == 1 and "gold.txt: error: has 1 lines but" in err


def test_gold_file_scores_like_gold_spaces(tmp_path, capsys):
    lines = synthetic_language(tmp_path, examples=100)
    data = write_lines(tmp_path / "data.txt", [line.replace(" ", "") for line in lines])
    gold = write_lines(tmp_path / "gold.txt", lines)
    spaced = write_lines(tmp_path / "spaced.txt", lines)
    assert run_fit(tmp_path, capsys, data, "--gold", gold, "--out", tmp_path / "a")[0] == 0
    assert run_fit(tmp_path, capsys, spaced, "--gold-spaces", "--out", tmp_path / "b")[0] == 0
    import json
    metrics = [json.loads((tmp_path / r / "run.json").read_text())["metrics"] for r in ("a", "b")]
    assert metrics[0] == metrics[1] and metrics[0]["token_f1"] > 0
    # the training run's --gold file describes its own data: decoding another file ignores it
    other = write_lines(tmp_path / "other.txt", ["".join(lines[0].split())])
    assert decode(tmp_path / "a", other)[0].replace(" ", "") == lines[0].replace(" ", "")


def test_both_gold_options_at_once(tmp_path, capsys):
    data = write_lines(tmp_path / "data.txt", ["ab cd"])
    code, err = run_fit(tmp_path, capsys, data, "--gold", data, "--gold-spaces")
    assert code == 1 and "either with --gold FILE or with --gold-spaces" in err


def test_labeled_examples_are_refused_not_ignored(tmp_path, capsys):
    data = write_lines(tmp_path / "data.txt", ["abcd"])
    labeled = write_lines(tmp_path / "labeled.txt", ["ab cd"])
    code, err = run_fit(tmp_path, capsys, data, "--labeled", labeled)
    assert code == 1 and "does not take labeled examples" in err


def test_empty_data(tmp_path, capsys):
    code, err = run_fit(tmp_path, capsys, write_lines(tmp_path / "data.txt", ["", "  "]))
    assert code == 1 and "data.txt: error: contains no utterances" in err


def test_maxlen_out_of_range(tmp_path, capsys):
    data = write_lines(tmp_path / "data.txt", ["abc"])
    code, err = run_fit(tmp_path, capsys, data, "--maxlen", "0")
    assert code == 1 and "maxlen" in err and "too small" in err


def test_impossible_utterance_is_reported_with_its_line(tmp_path):
    problem = problem_from_lines(tmp_path, SEGMENT, ["ab", "", "cd"])
    theta = problem.fixed_theta.copy()
    word = problem.layout.table("word")
    names = problem.vocabs["substrings"].values
    word.matrix(theta)[:, 0] = [0.0 if "c" in w else 1.0 for w in names]
    with pytest.raises(FitError, match=r"data.txt:3: error: the example on this line has probability 0"):
        fit(problem, FitSettings(iterations=2), init=ParamState.plain(theta, problem.layout))


# --- the substring index and the metrics --------------------------------------------------------

@settings(max_examples=50, deadline=None)
@given(utterances=st.lists(st.text(alphabet="abcd", max_size=12), min_size=1, max_size=5),
       maxlen=st.integers(1, 6))
def test_substring_index_numbers_every_run_exactly(utterances, maxlen):
    symbols = Vocabulary()
    ids = np.array([symbols.add(c) for u in utterances for c in u], np.int32)
    offsets = np.concatenate([[0], np.cumsum([len(u) for u in utterances])])
    vocab = Vocabulary()
    words = word_ids(ids, offsets, symbols.values, maxlen, vocab).reshape(-1, maxlen)
    p = 0
    for u in utterances:
        for i in range(len(u)):
            for l in range(1, maxlen + 1):
                expected = vocab.index[u[i:i + l]] if i + l <= len(u) else NO_RUN
                assert words[p + i, l - 1] == expected
        p += len(u)
    assert sorted(vocab.values[1:]) == sorted({u[i:i + l] for u in utterances for i in range(len(u))
                                               for l in range(1, maxlen + 1) if i + l <= len(u)})


def starts(*utterances: str) -> np.ndarray:
    """Word-start flags of space-separated utterances, concatenated."""
    flags = []
    for u in utterances:
        for w in u.split():
            flags += [1] + [0] * (len(w) - 1)
    return np.array(flags)


def test_token_and_boundary_scores_count_words_and_inner_boundaries():
    offsets = np.array([0, 4, 7])
    gold = starts("a bc d", "efg")
    predicted = starts("a b cd", "e fg")
    scores = segmentation_scores(predicted, gold, offsets)
    # predicted words a, b, cd, e, fg: only 'a' is a gold word; gold has a, bc, d, efg
    assert scores["token_precision"] == pytest.approx(1 / 5)
    assert scores["token_recall"] == pytest.approx(1 / 4)
    # inner boundaries: gold {1, 3}, predicted {1, 2, 5}
    assert scores["boundary_precision"] == pytest.approx(1 / 3)
    assert scores["boundary_recall"] == pytest.approx(1 / 2)
    assert scores["boundary_f1"] == pytest.approx(0.4)
    perfect = segmentation_scores(gold, gold, offsets)
    assert perfect["token_f1"] == 1.0 and perfect["boundary_f1"] == 1.0


# --- real data ----------------------------------------------------------------------------------

@pytest.mark.realdata
def test_br_phono_reads_as_documented_and_batch_em_matches_the_reference(shared_data, tmp_path):
    """br-phono: the counts of its SOURCE.md, and batch EM from uniform parameters at 81.4% token F1
    after 10 iterations, the reference implementation's figure (issue 4)."""
    from emc.runtime.problem import Model, bind

    path = shared_data / "br-phono" / "br-phono.txt"
    model = Model.from_text(SEGMENT, "segment.em")
    options = {"gold_spaces": True}
    vocabs: dict = {}
    problem = bind(model, model.read(str(path), options, vocabs), vocabs, options)
    assert problem.n_examples == 9790
    assert len(problem.corpus.fields["x"].ids) == 95809
    assert len(vocabs["vocab:x"]) - 1 == 50
    assert int(np.concatenate(problem.corpus.gold["words"]).sum()) == 33399
    assert len(vocabs["substrings"]) - 1 == 174560
    result = fit(problem, FitSettings(iterations=10, tolerance=0, eval_every=0, init="uniform"))
    assert abs(result.metrics["token_f1"] - 0.814) < 0.01, result.metrics
