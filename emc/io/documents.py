"""Documents: one text per line, or JSON lines with a text and optional labels, tokenised into
word ids.

Documented choices (also in `emc fit --help`):
- `text` format: one document per line. `jsonl` format: one JSON object per line with a string
  field `text` (--text-field) and, optionally, a label (--gold-field, default `label`), read as
  the gold class for evaluation; with --supervised-field NAME, the documents carrying field NAME
  are labeled examples for semi-supervised EM. A label is a string or an integer, trimmed,
  non-empty and on one line. A blank line is an empty document. Either file may be gzipped.
- Tokenisation (--tokenize): `letters` (the default) lowercases the text and keeps the runs of
  letters (Unicode letters; digits, punctuation and `_` separate words), so "Don't panic, 42!"
  gives `don t panic`; `whitespace` keeps the whitespace-separated tokens as written.
- --strip-headers drops everything up to the first blank line of each text (the From:/Subject:
  header block of mail and news; a text without a blank line is all header). It needs `jsonl`:
  a `text` document is one line, which has no blank line.
- The frequency cut-off of Liang & Klein (2009) is computed on the training data, all its files
  together: --stop-words N removes the N most frequent words (ties: the word seen first),
  --min-count M the words seen fewer than M times. Removed words are left out of the documents.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from emc.io.corpus import TokenFieldBuilder
from emc.io.readers import read_lines
from emc.io.vocab import Vocabulary
from emc.spec.errors import DataError, EmcError

TOKENIZERS = ("letters", "whitespace")
_LETTER_RUNS = re.compile(r"[^\W\d_]+")
_BLANK_LINE = re.compile(r"\n[ \t\r]*\n")


@dataclass(frozen=True)
class TextOptions:
    """How documents are read; the fields are the CLI options of the same names."""

    tokenize: str = "letters"
    strip_headers: bool = False
    stop_words: int = 0
    min_count: int = 1
    text_field: str = "text"
    gold_field: str = "label"
    supervised_field: str | None = None

    @staticmethod
    def from_options(options: dict[str, Any]) -> "TextOptions":
        """The options given (None or absent: the default)."""
        given = {f.name: options[f.name] for f in fields(TextOptions) if options.get(f.name) is not None}
        opts = TextOptions(**given)
        if opts.tokenize not in TOKENIZERS:
            raise EmcError(f"--tokenize {opts.tokenize}: choose {' or '.join(TOKENIZERS)}")
        if opts.stop_words < 0 or opts.min_count < 1:
            raise EmcError("--stop-words must be >= 0 and --min-count >= 1")
        if opts.strip_headers and (options.get("format") or "text") == "text":
            raise EmcError("--strip-headers needs --format jsonl: it drops each text up to its first blank line, and "
                           "a document of --format text is one line, so every document would be empty (a run "
                           "fitted with --strip-headers decodes JSON lines too)")
        return opts


def tokenize(text: str, mode: str) -> list[str]:
    if mode == "letters":
        return _LETTER_RUNS.findall(text.lower())
    return text.split()


def strip_headers(text: str) -> str:
    """The text after its first blank line (empty when it has none)."""
    found = _BLANK_LINE.search(text)
    return text[found.end():] if found else ""


@dataclass
class Documents:
    """Documents as word ids into `words` (a vocabulary of every word of the file, in first-seen
    order), with the line each came from and its labels (None where a document has none)."""

    words: Vocabulary
    ids: np.ndarray  # int32, all documents' tokens
    offsets: np.ndarray  # int64, document i is ids[offsets[i]:offsets[i + 1]]
    lines: np.ndarray
    gold: list[str | None]
    supervised: list[str | None]


def read_documents(path: str, fmt: str, opts: TextOptions) -> Documents:
    """Every document of a `text` or `jsonl` file, tokenised."""
    tokens = TokenFieldBuilder(Vocabulary())
    lines, gold, supervised = [], [], []
    for number, line in read_lines(path):
        if fmt == "jsonl":
            text, label, given = _json_document(path, number, line, opts)
        else:
            text, label, given = line, None, None
        if opts.strip_headers:
            text = strip_headers(text)
        tokens.add(tokenize(text, opts.tokenize))
        lines.append(number)
        gold.append(label)
        supervised.append(given)
    field = tokens.field()
    return Documents(field.vocab, field.ids, field.offsets, np.array(lines, np.int64), gold, supervised)


def _json_document(path: str, number: int, line: str, opts: TextOptions) -> tuple[str, str | None, str | None]:
    if not line.strip():
        return "", None, None
    try:
        record = json.loads(line)
    except json.JSONDecodeError as err:
        raise DataError(path, number, f"not valid JSON: {err.msg} at column {err.colno}") from None
    if not isinstance(record, dict):
        raise DataError(path, number, f"a JSON line must be an object with a \"{opts.text_field}\" string, "
                                      f"not a {type(record).__name__}")
    text = record.get(opts.text_field)
    if not isinstance(text, str):
        what = "has no" if text is None else "has a non-string"
        raise DataError(path, number, f"{what} \"{opts.text_field}\" field (each line is a JSON object with a "
                                      f"\"{opts.text_field}\" string; --text-field names another field)")
    _require_text(path, number, opts.text_field, text)
    return text, _label(path, number, record, opts.gold_field), _label(path, number, record, opts.supervised_field)


def _require_text(path: str, number: int, name: str, text: str) -> None:
    """JSON's escapes can spell what no text holds: \\u0000 (a NUL, which the file check cannot see
    behind its escape) and half of a UTF-16 pair (\\ud800), which no UTF-8 output can write."""
    if "\x00" in text:
        raise DataError(path, number, f"the \"{name}\" field contains a NUL character (\\u0000): the data is "
                                      f"binary or damaged, not text")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        raise DataError(path, number, f"the \"{name}\" field contains a lone surrogate \\u{ord(text[err.start]):04x} "
                                      f"(half of a UTF-16 pair, not a character): fix the JSON's escapes") from None


def _label(path: str, number: int, record: dict, name: str | None) -> str | None:
    if name is None or record.get(name) is None:
        return None
    value = record[name]
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise DataError(path, number, f"the \"{name}\" field must be a string or an integer, not {json.dumps(value)}")
    label = str(value).strip()
    _require_text(path, number, name, label)
    if not label or "\n" in label or "\r" in label:
        raise DataError(path, number, f"the \"{name}\" field must be a non-empty label on one line, not {json.dumps(value)}")
    return label


def frequency_cutoff(counts: np.ndarray, stop_words: int, min_count: int) -> np.ndarray:
    """Which words survive: not among the `stop_words` most frequent (ties: the lower id, i.e.
    the word seen first) and seen at least `min_count` times."""
    keep = counts >= max(min_count, 1)
    if stop_words > 0:
        keep[np.argsort(-counts, kind="stable")[:stop_words]] = False
    return keep
