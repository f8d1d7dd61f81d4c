"""Weight expressions: their functions, evaluation, and the error a value outside a function's
domain raises."""
from __future__ import annotations

import math

from emc.spec import ir
from emc.spec.errors import EmcError


WEIGHT_FUNCTIONS = {"exp": math.exp, "log": math.log, "sqrt": math.sqrt}


class BadExpr(Exception):
    def __init__(self, pos: ir.Pos, message: str, hint: str | None = None):
        super().__init__(message)
        self.pos, self.message, self.hint = pos, message, hint


def attr_refs(expr: ir.Expr) -> list[ir.AttrRef]:
    if isinstance(expr, ir.Attr):
        return [expr.ref]
    if isinstance(expr, ir.Unary):
        return attr_refs(expr.operand)
    if isinstance(expr, ir.Binary):
        return attr_refs(expr.left) + attr_refs(expr.right)
    if isinstance(expr, ir.Call):
        return attr_refs(expr.argument)
    return []


def evaluate(expr: ir.Expr, values: dict[str, float]) -> float:
    """Evaluate an expression with attribute values bound by their text; raises BadExpr on a
    value outside a function's domain."""
    if isinstance(expr, ir.Number):
        return expr.value
    if isinstance(expr, ir.Attr):
        return values[expr.ref.text]
    if isinstance(expr, ir.Unary):
        return -evaluate(expr.operand, values)
    if isinstance(expr, ir.Call):
        arg = evaluate(expr.argument, values)
        try:
            return WEIGHT_FUNCTIONS[expr.function](arg)
        except (ValueError, OverflowError):
            raise BadExpr(expr.pos, f"{expr.function}({arg:g}) is undefined") from None
    left, right = evaluate(expr.left, values), evaluate(expr.right, values)
    try:
        if expr.op == "+":
            return left + right
        if expr.op == "-":
            return left - right
        if expr.op == "*":
            return left * right
        if expr.op == "/":
            return left / right
        result = left ** right
        if isinstance(result, complex):
            raise ValueError
        return result
    except (ZeroDivisionError, OverflowError, ValueError):
        raise BadExpr(expr.pos, f"{left:g} {expr.op} {right:g} is undefined") from None


def evaluate_weight(expr: ir.Expr, values: dict[str, float]) -> float:
    """The value of a checked weight expression at given attribute values (by attribute text);
    raises EmcError when it is undefined or not a finite non-negative number there."""
    try:
        value = evaluate(expr, values)
    except BadExpr as err:
        where = ", ".join(f"{k}={v:g}" for k, v in values.items())
        raise EmcError(f"weight {ir.expr_text(expr)} at {where}: {err.message}") from None
    if not math.isfinite(value) or value < 0:
        where = ", ".join(f"{k}={v:g}" for k, v in values.items())
        raise EmcError(f"weight {ir.expr_text(expr)} is {value:g} at {where}; a weight must be a finite number >= 0")
    return value
