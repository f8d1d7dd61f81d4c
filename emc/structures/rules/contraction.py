"""Which rules the lanes run as matrix products, and their nests rewritten to do so.

A rule is a contraction when its innermost loop sums over a state j that only its one body and
one small table's weight read, the weight's outcome being the state k of the loop above (the
chain's `state(t, k) += state(t - 1, j)` scored by P(k | j); a mixture's or a segmenter's class
step alike). Over lanes (emc/structures/rules/lanes.py), the loop over j then becomes one product
per level (emc/structures/rules/contract.py):
  inside   G = W C, read as rk<r> = G[k] where the nest read the weight and the body;
  outside  D[k] = the head's outside times the rule's other factors (rcm<r>), then the body's
           outside += W^T D and the table's local counts += D C^T, once per level; the other
           factors' counts take G (the inside leaves it in `rsaved`) as the sum over j.
W and W^T are taken once per pass (rwb<r>, rwt<r>), with the buffers the products write (G, D,
and the outside's transposed body rcb<r> and product rcx<r>): a rule whose bounds change with the
level (a loop variable in a state's range) is not a contraction.
Nothing changes in a program's meaning: the rewritten nests compute the same sums in another order.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from emc.structures.rules.emit import Names, Nest, Step, Sum, cell_offset, needs_of
from emc.structures.rules.program import Rule


@dataclass
class Contraction:
    number: int  # names the rule's locals: rgm<r> (G), rk<r> (its row k), rcm<r> (D)
    head: str  # the loop kept: the weight's outcome k
    summed: str  # the loop replaced: j
    read: int  # the weight's factor rw<q>
    table: int  # its table's number among the program's tables (rd<t>, rr<t>, rsc<t>)
    learned: bool
    bounds: tuple[str, str, str, str]  # klo, khi, jlo, jhi
    base: str  # the body's cell at j = jlo
    head_cell: str  # the head's cell (of state k)
    slot: int  # its part of `rsaved`, one chart's size a contraction

    def setup(self, inside: bool) -> list[str]:
        """The lines taking W (the inside's) or W^T (the outside's) and the products' buffers
        once, at the top of a pass."""
        r = self.number
        block = f"weight_block(derived, rd{self.table}, rr{self.table}, {', '.join(self.bounds)})"
        if inside:
            return [f"rwb{r} = {block}", f"rgm{r} = lane_rows(rwb{r}.shape[0], ln)"]
        lines = [f"rwt{r} = transposed({block})", f"rcm{r} = lane_rows(rwt{r}.shape[1], ln)"]
        if self.learned:
            lines += [f"rcb{r} = lane_scratch(rwt{r}.shape[0], ln)", f"rcx{r} = count_block(rwt{r}.shape[1], rwt{r}.shape[0])"]
        return lines

    @property
    def arrays(self) -> list[str]:
        """The rule's arrays over cells and lanes."""
        return [f"rgm{self.number}", f"rcm{self.number}"]

    def call(self, function: str, arrays: str, chart: str) -> str:
        """function(arrays, the bounds, chart, ln, the body's cell at jlo, ...) as code."""
        return f"{function}({arrays}, {', '.join(self.bounds)}, {chart}, ln, {self.base}"

    def block_call(self, function: str, transpose: bool, chart: str) -> str:
        """function(W or W^T, chart, ln, the body's cell at jlo, ...) as code."""
        return f"{function}(rw{'t' if transpose else 'b'}{self.number}, {chart}, ln, {self.base}"

    @property
    def needs(self) -> set[str]:
        return needs_of(" ".join([*self.bounds, self.base]))

    def product_step(self) -> Step:
        code = self.block_call("contract_rows", False, "chart") + f", rgm{self.number})"
        return Step(code, self.needs, "let")

    @property
    def saved(self) -> str:
        """Where the inside leaves G's entry for the outside: the rule's own chart-sized part of
        `rsaved`, at the head's cell (lanes.py lays it out by lane, as the chart)."""
        return f"rsaved[np.uint64({self.slot} * cells + {self.head_cell})]"

    def row_step(self) -> Step:
        klo = self.bounds[0]
        return Step(f"rk{self.number} = rgm{self.number}[np.uint64({self.head} - ({klo}))]",
                    {self.head} | needs_of(klo), "let")


@dataclass
class Contractions:
    """A program's contractions over lanes, by rule number, as the inside found them: the
    outside's are the same rules, and read what the inside saved in their slots."""

    found: dict[int, Contraction] = field(default_factory=dict)

    def slot(self, number: int, inside: bool) -> int | None:
        """The rule's slot in `rsaved`: a new one on the inside, the inside's on the outside
        (None: the inside did not contract it)."""
        if inside and number not in self.found:
            return len(self.found)
        return self.found[number].slot if number in self.found else None

    def setup(self, inside: bool) -> list[str]:
        return [line for c in self.found.values() for line in c.setup(inside)]


def contraction_of(names: Names, rule: Rule, nest: Nest, reads: list, number: int,
                   contractions: Contractions, inside: bool) -> Contraction | None:
    """The rule as a contraction (recorded in `contractions` on the inside), or None when it is
    not one."""
    if len(rule.body) != 1 or len(nest.loops) < 2:
        return None
    (summed, jlo, jhi), (head, klo, khi) = nest.loops[-1], nest.loops[-2]
    if head in needs_of(f"{jlo} {jhi}"):
        return None
    body = rule.body[0]
    last = body.args[-1] if body.args else None
    variable = rule.order[int(summed[2:])]
    if last is None or list(last.terms) != [(variable, 1)] or last.const != 0 or any(
            variable in a.names for a in body.args[:-1]) or summed in needs_of(nest.head_cell):
        return None
    readers = [s for s in nest.steps if summed in s.needs]
    weights = [q for q, read in enumerate(reads) if any(s.text.startswith(f"rw{q} = ") for s in readers)]
    if len(weights) != 1 or len(readers) != 2 or not any(s.text.startswith("ru0 = ") for s in readers):
        return None
    read = reads[weights[0]]
    if read.table not in names.small or read.row.strip() != summed or read.outcome.strip() != head:
        return None
    slot = contractions.slot(number, inside)
    if slot is None:
        return None
    bounds = (klo, khi, jlo, jhi)
    # W is taken once a pass; the outside takes the block the inside's setup made
    if needs_of(" ".join(bounds)) or not (inside or contractions.found[number].bounds == bounds):
        return None
    values = [names.lin(a, rule) for a in body.args[:-1]] + [f"({jlo})"]
    contraction = Contraction(number, head, summed, weights[0], names.tables.index(read.table), read.learned,
                              bounds, cell_offset(names, body, rule, values), cell_offset(names, rule.head, rule),
                              slot)
    if inside:
        contractions.found[number] = contraction
    return contraction


def _drop_summed(nest: Nest, c: Contraction) -> None:
    """The loop over j and what it read (the weight, the body) out of the nest."""
    gone = {f"rw{c.read}", "ru0"}
    nest.loops = nest.loops[:-1]
    nest.steps = [s for s in nest.steps if c.summed not in s.needs]
    nest.factors = [f for f in nest.factors if f not in gone]
    nest.bodies, nest.body_cells = [], []
    nest.product = [f for f in nest.product if f not in gone]


def contract_inside(nest: Nest, c: Contraction) -> None:
    """The nest reads G's row k where it summed the weight times the body over j, and leaves it
    for the outside (`saved`)."""
    _drop_summed(nest, c)
    row = f"rk{c.number}"
    nest.steps += [c.product_step(), c.row_step(), Step(f"{c.saved} = {row}", {row} | needs_of(c.head_cell), "let")]
    nest.product = [row] + nest.product


def contract_outside(nest: Nest, c: Contraction, needs_sum: bool) -> tuple[list[str], Sum]:
    """The nest without j: the lines storing D[k] (its innermost), and the products after the
    loop over k (a Sum placed with the level's locals, closing after the loop). needs_sum: the
    other factors' counts read G (rk<r>)."""
    _drop_summed(nest, c)
    klo = c.bounds[0]
    nest.steps.append(Step(f"rcm{c.number}.fill(0.0)", c.needs, "let"))  # a row the loop skips adds nothing
    heads = ["roh"] + nest.product
    if needs_sum:  # G as the inside left it
        nest.steps.append(Step(f"rk{c.number} = {c.saved}", {c.head} | needs_of(c.head_cell), "let"))
        nest.product = [f"rk{c.number}"] + nest.product
    store = [f"rcm{c.number}[np.uint64({c.head} - ({klo}))] = {' * '.join(heads)}"]
    after = [c.block_call("scatter_rows", True, "out") + f", rcm{c.number})"]
    if c.learned:
        after.append(c.call("count_rows", f"rsc{c.table}, rr{c.table}", "chart") + f", rcm{c.number}, rcb{c.number}, rcx{c.number})")
    return store, Sum("", c.needs, after)


