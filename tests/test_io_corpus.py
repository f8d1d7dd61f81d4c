"""TokenFieldBuilder, the one reader-side accumulator of token ids: documents and both sides of a
bitext are built by it, so their fields have the same layout (int32 ids, int64 offsets, empty
examples kept)."""
from __future__ import annotations

import numpy as np

from emc.io.bitext import read_bitext, read_parallel
from emc.io.corpus import TokenField, TokenFieldBuilder
from emc.io.documents import TextOptions, read_documents
from emc.io.vocab import Vocabulary


def test_builder_encodes_as_it_reads_and_keeps_empty_examples():
    vocab = Vocabulary()
    builder = TokenFieldBuilder(vocab)
    for tokens in (["a", "b", "a"], [], ["c"], []):
        builder.add(tokens)
    assert len(builder) == 4
    field = builder.field()
    assert field.vocab is vocab and field.ids.dtype == np.int32 and field.offsets.dtype == np.int64
    assert field.offsets.tolist() == [0, 3, 3, 4, 4]
    assert [field.tokens(i) for i in range(4)] == [["a", "b", "a"], [], ["c"], []]
    expected = TokenField.from_lists([vocab.encode(t) for t in (["a", "b", "a"], [], ["c"], [])], vocab)
    assert field.ids.tolist() == expected.ids.tolist() and field.offsets.tolist() == expected.offsets.tolist()
    builder.add(["d"])  # the field is a copy: building on does not change it
    assert field.ids.tolist() == [vocab.lookup(w) for w in "abac"]
    assert TokenFieldBuilder(Vocabulary()).field().offsets.tolist() == [0]


def test_documents_and_bitext_sides_are_built_alike(tmp_path):
    text = tmp_path / "docs.txt"
    text.write_text("The cat, the dog\n\nA cat!\n")
    docs = read_documents(str(text), "text", TextOptions())
    assert docs.words.values[1:] == ["the", "cat", "dog", "a"]
    assert docs.ids.dtype == np.int32 and docs.offsets.dtype == np.int64
    assert docs.offsets.tolist() == [0, 4, 4, 6] and docs.lines.tolist() == [1, 2, 3]
    assert [[docs.words.values[i] for i in docs.ids[a:b]] for a, b in zip(docs.offsets, docs.offsets[1:])] == \
        [["the", "cat", "the", "dog"], [], ["a", "cat"]]
    bitext = tmp_path / "pairs.txt"
    bitext.write_text("le chat ||| the cat\n\nun ||| a cat\n")
    source, target, lines = read_bitext(str(bitext), Vocabulary(), Vocabulary())
    assert source.offsets.tolist() == [0, 2, 2, 3] and target.offsets.tolist() == [0, 2, 2, 4]
    assert source.ids.dtype == target.ids.dtype == np.int32 and lines.tolist() == [1, 2, 3]
    assert [target.tokens(i) for i in range(3)] == [["the", "cat"], [], ["a", "cat"]]
    (tmp_path / "f").write_text("le chat\n\nun\n")
    (tmp_path / "e").write_text("the cat\n\na cat\n")
    source2, target2, _ = read_parallel(str(tmp_path / "f"), str(tmp_path / "e"), Vocabulary(), Vocabulary())
    assert source2.ids.tolist() == source.ids.tolist() and target2.offsets.tolist() == target.offsets.tolist()
