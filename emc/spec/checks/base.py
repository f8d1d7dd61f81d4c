"""The checker's shared state (emc/spec/check.py composes the passes)."""
from __future__ import annotations

from typing import Any

from emc.spec import ir
from emc.spec.errors import DiagnosticSink


class CheckerBase:
    """What every pass of the checker shares: the spec, the diagnostics it collects, the
    command line's overrides, the folder files are relative to and the params' values."""

    def __init__(self, spec: ir.Spec, overrides: dict[str, Any], base_dir: str):
        self.spec = spec
        self.sink = DiagnosticSink(spec.path, spec.text)
        self.overrides = dict(overrides)
        self.base_dir = base_dir
        self.params: dict[str, float] = {}

    def error(self, pos: ir.Pos, message: str, hint: str | None = None) -> None:
        self.sink.error(pos, message, hint)
