"""The checked model: what `emc.spec.check` returns and the code generator, the structures' data
side and the runtime read. Below the checker (it imports no structure, no code generator), so
every layer above can name these types without depending on the checks that build them."""
from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType

from emc.io.views import view_key
from emc.priors import Prior
from emc.spec import ir
from emc.spec.structure import Attribute, Binding, Structure


@dataclass(frozen=True)
class ResolvedAttr:
    """An attribute reference resolved against the structure: the structure's attribute, plus the
    chain of observed views applied to it (`x.suffix(3)` -> attribute x, views (('suffix', 3),))."""

    text: str
    attribute: Attribute
    views: tuple[tuple[str, int | str | None], ...]
    pos: ir.Pos

    @property
    def space(self) -> str:
        return self.attribute.space + view_key(self.views)


@dataclass(frozen=True)
class Feature:
    """One feature view of a featured block: `x.suffix(2)` is text 'x.suffix(2)' and views
    (('suffix', 2),) applied to the block's outcome value (after the outcome's own views)."""

    text: str
    views: tuple[tuple[str, int | str | None], ...]


@dataclass(frozen=True)
class PairFeature:
    """One pair feature of a featured block: `pair.prefix(4)` is text 'pair.prefix(4)', view
    'prefix' and n 4; it tests the block's outcome word against its context word, and its one
    weight is shared by every row (emc/runtime/blocks/pair_features.py)."""

    text: str
    view: str
    n: int | None = None


@dataclass(frozen=True)
class Bound:
    """A constraint's bound (`constraint NAME : E[attrs in "FILE"] >= 0.8`): the listed values'
    file (absolute path), `>=` or `<=`, and the share the parts with listed values must reach."""

    path: str
    op: str
    value: float
    written_path: str  # the file as the spec names it (for messages and `emc info`)


@dataclass
class Factor:
    """One multiplicative factor of a part's score: a learned or fixed block, or a fixed weight.

    `table` names the parameter table the factor reads; blocks that share parameters (`shares`)
    read the same table and pool their counts.
    """

    name: str
    kind: str  # "learned" | "fixed" | "weight" | "constraint"
    table: str
    slot: str
    outcome: tuple[ResolvedAttr, ...]
    context: tuple[ResolvedAttr, ...]
    outcome_spaces: tuple[str, ...]
    context_spaces: tuple[str, ...]
    pos: ir.Pos
    prior: Prior = Prior()  # with its `smooth add(a)` (emc/priors)
    fixed_path: str | None = None
    expr: ir.Expr | None = None
    # a featured block (`features(...)`): the views of its outcome, each conjoined with the
    # context row, and the l2 penalty kappa of its log-linear weights (emc/runtime/blocks/features.py)
    features: tuple[Feature, ...] = ()
    l2: float = 0.0
    # pair features of a block over word pairs (`pair.same`, ...), each one weight shared by all rows
    pair_features: tuple[PairFeature, ...] = ()
    # a constraint on the posterior (kind "constraint"): its table holds exp(-lambda * feature) of
    # each value combination during the projection's E-steps, 1 otherwise (emc/runtime/constraints.py)
    bound: Bound | None = None

    @property
    def signature(self) -> str:
        out = ", ".join(a.text for a in self.outcome)
        if self.kind == "weight":
            return ir.expr_text(self.expr)
        if self.bound is not None:
            return f'E[{out} in "{self.bound.written_path}"] {self.bound.op} {self.bound.value:g}'
        return f"P({out} | {', '.join(a.text for a in self.context)})" if self.context else f"P({out})"


@dataclass(frozen=True)
class ExampleConstraint:
    """A checked per-example constraint (`constraint NAME : E[count per a.source] <= 1`): in every
    example, at every position of `attr`'s tokens, the expected number of parts there `op` `bound`."""

    name: str
    attr: ResolvedAttr
    op: str  # "<=" | ">="
    bound: float
    pos: ir.Pos

    @property
    def sign(self) -> float:
        """psi = sign * (count - bound) <= 0 is the constraint."""
        return 1.0 if self.op == "<=" else -1.0

    @property
    def signature(self) -> str:
        return f"E[count per {self.attr.text}] {self.op} {self.bound:g}"


@dataclass(frozen=True)
class SparsityConstraint:
    """A checked posterior-sparsity constraint (`constraint NAME : E[max z per x] penalty 1.0`): the
    projected posterior q minimises KL(q || p) + penalty * sum over the word types w of `word` and
    the states t of `state` of max over the tokens i of w of q(z_i = t) (emc/runtime/sparsity.py)."""

    name: str
    state: ResolvedAttr
    word: ResolvedAttr
    penalty: float
    pos: ir.Pos

    @property
    def signature(self) -> str:
        return f"E[max {self.state.text} per {self.word.text}] penalty {self.penalty:g}"


@dataclass(frozen=True)
class SymmetricConstraint:
    """A checked symmetry constraint (`constraint NAME : E[a] agree`): both directions of the
    alignment trained together, their link posteriors projected to agree (emc/runtime/symmetry.py)."""

    name: str
    pos: ir.Pos

    @property
    def signature(self) -> str:
        return "both directions' link posteriors agree"


@dataclass
class CheckedModel:
    """A spec that passed every check, with everything resolved for the code generator."""

    spec: ir.Spec
    binding: Binding
    observed: dict[str, str]  # name -> kind
    factors: list[Factor]
    # the structure's code-generation descriptor for this binding (emc/structures/NAME/codegen.py:
    # its template, packed arrays and attribute codes), which the checker has the registry look
    # up, so that the code generator never imports a structure
    codegen: ModuleType
    params: dict[str, float] = field(default_factory=dict)
    base_dir: str = ""  # where the files the spec names were found (relative paths start there)
    # per-example constraints on the posterior (emc/runtime/example_constraints.py)
    example_constraints: list[ExampleConstraint] = field(default_factory=list)
    # posterior sparsity (at most one; emc/runtime/sparsity.py)
    sparsity: list[SparsityConstraint] = field(default_factory=list)
    # the alignment's two directions' posteriors agree (`E[a] agree`; emc/runtime/symmetry.py)
    symmetric: SymmetricConstraint | None = None
    # a built-in structure whose DP is a rule program: this model restated over the program's parts
    # (its factors scoring them), which the code generator reads (emc/structures/rules/restate.py)
    restated: CheckedModel | None = None

    @property
    def code_model(self) -> CheckedModel:
        """The model the code generator reads: the restated one, if any, else this one."""
        return self.restated or self

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def structure(self) -> Structure:
        return self.binding.structure

    def tables(self) -> list[Factor]:
        """The factors that own a parameter table (first use of each table), in spec order."""
        seen: dict[str, Factor] = {}
        for f in self.factors:
            seen.setdefault(f.table, f)
        return list(seen.values())
