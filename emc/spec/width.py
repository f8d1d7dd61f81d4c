"""How wide text stands on a terminal, for the tables and carets that line names up: a wide (CJK)
character takes two columns, a combining mark or a format character none, a tab stays a tab."""
from __future__ import annotations

import unicodedata


def blanks_under(text: str) -> str:
    """Blanks as wide as `text` (its tabs kept), so that what follows stands under its end."""
    return "".join("\t" if c == "\t" else " " * _char_width(c) for c in text)


def display_width(text: str) -> int:
    return sum(_char_width(c) for c in text)


def pad(text: str, width: int) -> str:
    """`text` and blanks up to `width` columns (`f"{text:<width}"` counts characters)."""
    return text + " " * max(width - display_width(text), 0)


def _char_width(char: str) -> int:
    if unicodedata.category(char) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
