"""The intermediate representation of a `.em` spec, as written (before checking).

Every node carries the source position of the text it came from, so the checker and the code
generator can point at it. The IR is structure-agnostic: a latent declaration names its structure
and arguments; which attributes exist and what they mean is the structure's business
(`emc.structures`), resolved by `emc.spec.check`.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Pos:
    """A span of source text: 1-based line and column of its start, and of one past its end."""

    line: int
    column: int
    end_line: int
    end_column: int

    @staticmethod
    def unknown() -> "Pos":
        return Pos(0, 0, 0, 0)


@dataclass(frozen=True)
class AttrStep:
    """One `.name` or `.name(arg)` after the base of an attribute reference (`x.suffix(3)`,
    `x.vectors("emb.txt")`: a string argument names a file)."""

    name: str
    arg: float | str | None
    pos: Pos


@dataclass(frozen=True)
class AttrRef:
    """`z`, `z.prev`, `x.suffix(3)`, `t.constituent`: a variable and a path of steps."""

    base: str
    steps: tuple[AttrStep, ...]
    pos: Pos

    @property
    def text(self) -> str:
        parts = [self.base]
        for step in self.steps:
            if step.arg is None:
                parts.append(step.name)
            elif isinstance(step.arg, str):
                parts.append(f'{step.name}("{step.arg}")')
            else:
                parts.append(f"{step.name}({_fmt_number(step.arg)})")
        return ".".join(parts)


# --- expressions (fixed weights, option arguments) -------------------------------------------


@dataclass(frozen=True)
class Number:
    value: float
    pos: Pos


@dataclass(frozen=True)
class Attr:
    ref: AttrRef

    @property
    def pos(self) -> Pos:
        return self.ref.pos


@dataclass(frozen=True)
class Unary:
    op: str  # "-"
    operand: "Expr"
    pos: Pos


@dataclass(frozen=True)
class Binary:
    op: str  # "+", "-", "*", "/", "^"
    left: "Expr"
    right: "Expr"
    pos: Pos


@dataclass(frozen=True)
class Call:
    function: str
    argument: "Expr"
    pos: Pos
    function_pos: Pos


Expr = Number | Attr | Unary | Binary | Call


# --- declarations ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Observed:
    name: str
    kind: str
    pos: Pos
    kind_pos: Pos


@dataclass(frozen=True)
class StructArg:
    """An argument of a structure: positional (`x`), keyword (`states=45`) or `f from e`."""

    form: str  # "positional" | "keyword" | "from"
    name: str | None  # keyword name; None for positional / from
    value: float | str | tuple[str, str]
    pos: Pos
    value_pos: Pos


@dataclass(frozen=True)
class Latent:
    name: str
    structure: str
    args: tuple[StructArg, ...]
    pos: Pos
    name_pos: Pos
    structure_pos: Pos


@dataclass(frozen=True)
class OptionArg:
    name: str | None
    value: Expr
    pos: Pos


@dataclass(frozen=True)
class Option:
    """`smooth add(0.1)`, `prior sparse(alpha=80, beta=0.05)`, `fixed "file"`, `shares emit`,
    `features(x, x.suffix(2))` (each argument an Attr), `l2(1.0)` (one argument)."""

    keyword: str  # "smooth" | "prior" | "fixed" | "shares" | "features" | "l2"
    kind: str | None  # "add", "dirichlet", "sparse", a shared block's name, or None
    args: tuple[OptionArg, ...]
    path: str | None
    pos: Pos
    kind_pos: Pos


@dataclass(frozen=True)
class Block:
    """`multinomial NAME : P(outcome... | context...) options...`."""

    name: str
    outcome: tuple[AttrRef, ...]
    context: tuple[AttrRef, ...]
    options: tuple[Option, ...]
    pos: Pos
    name_pos: Pos

    def option(self, keyword: str) -> Option | None:
        for opt in self.options:
            if opt.keyword == keyword:
                return opt
        return None


@dataclass(frozen=True)
class Weight:
    name: str | None
    expr: Expr
    pos: Pos


@dataclass(frozen=True)
class Constraint:
    """`constraint NAME : E[attrs in "FILE"] >= BOUND`: over the whole corpus, the expected share of
    the parts (of the slot the attributes belong to) whose values are a line of FILE is at least
    (`>=`) or at most (`<=`) BOUND (posterior regularization, emc/runtime/constraints.py)."""

    name: str
    attrs: tuple[AttrRef, ...]
    path: str
    op: str  # ">=" | "<="
    bound: float
    pos: Pos
    name_pos: Pos
    path_pos: Pos
    bound_pos: Pos


@dataclass(frozen=True)
class SymmetricConstraint:
    """`constraint NAME : E[a] agree`: the alignment's two directions are trained together, each
    pair's posteriors over both directions' alignments projected onto those whose expected links
    agree (Ganchev, Graca & Taskar 2008; emc/runtime/symmetry.py)."""

    name: str
    latent: str
    pos: Pos
    name_pos: Pos
    latent_pos: Pos


@dataclass(frozen=True)
class ExampleConstraint:
    """`constraint NAME : E[count per a.source] <= BOUND`: in every example, at every position of
    the attribute's tokens, the expected number of parts there is at most (`<=`) or at least
    (`>=`) BOUND; each example's posterior is projected on its own (emc/runtime/example_constraints.py)."""

    name: str
    attr: AttrRef
    op: str  # ">=" | "<="
    bound: float
    pos: Pos
    name_pos: Pos
    bound_pos: Pos


@dataclass(frozen=True)
class SparsityConstraint:
    """`constraint NAME : E[max z per x] penalty SIGMA`: posterior sparsity (Graca, Ganchev, Taskar &
    Pereira 2009): the posterior is projected with SIGMA times the sum, over the word types of x and
    the states of z, of the state's largest posterior at a token of the type (emc/runtime/sparsity.py)."""

    name: str
    state: AttrRef
    word: AttrRef
    penalty: float
    pos: Pos
    name_pos: Pos
    penalty_pos: Pos


@dataclass(frozen=True)
class Param:
    name: str
    value: float
    pos: Pos
    name_pos: Pos


@dataclass(frozen=True)
class ModelName:
    name: str
    pos: Pos


@dataclass
class Spec:
    """A parsed spec: the declarations in source order, plus where it came from."""

    path: str
    text: str
    model: ModelName | None = None
    observed: list[Observed] = field(default_factory=list)
    latents: list[Latent] = field(default_factory=list)
    blocks: list[Block] = field(default_factory=list)
    weights: list[Weight] = field(default_factory=list)
    params: list[Param] = field(default_factory=list)
    constraints: list[Constraint] = field(default_factory=list)
    example_constraints: list[ExampleConstraint] = field(default_factory=list)
    symmetric_constraints: list[SymmetricConstraint] = field(default_factory=list)
    sparsity_constraints: list[SparsityConstraint] = field(default_factory=list)
    structures: list["StructureDecl"] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.model.name if self.model else "model"


def _fmt_number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)


def expr_text(expr: Expr) -> str:
    """The expression written back as source (for messages and `emc info`)."""
    if isinstance(expr, Number):
        return _fmt_number(expr.value)
    if isinstance(expr, Attr):
        return expr.ref.text
    if isinstance(expr, Unary):
        return f"-{expr_text(expr.operand)}"
    if isinstance(expr, Binary):
        return f"({expr_text(expr.left)} {expr.op} {expr_text(expr.right)})"
    return f"{expr.function}({expr_text(expr.argument)})"


# --- structures written as rules (a weighted-deduction program) --------------------------------


@dataclass(frozen=True)
class Lin:
    """An index expression: a sum of names (index variables, structure arguments, `n`) with
    integer coefficients, plus a constant. Only + and - are written, so every index is linear."""

    terms: tuple[tuple[str, int], ...]
    const: int
    pos: Pos

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, coef in self.terms if coef)

    @property
    def text(self) -> str:
        out = ""
        for name, coef in self.terms:
            if coef == 0:
                continue
            sign = "-" if coef < 0 else ("+" if out else "")
            scale = "" if abs(coef) == 1 else f"{abs(coef)} * "
            out += f" {sign} {scale}{name}" if out else f"{sign}{scale}{name}"
        if self.const or not out:
            out += f" {'-' if self.const < 0 else '+'} {abs(self.const)}" if out else str(self.const)
        return out.strip()


@dataclass(frozen=True)
class IxRange:
    """`lo..hi`, both ends included."""

    lo: Lin
    hi: Lin
    pos: Pos


@dataclass(frozen=True)
class IndexDecl:
    name: str
    range: IxRange
    pos: Pos


@dataclass(frozen=True)
class ItemDecl:
    """`item end(i in 0..n, c in 0..classes)`: a named chart cell and the ranges of its indices."""

    name: str
    indices: tuple[IndexDecl, ...]
    pos: Pos
    name_pos: Pos


@dataclass(frozen=True)
class ItemRef:
    """`end(i + 1, c)`: an item with index expressions."""

    name: str
    args: tuple[Lin, ...]
    pos: Pos


@dataclass(frozen=True)
class VarRange:
    name: str
    range: IxRange
    pos: Pos


@dataclass(frozen=True)
class AttrDef:
    """A part attribute defined in a `where` clause: `w = x[i]` (the token of an observed variable
    at an index), `w = x[i:j]` (the tokens from i up to j, as one word of their own vocabulary) or
    `width = j - i in 1..maxlen` (a number; firings outside the range are not parts)."""

    name: str
    kind: str  # "token" | "span" | "numeric"
    observed: str | None
    index: Lin
    range: IxRange | None
    pos: Pos
    end: Lin | None = None


@dataclass(frozen=True)
class RuleDecl:
    """An `axiom`, a `part` (a rule whose firings are parts of the structure) or the `goal`."""

    kind: str  # "axiom" | "part" | "goal"
    name: str | None
    params: tuple[str, ...]
    head: ItemRef
    body: tuple[ItemRef, ...]
    ranges: tuple[VarRange, ...]
    where: tuple[AttrDef, ...]
    pos: Pos
    name_pos: Pos
    label: tuple[str, Lin, Lin | None, str] | None = None  # `labels x[t - 1] as k`, `labels x[i:j] as c`:
    # (observed, index or start, end or None, variable)
    attach: tuple[Lin, Lin | None] | None = None  # `attaches d to h`: (dependent, head or None: the root)


@dataclass(frozen=True)
class StructureDecl:
    """`structure NAME(x, arg=value, ...)` and the item, axiom, part and goal statements after it."""

    name: str
    observed: tuple[str, ...]
    args: tuple[tuple[str, int, Pos], ...]
    items: tuple[ItemDecl, ...]
    rules: tuple[RuleDecl, ...]
    pos: Pos
    name_pos: Pos
