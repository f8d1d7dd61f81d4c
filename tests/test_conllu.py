"""CoNLL-U: the reader (comments, multiword tokens, empty nodes, file:line errors), the chain on it
(FORM as words, UPOS or XPOS as gold) and `emc decode --output conllu` writing the input back."""
from __future__ import annotations

import pytest

from conftest import ROOT
from emc.cli import main
from emc.io.conllu import read_conllu
from emc.spec.errors import DataError

TINY = ROOT / "tests" / "data" / "tiny.conllu"
HMM = str(ROOT / "specs" / "hmm.em")


def test_words_only_multiword_tokens_and_empty_nodes_kept_out():
    sentences = read_conllu(TINY)
    assert [s.column("form") for s in sentences] == [
        ["The", "cat", "sleeps", "."], ["Vamos", "nos", "a", "el", "mar"],
        ["Sue", "likes", "coffee", "and", "Paul", "tea"], ["Dogs", "bark"]]
    assert sentences[0].column("upos") == ["DET", "NOUN", "VERB", "PUNCT"]
    assert sentences[1].column("xpos")[0] == "VMIP1P0"
    assert [s.heads() for s in sentences] == [[2, 3, 0, 3], [0, 1, 5, 5, 1], [2, 0, 2, 5, 2, 5], [2, 0]]
    assert [s.line for s in sentences] == [1, 8, 18, 27]
    assert sentences[2].word_lines == [19, 20, 22, 23, 24, 25]


def test_written_back_unchanged_but_for_the_replaced_column():
    sentences = read_conllu(TINY)
    text = TINY.read_text()
    assert "".join(s.with_column({}) + "\n" for s in sentences) == text  # as emc decode prints them
    block = sentences[1].with_column({"head": ["9", "8", "7", "6", "5"]}).splitlines()
    assert block[2] == "1-2\tVámonos\t_\t_\t_\t_\t_\t_\t_\t_"
    assert block[3].split("\t")[6] == "9" and block[3].split("\t")[:6] == ["1", "Vamos", "ir", "VERB", "VMIP1P0", "_"]


@pytest.mark.parametrize("lines, line, message", [
    (["1\tA\ta\tX\tX\t_\t0\troot\t_"], 1, "10 tab-separated fields, this one has 9"),
    (["1 A a X X _ 0 root _ _"], 1, "tabs, not spaces"),
    (["1\tA\ta\tX\tX\t_\t0\troot\t_\t_", "3\tB\tb\tX\tX\t_\t1\tdep\t_\t_"], 2, "word ID 3 out of sequence"),
    (["1\tA\ta\tX\tX\t_\t0\troot\t_\t_", "2\tB\tb\tX\tX\t_\t7\tdep\t_\t_"], 2, "HEAD '7'"),
    (["1\tA\ta\tX\tX\t_\t1\troot\t_\t_"], 1, "its own head"),
    (["1\tA\ta\tX\tX\t_\t0\troot\t_\t_", "# late", "2\tB\tb\tX\tX\t_\t1\tdep\t_\t_"], 2, "comment line inside"),
    (["2-3\tAB\t_\t_\t_\t_\t_\t_\t_\t_"], 1, "multiword token '2-3'"),
    (["x\tA\ta\tX\tX\t_\t0\troot\t_\t_"], 1, "the ID 'x'"),
    (["# only a comment", "", "1\tA\ta\tX\tX\t_\t0\troot\t_\t_"], 1, "no word lines"),
])
def test_malformed_lines_are_named_by_file_and_line(tmp_path, lines, line, message):
    path = tmp_path / "bad.conllu"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError) as err:
        read_conllu(path)
    assert f"bad.conllu:{line}: error:" in str(err.value) and message in str(err.value)


def test_chain_fits_on_conllu_and_writes_it_back(tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["fit", HMM, str(TINY), "--format", "conllu", "--states", "3", "--iterations", "2",
                 "--seed", "1", "--out", str(run)]) == 0
    assert "many_to_one" in capsys.readouterr().err
    assert main(["decode", str(run), str(TINY), "--format", "conllu", "--output", "conllu"]) == 0
    out = tmp_path / "out.conllu"
    out.write_text(capsys.readouterr().out)
    original, decoded = read_conllu(TINY), read_conllu(out)
    comments = lambda s: [r for r in s.rows if r.startswith("#")]  # noqa: E731
    assert [comments(s) for s in decoded] == [comments(s) for s in original] and len(decoded) == 4
    for a, b in zip(original, decoded):
        assert a.column("form") == b.column("form") and a.heads() == b.heads()
        assert all(tag in ("0", "1", "2") for tag in b.column("upos"))
        assert len(a.rows) == len(b.rows)  # multiword tokens and empty nodes kept


def test_xpos_as_gold_and_output_needs_conllu_input(tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["fit", HMM, str(TINY), "--format", "conllu", "--gold-column", "xpos", "--states", "2",
                 "--iterations", "1", "--out", str(run)]) == 0
    capsys.readouterr()
    assert main(["decode", str(run), str(TINY), "--format", "conllu", "--gold-column", "xpos",
                 "--output", "conllu"]) == 0
    written = capsys.readouterr().out.splitlines()
    assert written[2].split("\t")[3] == "DET" and written[2].split("\t")[4] in ("0", "1")  # XPOS replaced
    plain = tmp_path / "plain.txt"
    plain.write_text("a b\n")
    assert main(["decode", str(run), str(plain), "--output", "conllu"]) != 0
    assert "--output conllu writes the input back" in capsys.readouterr().err
    assert main(["fit", HMM, str(TINY), "--format", "conllu", "--gold-column", "lemma", "--states", "2"]) != 0
    assert "upos or xpos" in capsys.readouterr().err
