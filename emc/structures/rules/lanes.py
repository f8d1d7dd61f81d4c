"""A rule program's passes over lanes: examples of one length advanced together, lane innermost.

The one-example passes (emc/structures/rules/codegen.py) spend most of a chain's E-step in loops
of a few dozen multiply-adds per position, too short for the machine's vector units, and scatter
each outside term into the previous position's cells one by one. Examples of the same length share
every loop bound and every condition on indices; only what they read (tokens, chart values, level
scales) differs. So the batched E-step (`estep_batch`) runs up to LANES of them in lock step: the
chart holds cell c of lane l at c * ln + l, every statement that reads an example's values runs in
a loop over the lanes, innermost (a transition weight is loaded once for all lanes; a transition's
count sums its lanes' terms in a register), and a rule's sum over a state becomes one matrix
product per level (emc/structures/rules/contraction.py). The loops alone did not beat one example
at a time on the chain (their sums go back to memory on every step); the products do.

`lane_code` rewrites the one-example lines of a pass into that form, statement by statement:
- a loop, or a condition on indices, is shared by the lanes and stays as it is;
- a statement reading a lane's values (a lane array, a lane local) runs in a loop over the lanes,
  consecutive ones in the same loop; a local it sets becomes an array over the lanes (`rl_<name>`)
  when another lane loop reads it;
- a sum into a shared array at a shared index (a small table's local counts) is summed over the
  lanes in a local and added once;
- a condition on a lane's values runs, with all it guards, inside the lane loop;
- a shared statement that neither reads nor writes what the lane loop before it does runs before
  that loop, so the lane statements after it join the loop (each lane loop of a few vectors pays
  its setup, and the locals it shares with the next go through memory).
Anything else (a shared statement reading a lane's value) raises NotLaneable, and the program
keeps its one-example E-step only.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from emc.structures.rules.emit import Nest

# examples a batched pass advances together: the chain's E-step (bench/rules_speed.py) took 2.58x its
# built-in twin's time with 16, 2.09x with 32, 2.14x with 64 before its sums over states became matrix
# products; with them, on all of CoNLL-2000 (quiet, one process alternating): 146.5 ms with 32,
# 134.8 ms with 128 (the built-in 80.7 ms), the products' BLAS calls wider
LANES = 128
# the fewest examples an E-step call runs as lanes: with fewer, few lengths have company, and the
# lanes' code (about 10 s to compile, once per spec on a machine) would not pay for itself
BATCH_MIN = 1000
LANE = "lq"  # the lane loop's variable
# a lane array's index: unsigned, as every index of the passes (emc/structures/rules/emit.py: index)
LANE_INDEX = f"np.uint64({LANE})"
# the generated code's integer locals (emc/structures/rules/emit.py names them): a token, a count's cell
INTEGER = re.compile(r"(token_\d+|cell|rv\d+|rc\d+)")
WIDTH = "ln"  # the lanes in use
# a lane array's row (a cell's, a small table row's): ln padded to whole vectors, so the matrix
# products read and write the rows in place (contract.py: lane_stride; the passes set it)
STRIDE = "lw"
IDENT = re.compile(r"(?<![.\w])([A-Za-z_]\w*)\b")
ASSIGN = re.compile(r"^([A-Za-z_]\w*)\s*(=|\+=|-=|\*=|/=)\s*(.*)$")
STORE = re.compile(r"^([A-Za-z_]\w*)\[(.*)\]\s*(=|\+=|\*=)\s*(.*)$")


class NotLaneable(Exception):
    """The pass has a statement the lanes cannot share, or one they would share at a loss."""


def check_reads(nest: Nest, token_locals: set[str]) -> None:
    """Raise NotLaneable when a factor read in the rule's innermost loop sees the example's
    tokens: over lanes each lane reads a row of its own there, a scattered load per term, where
    one example reads its row in one stride (specs/hmm_prevword.em's transition, which sees the
    word before: its E-step took 18.0 s as lanes, 6.9 s one example at a time)."""
    if not nest.loops:
        return
    innermost = nest.loops[-1][0]
    for step in nest.steps:
        if step.text.startswith("rw") and innermost in step.needs and step.needs & token_locals:
            raise NotLaneable(step.text)


@dataclass
class Node:
    text: str
    children: list["Node"] = field(default_factory=list)

    @property
    def block(self) -> bool:
        return self.text.endswith(":")


def parse(lines: list[str]) -> list[Node]:
    """Indented lines as a tree of statements and blocks."""
    root = Node("root:")
    stack = [(-1, root)]
    for line in lines:
        depth = len(line) - len(line.lstrip(" "))
        while stack[-1][0] >= depth:
            stack.pop()
        node = Node(line.strip())
        stack[-1][1].children.append(node)
        if node.block:
            stack.append((depth, node))
    return root.children


def _bracket_end(text: str, start: int) -> int:
    """The index of the bracket closing the one opened at text[start]."""
    depth = 0
    for i in range(start, len(text)):
        depth += {"[": 1, "(": 1, "]": -1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i
    raise NotLaneable(f"unbalanced: {text}")


@dataclass
class Lanes:
    """What varies by lane: the arrays laid out cell-major by lane, and the locals."""

    arrays: set[str]  # chart-like arrays: cell c of lane l at c * ln + l
    given: dict[str, str]  # lane values the caller passes as arrays: local -> array
    varying: set[str] = field(default_factory=set)  # the locals that differ by lane
    spread: set[str] = field(default_factory=set)  # those kept in an array over the lanes

    def mentions(self, text: str) -> bool:
        """Whether text reads a lane's value: a lane local, or a lane array's element (a lane array
        passed whole, to a matrix product, is shared)."""
        names = set(IDENT.findall(text))
        indexed = set(re.findall(r"(?<![.\w])([A-Za-z_]\w*)\[", text))
        return bool(names & (self.varying | set(self.given)) or indexed & self.arrays)

    def lane_text(self, text: str) -> str:
        """text as lane `lq` runs it: lane arrays' indices spread, lane locals subscripted."""
        out, i = [], 0
        for match in re.finditer(r"(?<![.\w])(" + "|".join(sorted(self.arrays)) + r")\[", text):
            if match.start() < i:
                continue
            end = _bracket_end(text, match.end() - 1)
            inner = text[match.end():end]
            unsigned = re.fullmatch(r"np\.uint64\((.*)\)", inner)
            if unsigned and _bracket_end(inner, len("np.uint64")) == len(inner) - 1:
                inner = unsigned.group(1)
            out.append(self._locals(text[i:match.start()]))
            out.append(f"{match.group(1)}[np.uint64({STRIDE} * ({self._locals(inner)}) + {LANE})]")
            i = end + 1
        out.append(self._locals(text[i:]))
        return "".join(out)

    def _locals(self, text: str) -> str:
        def one(match: re.Match) -> str:
            name = match.group(1)
            if name in self.given:
                return f"{self.given[name]}[{LANE_INDEX}]"
            if name in self.spread:
                return f"rl_{name}[{LANE_INDEX}]"
            return name
        return IDENT.sub(one, text)


def _assigned(node: Node) -> str | None:
    match = ASSIGN.match(node.text)
    return match.group(1) if match else None


def _walk(nodes: list[Node]):
    for node in nodes:
        yield node
        yield from _walk(node.children)


def _find_varying(nodes: list[Node], lanes: Lanes) -> None:
    """Every local assigned from a lane's values, to a fixed point. A local a condition on a lane's
    values updates (a count's `listed`) is shared: the lane loop updates it lane after lane."""
    changed = True
    while changed:
        changed = False
        for node in _walk(nodes):
            name = _assigned(node)
            if name and name not in lanes.varying and lanes.mentions(node.text.split("=", 1)[1]):
                lanes.varying.add(name)
                changed = True


@dataclass
class Group:
    """Consecutive lane statements, one loop over the lanes."""

    nodes: list[Node]


def _kind(node: Node, lanes: Lanes) -> str:
    """'shared' (runs once), 'lane' (in a lane loop), 'sum' (summed over the lanes) or 'block'."""
    if node.block:
        head = node.text
        if head.startswith("if ") and lanes.mentions(head):
            return "lane"
        if lanes.mentions(head) or not head.startswith(("if ", "for ")):
            raise NotLaneable(head)
        return "block"
    if not lanes.mentions(node.text):
        return "shared"
    name = _assigned(node)
    if name is not None:
        return "lane"
    store = STORE.match(node.text)
    if store is None:
        raise NotLaneable(node.text)
    target, index, op, _ = store.groups()
    if target in lanes.arrays or lanes.mentions(index):
        return "lane"
    if op != "+=":
        raise NotLaneable(node.text)
    return "sum"


def _names_of(nodes: list[Node]) -> tuple[set[str], set[str]]:
    """The names nodes (and below) assign or store into, and the names they read."""
    written, read = set(), set()
    for node in _walk(nodes):
        target = ASSIGN.match(node.text) or STORE.match(node.text)
        if target and not node.block:
            written.add(target.group(1))
            read |= set(IDENT.findall(node.text[target.end(1):]))
        else:
            read |= set(IDENT.findall(node.text))
    return written, read


def _independent(node: Node, group: Group) -> bool:
    """Whether the shared statement may run before the lane loop: neither reads nor writes what
    the loop writes (a lane local included, which it may keep in rl_<name>), nor writes what it
    reads."""
    written, read = _names_of(group.nodes)
    written |= {f"rl_{name}" for name in written}
    mine, _ = _names_of([node])
    return not (set(IDENT.findall(node.text)) & written or mine & read)


def _groups(nodes: list[Node], lanes: Lanes, out: list) -> list:
    """nodes as a list of shared nodes, blocks (with their own list) and Groups."""
    for node in nodes:
        kind = _kind(node, lanes)
        if kind == "block":
            out.append((node, _groups(node.children, lanes, [])))
        elif kind == "shared" and out and isinstance(out[-1], Group) and _independent(node, out[-1]):
            out.insert(len(out) - 1, node)
        elif kind == "shared":
            out.append(node)
        else:
            if not out or not isinstance(out[-1], Group):
                out.append(Group([]))
            out[-1].nodes.append(node)
    return out


def _spread(plan: list, lanes: Lanes) -> None:
    """The lane locals a lane loop reads before it sets them (set by another, or summed)."""
    groups = []

    def collect(items: list) -> None:
        for item in items:
            if isinstance(item, Group):
                groups.append(item)
            elif isinstance(item, tuple):
                collect(item[1])
    collect(plan)
    for group in groups:
        set_here: set[str] = set()
        for node in _walk(group.nodes):
            name = _assigned(node)
            match = ASSIGN.match(node.text)
            reads = set(IDENT.findall(match.group(3) if match else node.text)) & lanes.varying
            if match and match.group(2) != "=" and name in lanes.varying:
                reads.add(name)
            for read in reads:
                if read not in set_here:
                    lanes.spread.add(read)
            if name:
                set_here.add(name)


def _render(plan: list, lanes: Lanes, pad: str, counter: list[int]) -> list[str]:
    lines: list[str] = []
    for item in plan:
        if isinstance(item, Group):
            sums = []
            body: list[str] = []
            for node in item.nodes:
                store = STORE.match(node.text) if not node.block else None
                if store and _kind(node, lanes) == "sum":
                    local = f"rl_sum{counter[0]}"
                    counter[0] += 1
                    sums.append((f"{store.group(1)}[{store.group(2)}]", local))
                    body.append(pad + "    " + f"{local} += {lanes.lane_text(store.group(4))}")
                else:
                    body += _lane_lines(node, lanes, pad + "    ")
            lines += [pad + f"{local} = 0.0" for _, local in sums]
            lines.append(pad + f"for {LANE} in range({WIDTH}):")
            lines += body
            lines += [pad + f"{target} += {local}" for target, local in sums]
        elif isinstance(item, tuple):
            node, inner = item
            lines.append(pad + node.text)
            lines += _render(inner, lanes, pad + "    ", counter) or [pad + "    pass"]
        else:
            lines.append(pad + item.text)
    return lines


def _lane_lines(node: Node, lanes: Lanes, pad: str) -> list[str]:
    lines = [pad + lanes.lane_text(node.text)]
    for child in node.children:
        lines += _lane_lines(child, lanes, pad + "    ")
    return lines


def dtype(local: str) -> str:
    """The numpy type of a lane local's array."""
    return "np.int64" if INTEGER.fullmatch(local) else "np.float64"


# A token's row of a table with few rows (an emission's states), over the lanes: each lane reads
# its own token's row, a scattered load per state and lane, and sums its counts into that row, a
# scattered add per state and lane (neither vectorises: a third of the chain's outside pass). So
# once the token is read, the rows the pass reads are gathered for all lanes (rg<q>_<token>, row r
# of the lanes at r * ln: read as a chart is), and its counts are summed there (rs<q>_<token>,
# with the rows it wrote marked in rn<q>_<token>) and added to each lane's row of the counts when
# the token's scope closes, a lane's row at a time (contract.py: gather_rows, add_token_rows, both
# transposing through rb<q>, the table's rows by lane). The rows are asked for (prefetch_token_rows,
# prefetch_rows) as soon as the token is read, and gathered just before the first statement that
# reads them: what runs in between (the inside's matrix product) hides part of the wait on memory
# (the chain's inside gathers took half as long; its E-step 3% less).
TOKEN = re.compile(r"^(token_\d+) = ")
TOKEN_READ = re.compile(r"^(rw\d+) = read_hoisted\(rt(\d+), (.+), (token_\d+)\)$")
COUNT_CELL = re.compile(r"^cell = ro(\d+) \+ \((token_\d+)\) \* rr\1 \+ (.+)$")
COUNT_ADD = re.compile(r"^dense\[cell\] \+= (.+)$")


@dataclass
class TokenRows:
    """The token rows a pass gathers and sums over the lanes, as (table number, token local)."""

    gathered: set[tuple[str, str]] = field(default_factory=set)
    summed: set[tuple[str, str]] = field(default_factory=set)

    def buffers(self) -> list[str]:
        """The lines allocating their arrays, once a pass (rows: the table's, rr<q>)."""
        lines = [f"rg{q}_{t} = lane_rows(rr{q}, {WIDTH})" for q, t in sorted(self.gathered)]
        for q, t in sorted(self.summed):
            lines += [f"rs{q}_{t} = lane_rows(rr{q}, {WIDTH})", f"rn{q}_{t} = np.zeros(rr{q}, np.uint8)"]
        tables = sorted({q for q, _ in self.gathered | self.summed})
        return lines + [f"rb{q} = lane_scratch(rr{q}, {WIDTH})" for q in tables]

    @property
    def arrays(self) -> set[str]:
        return {f"rg{q}_{t}" for q, t in self.gathered} | {f"rs{q}_{t}" for q, t in self.summed}

    def merge(self, other: "TokenRows") -> None:
        self.gathered |= other.gathered
        self.summed |= other.summed


def _count_of(node: Node, token: str, lanes: Lanes) -> tuple[str, str, str] | None:
    """(table, row, value) of a count into a token's row (codegen._count_lines), else None."""
    if node.text != "if counting:" or len(node.children) != 3:
        return None
    cell, add, listing = node.children
    at, value = COUNT_CELL.match(cell.text), COUNT_ADD.match(add.text)
    if not (at and value and listing.text.startswith("if tracked")) or at.group(2) != token:
        return None
    if lanes.mentions(at.group(3)):
        return None
    return at.group(1), at.group(3), value.group(1)


def _rewrite_rows(nodes: list[Node], token: str, lanes: Lanes, rows: TokenRows, found: set) -> bool:
    """Reads and counts of `token`'s rows in nodes (and below) as reads and sums of the lanes'
    arrays, their tables into `found`; False (nothing changed) when something below assigns the
    token again."""
    if any(TOKEN.match(n.text) and n.text.startswith(token + " ") for n in _walk(nodes)):
        return False
    _rewrite_in(nodes, token, lanes, rows, found)
    return True


def _rewrite_in(nodes: list[Node], token: str, lanes: Lanes, rows: TokenRows, found: set) -> None:
    """_rewrite_rows in place, not into a condition on a lane's values (what it guards runs lane
    by lane). A count loses its guard (`if counting:`): the lanes sum it whether or not the pass
    counts (add_token_rows, which adds the sums to the counts, keeps it), so the sum joins the
    lane loop before it."""
    q = 0
    while q < len(nodes):
        node = nodes[q]
        read = TOKEN_READ.match(node.text)
        count = _count_of(node, token, lanes)
        if read and read.group(4) == token and not lanes.mentions(read.group(3)):
            local, table, row = read.group(1), read.group(2), read.group(3)
            node.text = f"{local} = rg{table}_{token}[np.uint64({row})]"
            rows.gathered.add((table, token))
            found.add(("read", table))
        elif count is not None:
            table, row, value = count
            nodes[q:q + 1] = [Node(f"rn{table}_{token}[np.uint64({row})] = 1"),
                              Node(f"rs{table}_{token}[np.uint64({row})] += {value}")]
            rows.summed.add((table, token))
            found.add(("count", table))
            q += 1
        elif not (node.block and lanes.mentions(node.text)):
            _rewrite_in(node.children, token, lanes, rows, found)
        q += 1


def _token_rows(nodes: list[Node], lanes: Lanes, rows: TokenRows) -> list[Node]:
    """nodes with each lane token's reads and counts of a table's rows rewritten (TokenRows): the
    rows asked for right after the token is read, gathered before their first reader, the
    counts' additions where its scope closes."""
    for node in nodes:
        node.children = _token_rows(node.children, lanes, rows)
    out: list[Node] = []
    for q, node in enumerate(nodes):
        out.append(node)
        token = TOKEN.match(node.text)
        if not token or node.block or token.group(1) not in lanes.varying:
            continue
        name = token.group(1)
        scope = nodes[q + 1:]
        ends = [r for r, n in enumerate(scope) if TOKEN.match(n.text) and n.text.startswith(name + " ")]
        scope = scope[:ends[0]] if ends else scope
        found: set = set()
        size = len(scope)
        if not _rewrite_rows(scope, name, lanes, rows, found):
            continue
        read = [t for kind, t in sorted(found) if kind == "read"]
        counted = [t for kind, t in sorted(found) if kind == "count"]
        out += [Node(f"prefetch_token_rows(rt{t}, rl_{name}, {WIDTH})") for t in read]
        if counted:
            out.append(Node("if counting:", [Node(f"prefetch_rows(dense, ro{t}, rr{t}, rl_{name}, {WIDTH})")
                                             for t in counted]))
        # the gathers and the flush are placed when the loop reaches them
        for t in read:
            first = next(r for r, n in enumerate(scope) if any(f"rg{t}_{name}" in m.text for m in _walk([n])))
            scope.insert(first, Node(f"gather_rows(rt{t}, rl_{name}, {WIDTH}, rg{t}_{name}, rb{t})"))
        if counted:
            scope.append(Node("if counting:", [Node(
                f"listed = add_token_rows(dense, mark, touched, listed, ro{t}, rr{t}, rl_{name}, {WIDTH}, "
                f"rs{t}_{name}, rn{t}_{name}, rb{t})") for t in counted]))
        nodes[q + 1:q + 1 + size] = scope
    return out


def lane_code(lines: list[str], arrays: set[str], given: dict[str, str], varying: set[str] = frozenset()
              ) -> tuple[list[str], list[str], TokenRows]:
    """The lines of a one-example pass over the lanes, the locals they keep in arrays over the
    lanes (`rl_<name>`, of length ln, which the caller allocates) and the token rows they gather
    and sum (whose arrays the caller allocates: TokenRows.buffers). `arrays`: the chart-like
    arrays; `given`: lane values the caller passes as arrays (local -> array); `varying`: locals
    the caller's own lines keep in arrays over the lanes (`rl_<name>`). Raises NotLaneable."""
    tree = parse(lines)
    lanes = Lanes(set(arrays), dict(given), set(varying), set(varying))
    _find_varying(tree, lanes)
    rows = TokenRows()
    tree = _token_rows(tree, lanes, rows)
    lanes.arrays |= rows.arrays
    _find_varying(tree, lanes)
    plan = _groups(tree, lanes, [])
    _spread(plan, lanes)
    lanes.spread |= {token for _, token in rows.gathered | rows.summed}
    return _render(plan, lanes, "", [0]), sorted(lanes.spread), rows


def _indent(lines: list[str], pad: int = 4) -> list[str]:
    return [" " * pad + line for line in lines]


def _all_or_none(flag: str, local: str, if_all: list[str]) -> list[str]:
    """Count the lanes where `flag` holds (in `local`): all of them -> if_all; some -> return False
    (the lanes' charts differ in which levels are empty: the examples go one by one)."""
    return [f"{local} = 0", f"for {LANE} in range({WIDTH}):", f"    if {flag}:", f"        {local} += 1",
            f"if 0 < {local} < {WIDTH}:", "    return False", f"if {local} == {WIDTH}:", *_indent(if_all)]


def lanes_inside(reference: list[str], values: list[str], top: list[str], scale: list[str], goal: list[str],
                 products: list[str]) -> tuple[list[str], list[str]]:
    """The inside pass over the lanes from the one-example pass's pieces (codegen._inside): the
    level's reference scale (`ref`), its values, their largest (`top`) and the scaling by its inverse;
    then log Z per lane into log_z. live[lev] says whether the level holds anything (in every
    lane, or in none); `products`: the contractions' arrays (contraction.py). The lines and the
    arrays over the lanes they use."""
    arrays, given, varying = {"chart", "ls", *products}, {"first": "firsts"}, {"ref", "top", "shrink", "total"}
    spread: set[str] = set(varying)
    pieces, rows = [], TokenRows()
    for piece in (reference, values, top, scale, goal):
        code, locals_, piece_rows = lane_code(piece, arrays, given, varying)
        pieces.append(code)
        spread |= set(locals_)
        rows.merge(piece_rows)
    reference, values, top, scale, goal = pieces
    level = f"ls[np.uint64({STRIDE} * lev + {LANE})]"
    ref_at, top_at, total_at = (f"rl_{name}[{LANE_INDEX}]" for name in ("ref", "top", "total"))
    lines = [*rows.buffers(), "for lev in range(n + 3):", "    live[lev] = 0", f"    for {LANE} in range({WIDTH}):",
             f"        {level} = -np.inf", f"        {ref_at} = -np.inf", *_indent(reference)]
    lines += _indent(_all_or_none(f"{ref_at} == -np.inf", "rdead", ["continue"]))
    lines += _indent([f"for {LANE} in range({WIDTH}):", f"    {level} = {ref_at}", *values, *top])
    lines += _indent(_all_or_none(f"not {top_at} > 0.0", "rdead",
                                  [f"for {LANE} in range({WIDTH}):", f"    {level} = -np.inf", "continue"]))
    shrink_at = f"rl_shrink[{LANE_INDEX}]"
    lines += _indent([*scale, f"for {LANE} in range({WIDTH}):", f"    {level} = {ref_at} - np.log({shrink_at})", "live[lev] = 1"])
    lines += [*goal, f"for {LANE} in range({WIDTH}):", f"    log_z[{LANE_INDEX}] = -np.inf", f"    if {total_at} > 0.0:",
              f"        log_z[{LANE_INDEX}] = np.log({total_at}) + ls[np.uint64({STRIDE} * glev + {LANE})]"]
    return lines, sorted(spread)


def lanes_outside(start: list[str], levels: list[str], close: list[str], products: list[str]
                  ) -> tuple[list[str], list[str]]:
    """The outside pass over the lanes from the one-example pass's pieces (codegen._outside): the
    goal's outside (the lane's weight folded in, so the counts take none), each level's part
    marginals and counts, the small tables' counts. The lines and the arrays over the lanes."""
    arrays, given = {"chart", "ls", "out", *products}, {"first": "firsts", "log_z": "log_zs", "weight": "weights"}
    spread: set[str] = set()
    pieces, rows = [], TokenRows()
    for piece in (start, levels, close):
        code, locals_, piece_rows = lane_code(piece, arrays, given)
        pieces.append(code)
        spread |= set(locals_)
        rows.merge(piece_rows)
    start, levels, close = pieces
    lines = [*rows.buffers(), *start, "for lev in range(n + 2, -1, -1):", "    if live[lev] == 0:", "        continue", *_indent(levels),
             *close]
    return lines, sorted(spread)
