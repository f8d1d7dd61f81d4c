"""What a user hit in round 3 of attacking the CLI (issue 33): resuming on changed data, settings
that never end, damaged run folders, hostile numbers and bytes. Each is refused with a one-line
message (exit status 1 or 2, no traceback) and leaves saved files as they were."""
from __future__ import annotations

import numpy as np
import pytest

from emc.cli import main
from emc.spec.width import display_width

from conftest import ROOT

SPEC = str(ROOT / "specs" / "hmm.em")


@pytest.fixture
def data(tmp_path):
    path = tmp_path / "data.txt"
    path.write_text("a b c\nb c a\nc a b a\n")
    return path


def fit(data, out, *extra) -> int:
    return main(["fit", SPEC, str(data), "--states", "2", "--iterations", "3", "--out", str(out), "--quiet", *extra])


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


def test_resume_on_changed_data_is_refused(tmp_path, data, capsys):
    run = tmp_path / "run"
    assert fit(data, run) == 0
    before = model_files(run)
    data.write_text("a b\n")
    capsys.readouterr()
    assert main(["fit", "--resume", str(run), "--quiet"]) == 1
    message = one_line_error(capsys)
    assert f"{data} changed since the fit began (20 -> 4 bytes" in message
    assert "another --out" in message and f"delete {run}" in message
    assert model_files(run) == before


@pytest.mark.parametrize("extra, name", [(["--iterations", "3"], "--iterations"), (["--states", "3"], "--states"),
                                         ([SPEC], "SPEC"), (["--algorithm", "vb"], "--algorithm")])
def test_resume_refuses_an_argument_it_would_ignore(tmp_path, data, capsys, extra, name):
    """`emc fit --resume RUN --iterations 3` ran on to the first fit's 5,000 iterations without a word."""
    run = tmp_path / "run"
    assert fit(data, run) == 0
    before = model_files(run)
    capsys.readouterr()
    assert main(["fit", "--resume", str(run), *extra, "--quiet"]) == 1
    assert one_line_error(capsys) == (f"emc fit --resume {run}: {name} is not taken: a resumed fit goes on with the "
                                      f"data and settings it began with; leave {name} out (a new fit, with another "
                                      f"--out, takes it)")
    assert model_files(run) == before


def test_resume_on_the_same_data_touched_goes_on(tmp_path, data, capsys):
    import os

    run = tmp_path / "run"
    assert fit(data, run) == 0
    os.utime(data, (1, 1))  # a new modification time, the same bytes
    assert main(["fit", "--resume", str(run), "--quiet"]) == 0


@pytest.mark.parametrize("setting", [
    ["--algorithm", "annealed", "--beta-factor", "1"], ["--algorithm", "annealed", "--beta-factor", "0.5"],
    ["--algorithm", "annealed", "--beta-factor", "1.0000001"], ["--algorithm", "annealed", "--beta-min", "0"],
    ["--algorithm", "skewed", "--beta-factor", "nan"], ["--tolerance", "nan"], ["--restarts", "0"],
    ["--seed", "-1"], ["--threads", "-1"], ["--threads", "0"], ["--threads", "1000"], ["--iterations", "-3"],
    ["--algorithm", "stepwise", "--alpha", "2"], ["--labeled-weight", "inf"], ["--vb-alpha", "0"],
])
def test_settings_that_cannot_run_or_never_end_are_refused_up_front(tmp_path, data, capsys, setting):
    assert fit(data, tmp_path / "run", *setting) == 1
    message = one_line_error(capsys)
    assert message.startswith(setting[-2]) and setting[-1] in message
    assert not (tmp_path / "run").exists()


def test_annealing_runs_at_most_iterations_per_temperature_and_refuses_a_factor_of_one(tmp_path):
    """A programmatic fit does not pass through the CLI's checks: the variant itself refuses."""
    from emc.runtime.fit import fit as run_fit
    from emc.runtime.settings import FitSettings
    from emc.spec.errors import EmcError
    from helpers import tiny_problem

    problem = tiny_problem(tmp_path, ROOT / "specs" / "hmm.em")
    settings = FitSettings(algorithm="annealed", iterations=2, beta_min=0.25, beta_factor=2.0, anneal_tolerance=0,
                           tolerance=0, eval_every=0)
    result = run_fit(problem, settings)
    assert [r["beta"] for r in result.history] == [0.25, 0.25, 0.5, 0.5, 1.0, 1.0]
    with pytest.raises(EmcError, match="--beta-factor 1.0: beta must grow"):
        run_fit(problem, FitSettings(algorithm="annealed", beta_factor=1.0))


@pytest.mark.parametrize("setting", [["--examples", "-5"], ["--examples", "0"], ["--vocab-size", "0"],
                                     ["--mean-length", "0"], ["--mean-length", "nan"], ["--seed", "-1"],
                                     ["--mean-length", "1000000000"], ["--vocab-size", "1000000000000"]])
def test_sample_refuses_what_cannot_be_drawn(capsys, setting):
    assert main(["sample", SPEC, *setting]) == 1
    message = one_line_error(capsys)
    assert message.startswith("emc sample")
    if setting[-1].startswith("1000000000"):
        assert "GiB" in message and "available" in message


def test_decode_sample_refuses_what_cannot_fit_in_memory(tmp_path, data, capsys):
    run = tmp_path / "run"
    assert fit(data, run) == 0
    assert main(["decode", str(run), str(data), "--sample", "1000000000"]) == 1
    message = one_line_error(capsys)
    assert "--sample 1000000000" in message and "GiB" in message
    assert main(["decode", str(run), str(data), "--sample", "2", "--seed", "-1"]) == 1
    assert "--seed -1" in one_line_error(capsys)


def _disk_full_on(monkeypatch, name_part: str) -> None:
    """Writing a file whose temporary name contains `name_part` fails as on a full disk."""
    import errno
    import os

    import emc.io.atomic as atomic

    real_fsync = os.fsync

    def fsync(fd):
        if name_part in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(atomic.os, "fsync", fsync)


def model_files(run) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(run.iterdir()) if p.is_file() and p.name != ".lock"}


def test_disk_full_while_checkpointing_keeps_the_previous_checkpoint(tmp_path, data, capsys, monkeypatch):
    run = tmp_path / "run"
    assert fit(data, run) == 0
    before = model_files(run)
    _disk_full_on(monkeypatch, "checkpoint.npz")
    capsys.readouterr()
    assert fit(data, run, "--overwrite", "--seed", "5") == 1
    message = one_line_error(capsys)
    assert "checkpoint.npz: cannot write (No space left on device)" in message
    assert model_files(run) == before  # the old checkpoint set aside by --overwrite is back


def test_disk_full_while_saving_leaves_the_previous_model_whole(tmp_path, data, capsys, monkeypatch):
    run = tmp_path / "run"
    assert fit(data, run) == 0
    before = model_files(run)
    _disk_full_on(monkeypatch, "vocab.json")  # after spec.em and params.npz were written
    capsys.readouterr()
    assert fit(data, run, "--overwrite", "--seed", "5") == 1
    message = one_line_error(capsys)
    assert "vocab.json: cannot write (No space left on device); the previous file is kept" in message
    after = model_files(run)
    assert {k: v for k, v in after.items() if k != "checkpoint.npz"} == \
        {k: v for k, v in before.items() if k != "checkpoint.npz"}


def test_leftover_temporary_files_of_a_killed_fit_are_cleaned(tmp_path, data):
    run = tmp_path / "run"
    assert fit(data, run) == 0
    leftover = run / ".run.json.x1y2z3.tmp"
    leftover.write_text("{")
    assert fit(data, run, "--overwrite") == 0
    assert not leftover.exists()


def test_resuming_a_finished_run_writes_nothing(tmp_path, data, capsys):
    import os

    run = tmp_path / "run"
    assert fit(data, run) == 0
    stamps = lambda: {name: (content, os.stat(run / name).st_mtime_ns)  # noqa: E731
                      for name, content in model_files(run).items()}
    before = stamps()
    assert main(["fit", "--resume", str(run)]) == 0
    assert f"{run} already holds this finished model" in capsys.readouterr().err
    assert stamps() == before


def _edit_json(path, change) -> None:
    import json

    value = json.loads(path.read_text())
    path.write_text(json.dumps(change(value)))


def _edit_theta(run, change) -> None:
    with np.load(run / "params.npz") as npz:
        arrays = dict(npz)
    arrays["theta"] = change(arrays["theta"])
    np.savez(run / "params.npz", **arrays)


def _cut_vocabulary(v):
    v["vocab:x"] = {"values": v["vocab:x"]["values"][:3], "counts": v["vocab:x"]["counts"][:3]}
    return v


def _add_a_value(v):
    v["vocab:x"] = {"values": v["vocab:x"]["values"] + ["zz"], "counts": v["vocab:x"]["counts"] + [1]}
    return v


def _duplicate_value(v):
    v["vocab:x"]["values"][3] = v["vocab:x"]["values"][1]
    return v


DAMAGE = {
    "a table of another shape": (lambda run: _edit_theta(run, lambda t: np.ones(7)), "theta has shape (7,)"),
    "theta of strings": (lambda run: _edit_theta(run, lambda t: np.array(["x"] * len(t))), "not numbers"),
    "theta with NaN": (lambda run: _edit_theta(run, lambda t: t * np.nan), "not probabilities"),
    "another spec": (lambda run: (run / "spec.em").write_text((ROOT / "specs" / "pcfg.em").read_text()),
                     "spec.em is not the spec this model was fitted with"),
    "vocab.json a list": (lambda run: (run / "vocab.json").write_text("[1, 2]"), "not an object of vocabularies"),
    "vocab.json cut short": (lambda run: _edit_json(run / "vocab.json", _cut_vocabulary), "the file was cut"),
    "vocab.json grown": (lambda run: _edit_json(run / "vocab.json", _add_a_value), "values were added to it"),
    "vocab.json duplicates": (lambda run: _edit_json(run / "vocab.json", _duplicate_value), "holds 'a' twice"),
    "settings of the wrong type": (lambda run: _edit_json(run / "run.json", lambda i: {**i, "settings": "batch"}),
                                   "run.json's 'settings' is a string"),
    "a setting of the wrong type": (
        lambda run: _edit_json(run / "run.json", lambda i: {**i, "settings": {**i["settings"], "iterations": "x"}}),
        "run.json's setting 'iterations' is 'x'"),
    "args a list": (lambda run: _edit_json(run / "run.json", lambda i: {**i, "args": [1]}), "'args' is a list"),
    "run.json a list": (lambda run: (run / "run.json").write_text("[]"), "run.json holds a list"),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_decode_refuses_a_damaged_run_folder_saying_what_is_wrong(tmp_path, data, capsys, damage):
    run = tmp_path / "run"
    assert fit(data, run) == 0
    make, expected = DAMAGE[damage]
    make(run)
    capsys.readouterr()
    assert main(["decode", str(run), str(data)]) == 1
    message = one_line_error(capsys)
    assert expected in message and str(run) in message and "--overwrite" in message


@pytest.mark.parametrize("field, escape, expected", [
    ("text", "\\ud800", "lone surrogate \\ud800"), ("label", "\\udc00", "lone surrogate \\udc00"),
    ("text", "\\u0000", "NUL character"),
])
def test_json_escapes_that_spell_no_text_are_refused(tmp_path, capsys, field, escape, expected):
    record = {"text": "hello world", "label": "a"}
    record[field] = record[field] + escape
    line = "{" + ", ".join(f'"{k}": "{v}"' for k, v in record.items()) + "}"
    path = tmp_path / "docs.jsonl"
    path.write_text(line + '\n{"text": "b c", "label": "b"}\n')
    code = main(["fit", str(ROOT / "specs" / "naive_bayes.em"), str(path), "--format", "jsonl", "--iterations", "2",
                 "--tokenize", "whitespace", "--quiet"])
    assert code == 1
    message = one_line_error(capsys)
    assert message.startswith(f"{path}:1: error: the \"{field}\" field contains a") and expected in message


@pytest.mark.parametrize("argv, expected", [
    (["fit", SPEC, "DATA", "--states", "2", "--out", ""], "emc fit: --out '' is empty"),
    (["fit", SPEC, "DATA", "--states", "2", "--log", " "], "emc fit: --log ' ' is empty"),
    (["fit", SPEC, "", "--states", "2"], "emc fit: DATA '' is empty"),
    (["decode", "", "DATA"], "emc decode: RUN '' is empty"),
    (["plot", "DATA", "-o", ""], "emc plot: --out '' is empty"),
])
def test_an_empty_name_is_refused(data, capsys, argv, expected):
    argv = [str(data) if a == "DATA" else a for a in argv]
    assert main(argv) == 1
    assert one_line_error(capsys).startswith(expected)


def test_compile_refuses_a_model_name_too_long_for_a_file(tmp_path, capsys):
    spec = tmp_path / "long.em"
    text = (ROOT / "specs" / "hmm.em").read_text()
    spec.write_text(text.replace("model hmm", "model " + "m" * 5000, 1))
    assert main(["compile", str(spec), "--out-dir", str(tmp_path / "gen")]) == 1
    assert "its name (5000 characters) is too long for a file name" in one_line_error(capsys)
    assert not (tmp_path / "gen").exists() or not list((tmp_path / "gen").iterdir())


def test_cr_only_line_endings_are_lines(tmp_path, capsys):
    from emc.io.readers import read_lines

    path = tmp_path / "mac.txt"
    path.write_bytes(b"a b c\rb c a\rc a b a\r")
    assert [line for _, line in read_lines(path)] == ["a b c", "b c a", "c a b a"]
    path.write_bytes(b"a b\r\nc d\r\n")
    assert [line for _, line in read_lines(path)] == ["a b", "c d"]


@pytest.mark.parametrize("fmt, text, options", [
    ("conllu", "1\tThe\t_\tDT\tDT\t_\t2\tdet\t_\t_\n2\tdog\t_\tNN\tNN\t_\t3\tnsubj\t_\t_\n"
               "3\tbarks\t_\tVB\tVB\t_\t2\troot\t_\t_\n\n", []),
    ("conll", "The DT 2\ndog NN 3\nbarks VB 2\n\n", ["--word-column", "2", "--head-column", "3"]),
])
def test_gold_heads_that_form_a_cycle_are_refused(tmp_path, capsys, fmt, text, options):
    path = tmp_path / f"cycle.{fmt}"
    path.write_text(text)
    assert main(["fit", str(ROOT / "specs" / "dmv.em"), str(path), "--format", fmt, *options, "--quiet"]) == 1
    assert one_line_error(capsys).startswith(f"{path}:2: error: the heads form a cycle (2 -> 3 -> 2)")


CONLL = "Confidence NN B-NP\nin IN B-PP\nthe DT B-NP\n\nHe PRP B-NP\nsaid VBD B-VP\nit PRP B-NP\n\n" \
        "We PRP B-NP\nwon VBD B-VP\n\n"
CONLLU = "# text = a b\n1\ta\t_\tX\tX\t_\t0\troot\t_\t_\n2\tb\t_\tX\tX\t_\t1\tdep\t_\t_\n\n"


@pytest.mark.parametrize("spec, text, expected", [
    ("hmm.em", CONLL, "looks like columns (one word per line with 3 columns, blank lines between sentences), not "
                      "one sentence per line: read it with --format conll"),
    ("dmv.em", CONLLU * 3, "looks like CoNLL-U (one word per line, 10 tab-separated fields), not one sentence per "
                           "line: read it with --format conllu"),
    ("dmv.em", "((S (NP (DT the) (NN dog)) (VP (VBZ barks))))\n" * 3, "looks like bracketed trees, one per line, "
                                                                       "not one sentence per line: read it with --format ptb"),
    ("pcfg.em", CONLL, "not one sentence per line: this structure reads tokens, ptb, not conll"),
    ("hmm.em", "a b ||| x y\nc ||| z\n", "looks like sentence pairs (source ||| target)"),
])
def test_a_file_of_another_format_read_as_sentences_names_its_format(tmp_path, capsys, spec, text, expected):
    path = tmp_path / "data.txt"
    path.write_text(text)
    assert main(["info", str(ROOT / "specs" / spec), str(path)]) == 1
    message = one_line_error(capsys)
    assert message.startswith(f"{path}: error: ") and expected in message
    assert main(["info", str(ROOT / "specs" / spec), str(path), "--format", "tokens"]) == 0  # as asked


def test_plain_text_decoded_as_conll_is_refused(tmp_path, data, capsys):
    run = tmp_path / "run"
    assert fit(data, run) == 0
    assert main(["decode", str(run), str(data), "--format", "conll"]) == 1
    assert "read as CoNLL it has no blank line between sentences and lines of 3 to 4 columns" in one_line_error(capsys)


def test_max_length_leaves_out_long_chain_sentences_and_says_so(tmp_path, capsys):
    path = tmp_path / "data.txt"
    path.write_text("a b c\nb c a b c a b c a b c d\nc a b a\n\n")
    assert main(["fit", SPEC, str(path), "--states", "2", "--iterations", "1", "--max-length", "5"]) == 0
    err = capsys.readouterr().err
    assert "2 examples from" in err and "(1 empty examples skipped; 1 longer than --max-length 5 left out)" in err


def test_max_length_is_refused_where_it_does_not_apply(tmp_path, capsys):
    path = tmp_path / "docs.txt"
    path.write_text("a b c\nb c a\n")
    assert main(["fit", str(ROOT / "specs" / "naive_bayes.em"), str(path), "--max-length", "5", "--quiet"]) == 1
    assert one_line_error(capsys).startswith("--max-length 5: the label structure does not leave out long examples")


def check_error(tmp_path, capsys, text: str) -> str:
    spec = tmp_path / "m.em"
    spec.write_text(text)
    assert main(["check", str(spec)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


HMM_HEAD = "model m\nobserved x : tokens\nlatent z : chain(x, states=3)\n"


def test_a_hint_never_points_at_the_name_itself(tmp_path, capsys):
    err = check_error(tmp_path, capsys, "model m\nobserved e : tokens, f : tokens\nlatent a : alignment(f from e)\n"
                                        "multinomial trans : P(a.target | e)\n")
    assert "did you mean 'e'" not in err
    assert "'e' is not an attribute of the alignment structure" in err and "'a.source', 'a.target'" in err


def test_a_second_latent_variable_is_reported_once(tmp_path, capsys):
    err = check_error(tmp_path, capsys, HMM_HEAD + "latent w : chain(x, states=3)\nmultinomial t : P(w | w.prev)\n"
                                                   "multinomial e : P(x | w)\n")
    assert err.count("error:") == 1 and "a model has exactly one latent variable" in err


@pytest.mark.parametrize("text, expected", [
    (HMM_HEAD + "multinomial t : P(z | z.prev2)\nmultinomial e : P(x | z)\n",
     "chain has it with order=2: write z : chain(..., order=2)"),
    ("model m\nobserved e : tokens, f : tokens\nlatent a : alignment(f from e)\n"
     "multinomial trans : P(a.target | a.source)\nmultinomial jump : P(a.jump)\n",
     "alignment has it with jump=yes: write a : alignment(..., jump=yes)"),
    (HMM_HEAD + "multinomial t : P(z | z.prev)\nmultinomial e : P(x | z.foo)\n",
     "a structure with other attributes can be written in the spec as rules (docs/writing-models.md, "
     "'Writing your own structure')"),
])
def test_a_missing_attribute_names_the_argument_or_the_way_to_have_it(tmp_path, capsys, text, expected):
    assert expected in check_error(tmp_path, capsys, text)


def test_the_log_says_what_the_objective_is_under_a_prior(tmp_path, data, capsys):
    assert main(["fit", SPEC, str(data), "--states", "2", "--iterations", "2", "--prior", "emit=sparse(80,0.05)",
                 "--smooth", "trans=0.1"]) == 0
    err = capsys.readouterr().err
    assert "emc: objective: the log-likelihood plus, up to a constant, trans (smooth add(0.1)): 0.1 * sum log p; " \
           "emit (prior sparse(80, 0.05)): 80 * sum exp(-p / 0.05), up to 80 an entry, so the objective can be " \
           "positive" in err
    assert "final objective" in err and "(of the parameters after the last step)" in err


def test_a_spec_beyond_a_sane_size_is_refused_before_parsing(tmp_path, capsys):
    import time

    spec = tmp_path / "big.em"
    text = (ROOT / "specs" / "hmm.em").read_text()
    spec.write_text(text + "".join(f"multinomial b{i} : P(x | z)\n" for i in range(40000)))
    started = time.perf_counter()
    assert main(["check", str(spec)]) == 1
    assert time.perf_counter() - started < 5
    assert "the spec is 1,189,2" in one_line_error(capsys)


def test_fit_says_up_front_what_an_iteration_costs_and_which_sentence_dominates(tmp_path, capsys, monkeypatch):
    import random

    import emc.runtime.cost as cost

    monkeypatch.setattr(cost, "REPORT_SECONDS", 0.0)  # a real report needs a minute's iteration
    rng = random.Random(1)
    lines = [" ".join(rng.choice("abcdefg") for _ in range(rng.randint(5, 12))) for _ in range(60)]
    lines.append(" ".join(rng.choice("abcdefg") for _ in range(200)))
    path = tmp_path / "data.txt"
    path.write_text("\n".join(lines) + "\n")
    assert main(["fit", str(ROOT / "specs" / "dmv.em"), str(path), "--iterations", "1"]) == 0
    err = capsys.readouterr().err
    assert "emc: one iteration will take about" in err and "O(n^3) per sentence" in err
    assert "the longest sentence alone is" in err and "--max-length 12 leaves it out" in err


def test_a_short_iteration_skips_the_cost_measurement(tmp_path, data, monkeypatch):
    """One call's bound, far under a reported minute, spares the repeated timing (0.12-0.19 CPU s of
    every fit); a bound near it does not."""
    import emc.runtime.cost as cost

    measured = []
    real = cost.predicted_iteration
    monkeypatch.setattr(cost, "predicted_iteration", lambda *args: measured.append(1) or real(*args))
    assert fit(data, tmp_path / "run") == 0
    assert measured == []
    monkeypatch.setattr(cost, "REPORT_SECONDS", 1e-9)
    assert fit(data, tmp_path / "run2") == 0
    assert measured == [1]


def test_the_warm_up_runs_the_shortest_example_not_the_first(tmp_path, monkeypatch):
    """A 3,000-token first sentence under the DMV kept `emc info` and `emc fit` in their warm-up
    (compiling the E-step on example 0) for hours, before the cost could be said."""
    from emc.runtime.executor import LocalExecutor
    from emc.runtime.params import random_init
    from helpers import problem_from_lines

    problem = problem_from_lines(tmp_path, (ROOT / "specs" / "dmv.em").read_text(),
                                 ["a b " * 20, "a b c d", "c", "d c b"])
    executor = LocalExecutor(problem)
    ran = []
    monkeypatch.setattr(executor, "estep", lambda params, examples, *rest: ran.append(list(examples)))
    executor.warm_up(random_init(problem.layout, problem.fixed_theta, np.random.default_rng(0), 1.0))
    assert ran == [[2]]


def test_the_length_power_is_read_from_the_structures_cost_model():
    from emc.runtime.cost import length_power

    assert length_power("O(n^3 K^2 + n^2 K^3) per sentence of n tokens, K = 10 labels") == 3
    assert length_power("O(n K^2) per sentence of n tokens, K = 45 states") == 1
    assert length_power("O(m l) per pair") is None


def test_a_long_iteration_is_said_in_minutes_hours_or_days():
    from emc.runtime.cost import duration_text

    assert [duration_text(s) for s in (0.0123, 45, 1360, 7300, 1.5e6)] == ["0.012 s", "45 s", "23 minutes",
                                                                          "2 hours", "17 days"]


def test_info_with_data_says_what_an_iteration_costs(tmp_path, data, capsys):
    assert main(["info", SPEC, str(data), "--states", "2"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("  one iteration's E-step: about ") and "s on this machine (O(n K^2) per sentence" in last


@pytest.mark.parametrize("setting", [["--seed", "-1"], ["--examples", "-5"], ["--iterations", "-1"]])
def test_demo_refuses_counts_it_cannot_run_with(tmp_path, capsys, setting):
    assert main(["demo", *setting, "--out", str(tmp_path / "demo")]) == 1
    assert one_line_error(capsys).startswith(f"emc demo {setting[0]} {setting[1]}: give a whole number")
    assert not (tmp_path / "demo").exists()


@pytest.mark.parametrize("setting", [["--workers", "0"], ["--workers", "-1"], ["--checkpoint-every", "nan"],
                                     ["--checkpoint-every", "-1"]])
def test_fit_refuses_workers_and_checkpoint_intervals_that_mean_nothing(tmp_path, data, capsys, setting):
    assert fit(data, tmp_path / "run", *setting) == 1
    assert one_line_error(capsys).startswith(f"{setting[0]} {setting[1]}: give ")


def test_names_are_letters_of_any_script(tmp_path, capsys):
    """A name is what Python takes for an identifier, normalised as Python does (NFKC): an e with a
    combining acute is the é of `été`."""
    spec = tmp_path / "m.em"
    spec.write_text("model modèle\nobserved été : tokens\nlatent 状態 : chain(e\u0301te\u0301, states=3)\n"
                    "multinomial слово : P(été | 状態)\nmultinomial हिन्दी : P(状態 | 状態.prev)\n", encoding="utf-8")
    assert main(["check", str(spec)]) == 0
    out = capsys.readouterr().out
    assert "model modèle, 状態 : chain(" in out and "слово" in out and "हिन्दी" in out
    # the table's columns line up on a terminal, where 状 and 態 take two columns and a mark none
    rows = [line for line in out.splitlines() if " slot, " in line]
    assert len({display_width(row[:row.rindex(" ", 0, row.index(" slot, "))]) for row in rows}) == 1, out


def test_an_output_that_cannot_write_a_name_is_named(tmp_path, capsys, monkeypatch):
    """A terminal or pipe in ASCII (PYTHONIOENCODING=ascii, a C locale of old) cannot print 'è':
    a message saying how to fix it, never a traceback."""
    import io
    spec = tmp_path / "m.em"
    spec.write_text("model modèle\n" + HMM_HEAD.split("\n", 1)[1] + "multinomial e : P(x | z)\n", encoding="utf-8")
    monkeypatch.setattr("sys.stdout", io.TextIOWrapper(io.BytesIO(), encoding="ascii"))
    assert main(["check", str(spec)]) == 1
    assert one_line_error(capsys) == ("emc check: the output's encoding (ascii) cannot write 'è': "
                                      "set PYTHONIOENCODING=utf-8 (or a UTF-8 locale)")


def test_a_character_no_name_holds_is_refused_saying_what_a_name_is(tmp_path, capsys):
    err = check_error(tmp_path, capsys, "model m\nobserved 状態x² : tokens\n")
    assert "m.em:2:13: error: unexpected character '²'" in err  # columns count characters
    assert "hint: a name is letters (of any script), marks, digits and _, and '²' (SUPERSCRIPT TWO) is none" in err
    err = check_error(tmp_path, capsys, HMM_HEAD + "multinomial e : P(x → z)\n")
    assert "m.em:4:21: error: unexpected character '→'" in err and "RIGHTWARDS ARROW" in err
    err = check_error(tmp_path, capsys, "model m\nobserved\u00a0x : tokens\n")
    assert "m.em:2:9: error: unexpected character '\\xa0'" in err and "NO-BREAK SPACE" in err
    for start in ("\u0663", "\u0301"):  # an Arabic-Indic digit, a combining acute: inside a name only
        err = check_error(tmp_path, capsys, f"model {start}m\n")
        assert "m.em:1:7: error: unexpected" in err and "hint: a name starts with a letter (of any script) or _" in err


def test_a_byte_order_mark_before_the_spec_is_no_character_of_it(tmp_path, capsys):
    spec = tmp_path / "m.em"
    spec.write_bytes("\ufeff".encode() + (HMM_HEAD + "multinomial e : P(x | z)\n").encode())
    assert main(["check", str(spec)]) == 0


def test_a_caret_stands_under_its_character_after_wide_and_combining_ones(tmp_path, capsys):
    err = check_error(tmp_path, capsys, "model m\nobserved 状態 : tokens\nlatent z : chain(状態, states=3)\n"
                                        "multinomial e\u0301 : P(状態 | z) smooth foo(1)\n")
    source, caret = err.splitlines()[1:3]
    assert err.startswith(f"{tmp_path / 'm.em'}:4:35: error: unknown smooth 'foo'")
    assert caret == "    " + " " * 35 + "^^^"  # é one column wide, 状 and 態 two each
    assert source == "    multinomial e\u0301 : P(状態 | z) smooth foo(1)"
