"""Reading text corpora: gzip transparently, UTF-8 strictly, every problem named by file and line.

Documented choices (also in `emc fit --help`):
- A file starting with the gzip magic bytes is read through gzip, whatever its name.
- Text must be UTF-8; a byte that is not is an error naming the line and the byte.
- Tabs and runs of spaces separate tokens; a trailing carriage return is dropped (CRLF endings), and
  in a file without a line feed each carriage return ends a line (CR endings of old Mac files).
- Empty lines (or lines of only whitespace) are kept as empty examples: fitting skips them and
  reports how many; decoding prints an empty line for them, so output lines match input lines.
"""
from __future__ import annotations

import contextvars
import gzip
import hashlib
import os
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from emc.spec.errors import DataError

GZIP_MAGIC = b"\x1f\x8b"


class Lines(list):
    """Examples held in memory (the Python API), read like a file called `name`."""

    def __init__(self, lines, name: str = "<memory>"):
        super().__init__(part.rstrip("\r") for line in lines for part in str(line).split("\n"))
        self.name = name

    def __str__(self) -> str:
        return self.name

    def __fspath__(self) -> str:
        return self.name


# While a fit reads its data (`recording_reads`), every file read is noted here: its identity goes
# into the checkpoint, so `emc fit --resume` can tell that a data file changed since the fit began.
_READS: contextvars.ContextVar[list[dict[str, Any]] | None] = contextvars.ContextVar("emc_reads", default=None)


@contextmanager
def recording_reads() -> Iterator[list[dict[str, Any]]]:
    """The identity of every file read inside the block (see `file_identity`), in order, once each."""
    reads: list[dict[str, Any]] = []
    token = _READS.set(reads)
    try:
        yield reads
    finally:
        _READS.reset(token)


def file_identity(path: Path, raw: bytes) -> dict[str, Any]:
    """What identifies a data file: its path, size, modification time and a hash of the bytes read."""
    stat = os.stat(path)
    return {"path": str(path), "size": stat.st_size, "mtime": stat.st_mtime,
            "sha256": hashlib.sha256(raw).hexdigest()}


def _note_read(path: Path, raw: bytes) -> None:
    reads = _READS.get()
    if reads is not None and all(r["path"] != str(path) for r in reads):
        reads.append(file_identity(path, raw))


def read_bytes(path: str | Path) -> bytes:
    path = Path(path)
    try:
        raw = path.read_bytes()
        _note_read(path, raw)
    except FileNotFoundError:
        raise DataError(str(path), None, "no such file") from None
    except IsADirectoryError:
        raise DataError(str(path), None, "is a directory, not a file") from None
    except OSError as err:
        raise DataError(str(path), None, f"cannot read ({err.strerror})") from None
    if raw[:2] == GZIP_MAGIC:
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as err:
            raise DataError(str(path), None, f"looks like gzip but cannot be decompressed ({err})") from None
    return raw


def read_lines(path: str | Path | Lines) -> Iterator[tuple[int, str]]:
    """(1-based line number, text without the newline) for every line of a text file (or of
    in-memory Lines)."""
    if isinstance(path, Lines):
        yield from enumerate(path, start=1)
        return
    raw = read_bytes(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        column = err.start - (raw.rfind(b"\n", 0, err.start) + 1) + 1
        raise DataError(str(path), line, f"not valid UTF-8: byte 0x{raw[err.start]:02x} at column {column} "
                                         f"(convert the file, e.g. iconv -f latin1 -t utf-8)") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    nul = text.find("\x00")
    if nul >= 0:
        # a NUL never belongs to text: it means a binary or damaged file, and would silently become part of a token
        line = text.count("\n", 0, nul) + 1
        column = nul - (text.rfind("\n", 0, nul) + 1) + 1
        count = text.count("\x00")
        raise DataError(str(path), line, f"contains a NUL byte at column {column} ({count} in the file): "
                                         f"the file is binary or damaged, not text")
    if "\r" in text and "\n" not in text:
        text = text.replace("\r", "\n")  # classic Mac OS line endings: a CR alone ends each line
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines, start=1):
        yield number, line.rstrip("\r")


def require_examples(path: str | Path, count: int, what: str = "example") -> None:
    if count == 0:
        raise DataError(str(path), None, f"contains no {what}s (the file is empty or every line is blank)")
