"""Faults found by attacking the CLI as a user could: a finished model replaced by a re-run, two
fits on one folder, damaged run folders, tables too big for memory, hostile numbers and bytes.
Each gets a clear message naming where and why, never a traceback and never lost work."""
from __future__ import annotations

import json

import numpy as np
import pytest

from emc.cli import main
from emc.runtime.params import ParamLayout
from emc.runtime.problem import Model, check_fits_in_memory
from emc.runtime.run_folder import RunFolderLock
from emc.spec.errors import EmcError

from conftest import ROOT

SPEC = str(ROOT / "specs" / "hmm.em")


@pytest.fixture
def data(tmp_path):
    path = tmp_path / "data.txt"
    path.write_text("a b c\nb c a\nc a b a\n")
    return path


def fit(data, out, *extra) -> int:
    return main(["fit", SPEC, str(data), "--states", "2", "--iterations", "3", "--out", str(out), *extra])


def test_a_saved_model_is_not_replaced_without_overwrite(tmp_path, data, capsys):
    run = tmp_path / "run"
    assert fit(data, run) == 0
    before = (run / "params.npz").read_bytes()
    assert fit(data, run, "--iterations", "1") == 1
    err = capsys.readouterr().err
    assert f"--out {run}: holds a saved model" in err and "--overwrite" in err and "Traceback" not in err
    assert (run / "params.npz").read_bytes() == before
    assert fit(data, run, "--iterations", "1", "--overwrite") == 0
    assert len((run / "log.jsonl").read_text().splitlines()) == 1


def test_a_folder_being_written_is_locked_against_a_second_fit(tmp_path, data, capsys):
    run = tmp_path / "run"
    with RunFolderLock(run):  # as a first fit holds it while it runs
        assert fit(data, run) == 1
        err = capsys.readouterr().err
        assert "another emc fit" in err and "is writing this folder" in err
        assert not (run / "params.npz").exists()
    assert fit(data, run) == 0  # released with its holder


def test_out_that_is_a_file(tmp_path, data, capsys):
    path = tmp_path / "model.txt"
    path.write_text("notes")
    assert fit(data, path) == 1
    err = capsys.readouterr().err
    assert "is a file, not a folder" in err and "Traceback" not in err
    assert path.read_text() == "notes"


@pytest.mark.parametrize("name", ["params.npz", "run.json", "vocab.json"])
def test_damaged_run_file_is_named_at_decode(tmp_path, data, capsys, name):
    run = tmp_path / "run"
    assert fit(data, run) == 0
    damaged = run / name
    damaged.write_bytes(damaged.read_bytes()[: len(damaged.read_bytes()) // 2])
    capsys.readouterr()
    assert main(["decode", str(run), str(data)]) == 1
    err = capsys.readouterr().err
    assert f"{damaged}: error: damaged or unreadable" in err and "--overwrite" in err
    assert "Traceback" not in err


def test_damaged_checkpoint_is_named_at_resume(tmp_path, data, capsys):
    run = tmp_path / "run"
    assert fit(data, run) == 0
    checkpoint = run / "checkpoint.npz"
    checkpoint.write_bytes(checkpoint.read_bytes()[:100])
    capsys.readouterr()
    assert main(["fit", "--resume", str(run)]) == 1
    err = capsys.readouterr().err
    assert f"{checkpoint}: error: damaged or unreadable" in err and "cannot be resumed" in err


def test_tables_too_big_for_memory_are_refused_before_allocation(tmp_path, data, capsys):
    spec = tmp_path / "big.em"
    spec.write_text((ROOT / "specs" / "hmm.em").read_text().replace("states=45", "states=100000"))
    assert main(["fit", str(spec), str(data), "--out", str(tmp_path / "run")]) == 1
    err = capsys.readouterr().err
    assert "would need about" in err and "GiB" in err and "trans: 100,001 rows x 100,001 outcomes" in err
    assert "Traceback" not in err and "ArrayMemoryError" not in err


def test_memory_estimate_against_a_given_budget():
    model = Model.from_text((ROOT / "specs" / "hmm.em").read_text(), "hmm.em", {"states": 10})
    sizes = {"vocab:x": 100, **model.data.space_sizes(model.checked, model.checked.binding.args)}
    layout = ParamLayout.build(model.checked, sizes, {})
    need = layout.size * 96
    check_fits_in_memory(layout, available=need)  # just fits
    with pytest.raises(EmcError, match="emit: 10 rows x 100 outcomes"):
        check_fits_in_memory(layout, available=need - 1)


@pytest.mark.parametrize("flag,value,message", [
    ("--smooth", "emit=1e999", "--smooth emit=1e999: the amount must be a finite number >= 0"),
    ("--smooth", "emit=nan", "--smooth emit=nan: the amount must be a finite number >= 0"),
    ("--prior", "emit=dirichlet(inf)", "dirichlet takes 1 finite positive number(s)"),
    ("--set", "states=inf", "inf is not a finite number"),
])
def test_non_finite_numbers_on_the_command_line(tmp_path, data, capsys, flag, value, message):
    assert main(["fit", SPEC, str(data), "--iterations", "2", "--out", str(tmp_path / "run"), flag, value]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_non_finite_number_in_a_spec_fails_check_with_position(tmp_path, capsys):
    spec = tmp_path / "inf.em"
    spec.write_text((ROOT / "specs" / "hmm.em").read_text().replace(
        "multinomial emit  : P(x | z)", "multinomial emit  : P(x | z) smooth add(1e999)"))
    assert main(["check", str(spec)]) == 1
    err = capsys.readouterr().err
    assert f"{spec}:6:" in err and "inf is not a finite number" in err


def test_nul_bytes_in_a_corpus_are_rejected_with_line_and_column(tmp_path, capsys):
    data = tmp_path / "data.txt"
    data.write_bytes(b"a b c\nb c\x00 a\n")
    assert fit(data, tmp_path / "run") == 1
    err = capsys.readouterr().err
    assert f"{data}:2: error: contains a NUL byte at column 4 (1 in the file)" in err


def test_semi_supervised_starts_from_labeled_examples_and_scores_the_others(tmp_path, capsys):
    """Two clear classes; the labeled examples name them. From the default start the fit says it
    starts from them, and metrics never score the labeled examples (all 100% by construction)."""
    docs = tmp_path / "docs.jsonl"
    rng = np.random.default_rng(0)
    lines = []
    for i in range(40):
        cls = i % 2
        words = rng.choice(["a", "b", "c"] if cls == 0 else ["x", "y", "z"], size=6)
        record = {"text": " ".join(words), "gold": f"c{cls}"}
        if i < 4:
            record["label"] = f"c{cls}"
        lines.append(json.dumps(record))
    docs.write_text("\n".join(lines) + "\n")
    spec = str(ROOT / "specs" / "naive_bayes.em")
    run = tmp_path / "run"
    code = main(["fit", spec, str(docs), "--format", "jsonl", "--supervised-field", "label", "--gold-field", "gold",
                 "--iterations", "5", "--out", str(run)])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "start: labeled (the M-step of the 4 labeled examples)" in err
    assert "metrics score only the 36 examples without a given structure, not the 4 labeled ones" in err
    info = json.loads((run / "run.json").read_text())
    assert info["metrics"]["accuracy"] == 1.0  # the class names kept their meaning on the unlabeled 36
    # only labeled examples carry gold: nothing else to score, and the fit says so
    only = tmp_path / "only.jsonl"
    only.write_text("\n".join(json.dumps({k: v for k, v in json.loads(x).items() if k != "gold" or "label" in json.loads(x)})
                              for x in lines) + "\n")
    code = main(["fit", spec, str(only), "--format", "jsonl", "--supervised-field", "label", "--gold-field", "gold",
                 "--iterations", "2", "--out", str(tmp_path / "run2")])
    err = capsys.readouterr().err
    assert code == 0, err
    assert json.loads((tmp_path / "run2" / "run.json").read_text())["metrics"] == {}
    assert "100.00%" not in err


def test_init_random_overrides_the_labeled_default(tmp_path, capsys):
    docs = tmp_path / "docs.jsonl"
    docs.write_text('{"text": "a b", "label": "p"}\n{"text": "x y"}\n')
    code = main(["fit", str(ROOT / "specs" / "naive_bayes.em"), str(docs), "--format", "jsonl",
                 "--supervised-field", "label", "--init", "random", "--iterations", "2", "--out", str(tmp_path / "r")])
    assert code == 0
    assert "start: random" in capsys.readouterr().err
