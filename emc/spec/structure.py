"""What a structure declares to the front end: its arguments and its parts' attributes.

A structure (chain, segmentation, alignment, spantree, label) owns the combinatorics of one latent
variable. To the spec checker it says which arguments it takes and which attributes its parts
have (`z.prev`, `s.word`, `a.source`, `t.constituent`); to the code generator, which *slot* of its
dynamic program a block's factor feeds (a chain has an emission slot and a transition slot).
Everything else about a structure (data packing, the DP, decoding) lives in its package under
emc/structures/. These declarations live here, below the checker and the structures, so that the
checked model (emc/spec/model.py) can hold them and every structure can use them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable


class SlotError(Exception):
    """A block's attributes fit no slot of the structure; the message says why."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message, self.hint = message, hint


@dataclass(frozen=True)
class ArgSpec:
    """A keyword argument of a structure, e.g. `states=45` or `null=yes`."""

    name: str
    kind: str  # "int" | "bool" | "float"
    default: Any  # None: required
    help: str
    low: float | None = None
    high: float | None = None
    choices: tuple[Any, ...] | None = None
    listed_values: tuple[Any, ...] = ()  # other values whose attributes `emc structures` lists (labels=10)

    def describe(self) -> str:
        if self.choices:
            return " or ".join(_fmt(c) for c in self.choices)
        if self.kind == "bool":
            return "yes or no"
        lo = "" if self.low is None else f">= {_fmt(self.low)}"
        hi = "" if self.high is None else f"<= {_fmt(self.high)}"
        return f"{'an integer' if self.kind == 'int' else 'a number'} {lo}{' and ' if lo and hi else ''}{hi}".strip()


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


_TRUE, _FALSE = ("yes", "true", "on"), ("no", "false", "off")


def coerce_arg(spec: ArgSpec, raw: Any) -> tuple[Any, str | None]:
    """A structure argument's value as its kind, or a problem saying why it is not one."""
    if spec.kind == "bool":
        if isinstance(raw, bool):
            return raw, None
        text = str(raw).lower()
        if text in _TRUE:
            return True, None
        if text in _FALSE:
            return False, None
        return None, f"'{raw}' is not yes or no"
    try:
        number = float(raw)
    except (TypeError, ValueError):
        return None, f"'{raw}' is not a number"
    if not math.isfinite(number):
        return None, f"{number:g} is not a finite number"
    if spec.kind == "int":
        if not number.is_integer():
            return None, f"{number:g} is not a whole number"
        number = int(number)
    if spec.choices is not None and number not in spec.choices:
        return None, f"{number:g} is not allowed"
    if spec.low is not None and number < spec.low:
        return None, f"{number:g} is too small"
    if spec.high is not None and number > spec.high:
        return None, f"{number:g} is too large"
    return number, None


@dataclass(frozen=True)
class Attribute:
    """An attribute of a structure's parts.

    role:
      "latent"   - depends on the latent structure (a state, a link's source word, a bracket,
                   a segment's length); every block must involve one, or it could not change
                   the posterior
      "observed" - fixed by the data once the part is fixed (the token at a position, a yield)
    space: the name of the value space, resolved to a size at fit time (`states`, `length`, or the
           vocabulary of an observed variable: `vocab:x`).
    slot:  which factor slot of the DP this attribute belongs to; a block's attributes must agree.
           `None` means "any slot" (e.g. the current state is seen by emissions and transitions).
    tokens_of: when the values are tokens of an observed variable, its name; observed views
           (`.lower`, `.suffix(3)`, ...) then apply and get their own vocabularies.
    numeric: the values are small integers (a length, a jump), usable in fixed weight
           expressions as well as in blocks.
    feature_views: the values are strings of a vocabulary the structure builds (a segment's
           word) that are not tokens: views apply to them inside `features(...)` only, where
           they are computed once per vocabulary entry.
    """

    path: str
    role: str
    space: str
    help: str
    slot: str | None = None
    tokens_of: str | None = None
    numeric: bool = False
    feature_views: bool = False


@dataclass(frozen=True)
class Slot:
    """A place in the DP where factors multiply in, e.g. a chain's `emission` (per position and
    state) or `transition` (per pair of states)."""

    name: str
    help: str


@dataclass(frozen=True)
class Restatement:
    """A built-in structure whose dynamic program is a rule program (emc/structures/rules/), so
    that one chart core serves it and the structures a spec writes as rules: the program's
    `structure` declaration (a resource of the structure's package, parsed as a spec's would be),
    and for each slot of the built-in the parts of the program its factors score, each with the
    part attribute that every attribute of the built-in names (by the attribute's name after the
    latent's, `label` for `t.label`, or by its observed role, `x`, for a token). A factor of a
    slot with several parts (the DMV's stop decisions, taken by four kinds of firings) scores each
    of them from one table. The built-in keeps its front end, its data side and its formats."""

    program: str
    parts: dict[str, tuple[tuple[str, dict[str, str]], ...]]
    # the value spaces of the built-in's attributes whose sizes the structure's arguments bound
    # (labels, bool): their tables are small, read from weights written out once per E-step
    bounded_spaces: frozenset[str] = frozenset()


@dataclass
class Binding:
    """A structure with its arguments resolved: the observed variables it ranges over (by role,
    e.g. {"x": "x"} or {"target": "f", "source": "e"}) and its keyword arguments."""

    structure: "Structure"
    latent: str
    observed: dict[str, str]
    args: dict[str, Any]


def summary(docstring: str) -> str:
    """A built-in structure's help line: its module docstring's second paragraph, on one line."""
    return docstring.split("\n\n")[1].replace("\n", " ")


@dataclass
class Structure:
    """The front-end description of one structure. Concrete structures fill in these fields and
    the `attributes` function; see emc/structures/chain/__init__.py for the pattern."""

    name: str
    help: str  # one line for `emc structures`: a built-in's is summary(its module's docstring)
    signature: str  # how it is written, e.g. "chain(x, states=K, order=1, stop=yes)"
    example: str  # a latent declaration using it, e.g. "latent z : chain(x, states=45)" (for the docs)
    args: tuple[ArgSpec, ...]
    slots: tuple[Slot, ...]
    attributes: Callable[[Binding], dict[str, Attribute]]
    # slot_rule(binding, outcome, context) -> the slot a block with these attributes feeds, or
    # raises SlotError saying why no slot fits.
    slot_rule: Callable[[Binding, list[Attribute], list[Attribute]], str]
    observed_roles: tuple[str, ...] = ("x",)  # positional observed arguments
    uses_from: bool = False  # written as `alignment(f from e)`
    input_kinds: tuple[str, ...] = ("tokens",)  # observed kinds it accepts: "tokens", "symbols"
    # table_space(binding, attribute, slot, is_outcome) -> the space of a table axis; lets a
    # structure add its boundary symbols (a chain's START row and STOP outcome).
    table_space: Callable[[Binding, Attribute, str, bool], str] = lambda b, a, s, o: a.space
    # the cost model `emc info` prints: the DP in a few words, and its cost for the arguments
    dp: str = "a dynamic program (see the structure's dp.py)"
    cost: Callable[[dict], str] = lambda args: "see the structure's dp.py"
    # package(binding) -> the package under emc/structures/ holding the codegen and data modules
    # for this binding, when a setting makes it a different model (spantree with labels=K: pcfg)
    package: Callable[[Binding], str] | None = None
    # up to this many more observed variables may follow, bound as roles x2, x3, ... (label(v, n, classes=K))
    extra_observed: int = 0
    # the attributes (after the latent's name: "source") whose positions a per-example constraint
    # (`E[count per a.source] <= 1`) may group the parts by: its glue compiles the projection
    per_position: tuple[str, ...] = ()
    # whether the structure has two directions whose link posteriors can be made to agree
    # (`constraint NAME : E[a] agree`; the runtime trains both, emc/runtime/symmetry.py)
    symmetric: bool = False
    # per_type(binding) -> the (state, token) attributes whose posterior sparsity (`E[max z per x]
    # penalty s`, emc/runtime/sparsity.py) the glue compiles for this binding, or None
    per_type: Callable[[Binding], tuple[str, str] | None] = lambda binding: None
    # restated(binding) -> the rule program the structure's DP is for this binding, or None for
    # a hand-written DP (emc/structures/rules/restate.py)
    restated: Callable[[Binding], Restatement | None] = lambda binding: None

    def arg(self, name: str) -> ArgSpec | None:
        for spec in self.args:
            if spec.name == name:
                return spec
        return None
