"""Which rules the lanes run as matrix products, and their nests rewritten to do so.

A rule is a contraction when its innermost loop sums over a state j that only its one body and
one small table's weight read, the weight's outcome being the state k of the loop above (the
chain's `state(t, k) += state(t - 1, j)` scored by P(k | j); a mixture's or a segmenter's class
step alike). Over lanes (emc/structures/rules/lanes.py), the loop over j then becomes one product
per level (emc/structures/rules/contract.py):
  inside   G = W C, written where the outside reads it again (`rsaved`, at the head's cells: their
           state is the head's last index, so its rows are consecutive cells) and read there as
           rk<r> = G[k] where the nest read the weight and the body;
  outside  D[k] = the head's outside times the rule's other factors (rcm<r>), then the body's
           outside += W^T D and rcx<r> += D C^T, once per level; rcx<r> goes into the table's
           local counts once a pass (not a loop over the table's entries per level); the other
           factors' counts take G (from `rsaved`) as the sum over j.
W and W^T are taken once per pass (rwb<r>, rwt<r>), with the buffers the products write (D,
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
    head_base: str  # the head's cell at k = klo
    head_range: tuple[str, str]  # the first state of the head's last index and how many it has
    slot: int  # its part of `rsaved`, one chart's size a contraction

    def setup(self, inside: bool) -> list[str]:
        """The lines taking W (the inside's) or W^T (the outside's) and the products' buffers
        once, at the top of a pass."""
        r = self.number
        block = f"weight_block(derived, rd{self.table}, rr{self.table}, {', '.join(self.bounds)})"
        if inside:
            # G's rows are written whole: outside the head's range they would land on other cells
            klo, khi = self.bounds[:2]
            lo, size = self.head_range
            return [f"rwb{r} = {block}", f"if rwb{r}.shape[0] > 0 and not ({lo} <= {klo} and {khi} < {lo} + {size}):",
                    "    return False"]
        lines = [f"rwt{r} = transposed({block})", f"rcm{r} = lane_rows(rwt{r}.shape[1], ln)"]
        if self.learned:
            lines += [f"rcb{r} = lane_scratch(rwt{r}.shape[0], ln)", f"rcx{r} = count_block(rwt{r}.shape[1], rwt{r}.shape[0])"]
        return lines

    def block_call(self, function: str, transpose: bool, chart: str) -> str:
        """function(W or W^T, chart, ln, the body's cell at jlo, ...) as code."""
        return f"{function}(rw{'t' if transpose else 'b'}{self.number}, {chart}, ln, {self.base}"

    @property
    def needs(self) -> set[str]:
        return needs_of(" ".join([*self.bounds, self.base]))

    def product_step(self) -> Step:
        code = self.block_call("contract_rows", False, "chart") + f", rsaved, {self.slot} * cells + {self.head_base})"
        return Step(code, self.needs | needs_of(self.head_base), "let")

    @property
    def saved(self) -> str:
        """Where the inside leaves G's entry for the outside: the rule's own chart-sized part of
        `rsaved`, at the head's cell (lanes.py lays it out by lane, as the chart)."""
        return f"rsaved[np.uint64({self.slot} * cells + {self.head_cell})]"

    def row_step(self) -> Step:
        return Step(f"rk{self.number} = {self.saved}", {self.head} | needs_of(self.head_cell), "let")


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

    def close(self) -> list[str]:
        """The outside's lines adding each learned contraction's D C^T to its table's local counts."""
        return [f"add_count_block(rsc{c.table}, rr{c.table}, {', '.join(c.bounds)}, rcx{c.number})"
                for c in self.found.values() if c.learned]


def contraction_of(names: Names, rule: Rule, nest: Nest, reads: list, number: int,
                   contractions: Contractions, inside: bool) -> Contraction | None:
    """The rule as a contraction (recorded in `contractions` on the inside), or None when it is
    not one."""
    if len(rule.body) != 1 or len(nest.loops) < 2:
        return None
    (summed, jlo, jhi), (head, klo, khi) = nest.loops[-1], nest.loops[-2]
    if head in needs_of(f"{jlo} {jhi}"):
        return None
    # the body's rows j and the head's rows k are consecutive cells (G is written to the head's)
    body = rule.body[0]
    if not (_last_index(body, rule.order[int(summed[2:])]) and _last_index(rule.head, rule.order[int(head[2:])])):
        return None
    if summed in needs_of(nest.head_cell):
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
    item, last_index = names.item(rule.head.name), len(rule.head.args) - 1
    head_values = [names.lin(a, rule) for a in rule.head.args[:-1]] + [f"({klo})"]
    contraction = Contraction(number, head, summed, weights[0], names.tables.index(read.table), read.learned,
                              bounds, cell_offset(names, body, rule, values), cell_offset(names, rule.head, rule),
                              cell_offset(names, rule.head, rule, head_values),
                              (f"lo{item}_{last_index}", f"z{item}_{last_index}"), slot)
    if inside:
        contractions.found[number] = contraction
    return contraction


def _last_index(ref, variable: str) -> bool:
    """Whether `variable` is the item's last index, as it is, and no other index reads it."""
    last = ref.args[-1] if ref.args else None
    return (last is not None and list(last.terms) == [(variable, 1)] and last.const == 0
            and not any(variable in a.names for a in ref.args[:-1]))


def _drop_summed(nest: Nest, c: Contraction) -> None:
    """The loop over j and what it read (the weight, the body) out of the nest."""
    gone = {f"rw{c.read}", "ru0"}
    nest.loops = nest.loops[:-1]
    nest.steps = [s for s in nest.steps if c.summed not in s.needs]
    nest.factors = [f for f in nest.factors if f not in gone]
    nest.bodies, nest.body_cells = [], []
    nest.product = [f for f in nest.product if f not in gone]


def contract_inside(nest: Nest, c: Contraction) -> None:
    """The nest reads G's row k (where the product left it for the outside, `saved`) where it
    summed the weight times the body over j."""
    _drop_summed(nest, c)
    nest.steps += [c.product_step(), c.row_step()]
    nest.product = [f"rk{c.number}"] + nest.product


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
        jlo, jhi = c.bounds[2:]
        after.append(f"count_rows(rcx{c.number}, {jlo}, {jhi}, chart, ln, {c.base}, rcm{c.number}, rcb{c.number})")
    return store, Sum("", c.needs, after)


