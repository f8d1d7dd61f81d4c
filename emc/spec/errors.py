"""Errors in specs and data: where (file:line:column), what, and a hint when one is obvious."""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Iterable

from emc.spec.ir import Pos
from emc.spec.width import blanks_under, display_width


class EmcError(Exception):
    """Any error meant for the user: the CLI prints it without a traceback and exits non-zero."""


@dataclass
class Diagnostic:
    path: str
    pos: Pos
    message: str
    hint: str | None = None
    source_line: str | None = None

    def format(self) -> str:
        head = f"{self.path}:{self.pos.line}:{self.pos.column}: error: {self.message}"
        lines = [head]
        if self.source_line is not None and self.pos.line > 0:
            source = self.source_line.rstrip("\r\n")
            lines.append("    " + source)
            start = max(self.pos.column, 1)  # columns count characters, as the parser's do
            end = self.pos.end_column if self.pos.end_line == self.pos.line and self.pos.end_column > start else start + 1
            carets = "^" * max(display_width(source[start - 1:end - 1]), 1)
            lines.append("    " + blanks_under(source[:start - 1]) + carets)
        if self.hint:
            lines.append(f"hint: {self.hint}")
        return "\n".join(lines)


class SpecError(EmcError):
    """One or more problems in a spec; `str()` is the full, printable report."""

    def __init__(self, diagnostics: list[Diagnostic]):
        self.diagnostics = sorted(diagnostics, key=lambda d: (d.pos.line, d.pos.column))
        super().__init__("\n".join(d.format() for d in self.diagnostics))

    @property
    def first(self) -> Diagnostic:
        return self.diagnostics[0]


class DataError(EmcError):
    """A problem in an input file, named by file and line."""

    def __init__(self, path: str, line: int | None, message: str):
        self.path, self.line = path, line
        where = f"{path}:{line}" if line else path
        super().__init__(f"{where}: error: {message}")


class DiagnosticSink:
    """Collects diagnostics for one spec file; `raise_if_any` turns them into a SpecError."""

    def __init__(self, path: str, text: str):
        self.path = path
        self._lines = text.split("\n")  # the parser's lines: a form feed or U+2028 in a comment ends none
        self.diagnostics: list[Diagnostic] = []

    def line(self, number: int) -> str | None:
        if 1 <= number <= len(self._lines):
            return self._lines[number - 1]
        return None

    def error(self, pos: Pos, message: str, hint: str | None = None) -> None:
        self.diagnostics.append(Diagnostic(self.path, pos, message, hint, self.line(pos.line)))

    def raise_if_any(self) -> None:
        if self.diagnostics:
            raise SpecError(self.diagnostics)


def did_you_mean(word: str, candidates: Iterable[str]) -> str | None:
    """A 'did you mean' hint for a misspelt name, or None when nothing is close."""
    options = sorted(set(candidates) - {word})  # the name itself is never the hint
    close = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    if close:
        return f"did you mean '{close[0]}'?"
    return None


def one_of(candidates: Iterable[str]) -> str:
    options = sorted(set(candidates))
    return ", ".join(f"'{c}'" for c in options)
