"""Observed views: string functions of a token (`x.lower`, `x.suffix(3)`, `x.shape`, ...), and
pair views: yes/no tests of two words (`pair.same`, `pair.prefix(4)`), the features a featured
block over word pairs shares across its rows (emc/runtime/blocks/pair_features.py).

Each view of an observed variable gets its own vocabulary; views are computed once per corpus
(per distinct token type), never in a hot loop. A view may follow another (`x.lower.suffix(2)`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class View:
    name: str
    takes_length: bool  # suffix(n), prefix(n)
    help: str
    apply: Callable[[str, int | None], str]


def _shape(token: str) -> str:
    """Capitalisation / digit pattern, runs cut to 3: 'Paris' -> 'Xxxx', '12' -> 'dd', 'U.S.' -> 'X.X.'."""
    out: list[str] = []
    run = 0
    for ch in token:
        cls = "X" if ch.isupper() else "x" if ch.islower() else "d" if ch.isdigit() else ch
        run = run + 1 if out and out[-1] == cls else 1
        if run <= 3:
            out.append(cls)
    return "".join(out)


def _yes_no(flag: bool) -> str:
    return "yes" if flag else "no"


VIEWS: dict[str, View] = {
    v.name: v
    for v in (
        View("lower", False, "the token lowercased", lambda t, n: t.lower()),
        View("suffix", True, "the last n characters (the whole token if shorter)", lambda t, n: t[-n:]),
        View("prefix", True, "the first n characters (the whole token if shorter)", lambda t, n: t[:n]),
        View("shape", False, "capitalisation and digit pattern, runs cut to 3 (Paris -> Xxxx, 12 -> dd)", lambda t, n: _shape(t)),
        View("length", False, "the number of characters, as a category", lambda t, n: str(len(t))),
        View("has_digit", False, "yes if the token has a digit, else no",
             lambda t, n: _yes_no(any(ch.isdigit() for ch in t))),
        View("has_hyphen", False, "yes if the token has a hyphen, else no", lambda t, n: _yes_no("-" in t)),
        View("capitalized", False, "yes if the token starts with a capital letter, else no",
             lambda t, n: _yes_no(t[:1].isupper())),
    )
}

MAX_VIEW_LENGTH = 50

# `x.vectors("file")`: real-valued features of the word from a file of word vectors
# (emc/io/vectors.py); a view for features(...) only, since its value is a vector, not a string
DENSE_VIEW = "vectors"


@dataclass(frozen=True)
class PairView:
    """A yes/no test of a word pair (the outcome word, the context word), written `pair.NAME`."""

    name: str
    takes_length: bool  # prefix(n)
    help: str
    fires: Callable[[str, str, int | None], bool]


def _shared_prefix(a: str, b: str, n: int | None) -> bool:
    return len(a) >= n and len(b) >= n and a[:n] == b[:n]


PAIR_VIEWS: dict[str, PairView] = {
    v.name: v
    for v in (
        PairView("same", False, "the two words are identical", lambda a, b, n: a == b),
        PairView("same_lower", False, "the two words are identical once lowercased", lambda a, b, n: a.lower() == b.lower()),
        PairView("prefix", True, "both words have at least n characters and their first n are the same",
                 _shared_prefix),
    )
}


def view_key(views: tuple[tuple[str, int | None], ...]) -> str:
    """A readable, canonical name for a view chain: '.suffix(3)', '.lower.shape', ''."""
    return "".join(f".{name}" if n is None else f".{name}({n})" for name, n in views)


def apply_views(token: str, views: tuple[tuple[str, int | None], ...]) -> str:
    for name, n in views:
        token = VIEWS[name].apply(token, n)
    return token
