"""Lark grammar -> IR. Syntax errors become the same file:line:column diagnostics as checks."""
from __future__ import annotations

import dataclasses
import functools
import unicodedata
from importlib import resources
from pathlib import Path

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError

from emc.spec import ir
from emc.spec.errors import DiagnosticSink, EmcError

# How the parser's terminal names read in a message.
_TERMINAL_WORDS = {
    "NAME": "a name", "NUMBER": "a number", "SIGNED_NUMBER": "a number", "STRING": 'a "string"',
    "BAR": "'|'", "COLON": "':'", "COMMA": "','", "DOT": "'.'", "LPAR": "'('", "RPAR": "')'",
    "EQUAL": "'='", "PLUS": "'+'", "MINUS": "'-'", "STAR": "'*'", "SLASH": "'/'",
    "CIRCUMFLEX": "'^'", "BOUND_OP": "'>=' or '<='", "$END": "the end of the file",
}


@functools.cache
def _parser() -> Lark:
    try:
        grammar = resources.files("emc.grammars").joinpath("em.lark").read_text(encoding="utf-8")
    except ModuleNotFoundError:  # run from a source checkout (python -m emc.cli in the repo), not installed
        grammar = (Path(__file__).resolve().parents[2] / "grammars" / "em.lark").read_text(encoding="utf-8")
    # cache=True: lark keeps the built LALR tables in the temp folder (keyed by grammar and options),
    # so a command starts without rebuilding them (~0.4 s)
    return Lark(grammar, parser="lalr", propagate_positions=True, maybe_placeholders=True, cache=True,
                lexer_callbacks={"NAME": _name})


class _NotAName(Exception):
    """A run of characters the grammar's NAME took, of which one cannot be in a name."""

    def __init__(self, token: Token, at: int):
        super().__init__(str(token))
        self.token, self.at = token, at


def _name(token: Token) -> Token:
    """A name as Python reads an identifier (PEP 3131): letters of any script, marks, digits and _,
    not starting with a digit; NFKC-normalised, so that two spellings of one letter (é as one
    character or as e and a combining accent) are one name."""
    if not token.isidentifier():
        at = next(i for i, char in enumerate(token) if not (char if i == 0 else "_" + char).isidentifier())
        raise _NotAName(token, at)
    name = unicodedata.normalize("NFKC", str(token))
    return token if name == token else Token.new_borrow_pos(token.type, name, token)


def _pos(meta) -> ir.Pos:
    return ir.Pos(meta.line, meta.column, meta.end_line, meta.end_column)


def _tok_pos(tok: Token) -> ir.Pos:
    return ir.Pos(tok.line, tok.column, tok.end_line, tok.end_column)


@dataclasses.dataclass(frozen=True)
class _Misworded:
    """A statement whose grammar reads a name where the language expects one word (the word is
    not a keyword there, so that it stays free as a name): reported by parse_text."""

    pos: ir.Pos
    found: str
    expected: str
    hint: str


@v_args(meta=True)
class _ToIR(Transformer):
    """Builds IR nodes bottom-up; statements are collected into a Spec by `parse_text`."""

    # expressions -----------------------------------------------------------------------------
    def signed_number(self, meta, children):
        (tok,) = children
        return ir.Number(float(tok), _tok_pos(tok))

    def number(self, meta, children):
        (tok,) = children
        return ir.Number(float(tok), _tok_pos(tok))

    def attr_step(self, meta, children):
        name, arg = children
        if isinstance(arg, Token):  # a "string" argument: a file (x.vectors("emb.txt"))
            return ir.AttrStep(str(name), str(arg)[1:-1], _pos(meta))
        return ir.AttrStep(str(name), None if arg is None else arg.value, _pos(meta))

    def attr_ref(self, meta, children):
        base, *steps = children
        return ir.Attr(ir.AttrRef(str(base), tuple(steps), _pos(meta)))

    def call(self, meta, children):
        name, arg = children
        return ir.Call(str(name), arg, _pos(meta), _tok_pos(name))

    def _binary(self, op, meta, children):
        left, right = children
        return ir.Binary(op, left, right, _pos(meta))

    def add(self, meta, children):
        return self._binary("+", meta, children)

    def sub(self, meta, children):
        return self._binary("-", meta, children)

    def mul(self, meta, children):
        return self._binary("*", meta, children)

    def div(self, meta, children):
        return self._binary("/", meta, children)

    def pow(self, meta, children):
        return self._binary("^", meta, children)

    def neg(self, meta, children):
        (operand,) = children
        if isinstance(operand, ir.Number):
            return ir.Number(-operand.value, _pos(meta))
        return ir.Unary("-", operand, _pos(meta))

    # declarations ----------------------------------------------------------------------------
    def model_decl(self, meta, children):
        (name,) = children
        return ir.ModelName(str(name), _tok_pos(name))

    def observed_item(self, meta, children):
        name, kind = children
        return ir.Observed(str(name), str(kind), _pos(meta), _tok_pos(kind))

    def observed_decl(self, meta, children):
        return list(children)

    def from_arg(self, meta, children):
        target, source = children
        return ir.StructArg("from", None, (str(target), str(source)), _pos(meta), _pos(meta))

    def keyword_arg(self, meta, children):
        name, value = children
        if isinstance(value, ir.Number):
            return ir.StructArg("keyword", str(name), value.value, _pos(meta), value.pos)
        return ir.StructArg("keyword", str(name), str(value[0]), _pos(meta), _tok_pos(value[0]))

    def word(self, meta, children):
        return children  # a bare word (yes/no/...) as a one-element list, told apart from Number

    def positional_arg(self, meta, children):
        (name,) = children
        return ir.StructArg("positional", None, str(name), _pos(meta), _tok_pos(name))

    def latent_decl(self, meta, children):
        name, structure, *args = children
        return ir.Latent(str(name), str(structure), tuple(a for a in args if a is not None),
                         _pos(meta), _tok_pos(name), _tok_pos(structure))

    def attr_list(self, meta, children):
        return tuple(child.ref for child in children)

    def named_option_arg(self, meta, children):
        name, value = children
        return ir.OptionArg(str(name), value, _pos(meta))

    def plain_option_arg(self, meta, children):
        (value,) = children
        return ir.OptionArg(None, value, _pos(meta))

    def option_args(self, meta, children):
        return tuple(children)

    def smooth_option(self, meta, children):
        kind, args = children
        return ir.Option("smooth", str(kind), args or (), None, _pos(meta), _tok_pos(kind))

    def prior_option(self, meta, children):
        kind, args = children
        return ir.Option("prior", str(kind), args or (), None, _pos(meta), _tok_pos(kind))

    def fixed_option(self, meta, children):
        (path,) = children
        return ir.Option("fixed", None, (), None if path is None else str(path)[1:-1], _pos(meta), _pos(meta))

    def shares_option(self, meta, children):
        (name,) = children
        return ir.Option("shares", str(name), (), None, _pos(meta), _tok_pos(name))

    def features_option(self, meta, children):
        (refs,) = children
        args = tuple(ir.OptionArg(None, ir.Attr(ref), ref.pos) for ref in refs)
        return ir.Option("features", None, args, None, _pos(meta), _pos(meta))

    def l2_option(self, meta, children):
        (value,) = children
        return ir.Option("l2", None, (ir.OptionArg(None, value, value.pos),), None, _pos(meta), _pos(meta))

    def block_decl(self, meta, children):
        name, outcome, _bar, context, *options = children
        return ir.Block(str(name), outcome, context or (), tuple(options), _pos(meta), _tok_pos(name))

    def weight_decl(self, meta, children):
        name, expr = children
        return ir.Weight(None if name is None else str(name), expr, _pos(meta))

    def param_decl(self, meta, children):
        name, value = children
        return ir.Param(str(name), value.value, _pos(meta), _tok_pos(name))

    def constraint_decl(self, meta, children):
        name, attrs, path, op, bound = children
        return ir.Constraint(str(name), attrs, str(path)[1:-1], str(op), bound.value, _pos(meta), _tok_pos(name),
                             _tok_pos(path), bound.pos)

    def symmetric_constraint_decl(self, meta, children):
        name, latent = children
        return ir.SymmetricConstraint(str(name), str(latent), _pos(meta), _tok_pos(name), _tok_pos(latent))

    def example_constraint_decl(self, meta, children):
        name, word, attr, op, bound = children
        if word != "count":
            return _Misworded(_tok_pos(word), str(word), "count",
                              "a per-example constraint reads `E[count per a.source] <= 1`")
        return ir.ExampleConstraint(str(name), attr.ref, str(op), bound.value, _pos(meta), _tok_pos(name), bound.pos)

    def sparsity_constraint_decl(self, meta, children):
        name, state, word, penalty = children
        return ir.SparsityConstraint(str(name), state.ref, word.ref, penalty.value, _pos(meta), _tok_pos(name),
                                     penalty.pos)


    # structures written as rules ---------------------------------------------------------------
    def ix_name(self, meta, children):
        (tok,) = children
        return ir.Lin(((str(tok), 1),), 0, _tok_pos(tok))

    def ix_int(self, meta, children):
        (tok,) = children
        return ir.Lin((), int(tok), _tok_pos(tok))

    def _ix_combine(self, meta, children, sign):
        left, right = children
        coefs = dict(left.terms)
        for name, coef in right.terms:
            coefs[name] = coefs.get(name, 0) + sign * coef
        return ir.Lin(tuple(coefs.items()), left.const + sign * right.const, _pos(meta))

    def ix_add(self, meta, children):
        return self._ix_combine(meta, children, 1)

    def ix_sub(self, meta, children):
        return self._ix_combine(meta, children, -1)

    def ix_range(self, meta, children):
        lo, hi = children
        return ir.IxRange(lo, hi, _pos(meta))

    def keyword_param(self, meta, children):
        name, value = children
        return ("arg", str(name), int(value), _pos(meta))

    def observed_param(self, meta, children):
        (name,) = children
        return ("observed", str(name), None, _pos(meta))

    def structure_decl(self, meta, children):
        name, *params = children
        params = [p for p in params if p is not None]
        return ir.StructureDecl(str(name), tuple(p[1] for p in params if p[0] == "observed"),
                                tuple((p[1], p[2], p[3]) for p in params if p[0] == "arg"), (), (),
                                _pos(meta), _tok_pos(name))

    def index_decl(self, meta, children):
        name, rng = children
        return ir.IndexDecl(str(name), rng, _pos(meta))

    def item_decl(self, meta, children):
        name, *indices = children
        return ir.ItemDecl(str(name), tuple(i for i in indices if i is not None), _pos(meta), _tok_pos(name))

    def item_ref(self, meta, children):
        name, *args = children
        return ir.ItemRef(str(name), tuple(a for a in args if a is not None), _pos(meta))

    def var_range(self, meta, children):
        name, rng = children
        return ir.VarRange(str(name), rng, _pos(meta))

    def for_clause(self, meta, children):
        return ("for", tuple(children))

    def token_attr(self, meta, children):
        name, observed, index = children
        return ir.AttrDef(str(name), "token", str(observed), index, None, _pos(meta))

    def span_attr(self, meta, children):
        name, observed, start, end = children
        return ir.AttrDef(str(name), "span", str(observed), start, None, _pos(meta), end)

    def numeric_attr(self, meta, children):
        name, value, rng = children
        return ir.AttrDef(str(name), "numeric", None, value, rng, _pos(meta))

    def where_clause(self, meta, children):
        return ("where", tuple(children))

    def label_clause(self, meta, children):
        observed, start, end, variable = children
        return ("labels", (str(observed), start, end, str(variable)))

    def attach_clause(self, meta, children):
        dependent, head = children
        return ("attaches", (dependent, head))

    def body(self, meta, children):
        return ("body", tuple(children))

    def _rule(self, kind, meta, name, params, head, rest):
        parts = {r[0]: r[1] for r in rest if isinstance(r, tuple)}
        return ir.RuleDecl(kind, None if name is None else str(name), params, head, parts.get("body", ()),
                           parts.get("for", ()), parts.get("where", ()), _pos(meta),
                           _pos(meta) if name is None else _tok_pos(name), parts.get("labels"), parts.get("attaches"))

    def axiom_decl(self, meta, children):
        head, *rest = children
        return self._rule("axiom", meta, None, (), head, rest)

    def goal_decl(self, meta, children):
        head, *rest = children
        return self._rule("goal", meta, None, (), head, rest)

    def part_decl(self, meta, children):
        name, *rest = children
        params = tuple(str(c) for c in rest if isinstance(c, Token) and c.type == "NAME")
        head = next(c for c in rest if isinstance(c, ir.ItemRef))
        return self._rule("part", meta, name, params, head, rest)


# The longest spec emc reads. The reference specs are under 3 KB; a 1.2 MB spec of 40,000 blocks
# took 27 s and 190 MB to parse alone, and over 90 s and 3 GB to compile.
MAX_SPEC_CHARACTERS = 65_536


def parse_text(text: str, path: str = "<spec>") -> ir.Spec:
    """Parse spec source into IR; raises SpecError (with position and caret) on a syntax error."""
    if len(text) > MAX_SPEC_CHARACTERS:
        raise EmcError(f"{path}: error: the spec is {len(text):,} characters, more than the {MAX_SPEC_CHARACTERS:,} "
                       f"emc reads (the reference specs are under 3,000): a model this big takes minutes and "
                       f"gigabytes to compile; give it fewer blocks")
    sink = DiagnosticSink(path, text)
    try:
        tree = _parser().parse(text)
        statements = _ToIR().transform(tree).children
    except UnexpectedInput as err:
        _report_syntax_error(sink, err, text)
        sink.raise_if_any()
        raise  # unreachable: the sink always holds the error
    except _NotAName as err:
        _report_not_a_name(sink, err)
        sink.raise_if_any()
        raise  # unreachable: the sink always holds the error
    except VisitError as err:  # a number too large for float, and the like
        raise EmcError(f"{path}: error: {err.orig_exc}") from None

    spec = ir.Spec(path=path, text=text)
    for stmt in statements:
        if isinstance(stmt, ir.ModelName):
            if spec.model is not None:
                sink.error(stmt.pos, "a spec declares one model name", f"the first is '{spec.model.name}'")
            spec.model = stmt
        elif isinstance(stmt, list):
            spec.observed.extend(stmt)
        elif type(stmt) in _LIST_OF:
            getattr(spec, _LIST_OF[type(stmt)]).append(stmt)
        elif isinstance(stmt, (ir.ItemDecl, ir.RuleDecl)):
            _attach_to_structure(spec, sink, stmt)
        elif isinstance(stmt, _Misworded):
            sink.error(stmt.pos, f"unexpected {stmt.found!r}", f"expected '{stmt.expected}': {stmt.hint}")
    sink.raise_if_any()
    return spec


# the Spec list each kind of statement joins, in source order
_LIST_OF = {ir.Latent: "latents", ir.Block: "blocks", ir.Weight: "weights", ir.Param: "params",
            ir.Constraint: "constraints", ir.ExampleConstraint: "example_constraints",
            ir.SymmetricConstraint: "symmetric_constraints", ir.SparsityConstraint: "sparsity_constraints",
            ir.StructureDecl: "structures"}


def _attach_to_structure(spec: ir.Spec, sink: DiagnosticSink, stmt: ir.ItemDecl | ir.RuleDecl) -> None:
    """Item, axiom, part and goal statements belong to the `structure` declared before them."""
    if not spec.structures:
        keyword = "item" if isinstance(stmt, ir.ItemDecl) else stmt.kind
        sink.error(stmt.pos, f"'{keyword}' belongs to a structure written as rules",
                   "declare it first: `structure NAME(x, arg=value, ...)`")
        return
    last = spec.structures[-1]
    if isinstance(stmt, ir.ItemDecl):
        spec.structures[-1] = dataclasses.replace(last, items=last.items + (stmt,))
    else:
        spec.structures[-1] = dataclasses.replace(last, rules=last.rules + (stmt,))


def parse_file(path: str | Path) -> ir.Spec:
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise EmcError(f"{path}: error: cannot read the spec ({err.strerror})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise EmcError(f"{path}:{line}: error: the spec is not valid UTF-8 "
                       f"(byte 0x{raw[err.start]:02x} at offset {err.start})") from None
    # an editor's byte order mark (Windows Notepad writes one) is no character of the spec
    return parse_text(text.removeprefix("\ufeff"), str(path))


def _report_syntax_error(sink: DiagnosticSink, err: UnexpectedInput, text: str) -> None:
    line, column = getattr(err, "line", 0) or 0, getattr(err, "column", 0) or 0
    if isinstance(err, UnexpectedEOF) or line <= 0:
        lines = text.splitlines() or [""]
        line, column = len(lines), len(lines[-1]) + 1
        sink.error(ir.Pos(line, column, line, column + 1), "the spec ends in the middle of a statement",
                   _expected_hint(getattr(err, "expected", None)))
        return
    if isinstance(err, UnexpectedCharacters):
        char = text[err.pos_in_stream] if err.pos_in_stream < len(text) else ""
        hint = _expected_hint(err.allowed)
        if char.isspace():  # a space outside ASCII, which NAME leaves out (a no-break space)
            hint = f"{char!r} ({unicodedata.name(char, 'a space')}) does not separate words here: write ' '"
        sink.error(ir.Pos(line, column, line, column + 1), f"unexpected character {char!r}", hint)
        return
    assert isinstance(err, UnexpectedToken)
    tok = err.token
    hint = _expected_hint(err.expected)
    history = getattr(err, "token_history", None) or [None]  # [None] at the spec's first token
    if tok.type == "DOT" and getattr(history[-1], "type", None) == "MAX":
        # right after `E[`, `max` opens posterior sparsity's `E[max z per x]`: it cannot be a variable there
        hint = "'max' is a keyword after 'E[' (posterior sparsity: E[max z per x]): give the latent variable another name"
    if tok.type == "$END":
        lines = text.rstrip().splitlines() or [""]
        line, column = len(lines), len(lines[-1]) + 1
        sink.error(ir.Pos(line, column, line, column + 1), "the spec ends in the middle of a statement", hint)
        return
    before = _previous_token_end(text, tok.start_pos)
    if before is not None and before[0] < line:
        # the statement on an earlier line is unfinished: point there, not at the next keyword
        sink.error(ir.Pos(before[0], before[1], before[0], before[1] + 1),
                   f"this statement is not finished (the next line starts with {str(tok)!r})", hint)
        return
    width = max(len(str(tok)), 1)
    sink.error(ir.Pos(line, column, line, column + width), f"unexpected {str(tok)!r}", hint)


def _report_not_a_name(sink: DiagnosticSink, err: _NotAName) -> None:
    char, line, column = err.token[err.at], err.token.line, err.token.column + err.at
    what = unicodedata.name(char, f"U+{ord(char):04X}")
    hint = ("a name starts with a letter (of any script) or _" if err.at == 0 and ("_" + char).isidentifier() else
            f"a name is letters (of any script), marks, digits and _, and {char!r} ({what}) is none of these")
    sink.error(ir.Pos(line, column, line, column + 1), f"unexpected character {char!r}", hint)


def _previous_token_end(text: str, offset: int) -> tuple[int, int] | None:
    """Line and column just after the last non-blank, non-comment character before offset."""
    lines = text[:offset].split("\n")
    for back in range(len(lines) - 1, -1, -1):
        code = lines[back].split("#", 1)[0].rstrip()
        if code:
            return back + 1, len(code) + 1
    return None


def _expected_hint(expected) -> str | None:
    if not expected:
        return None
    words = []
    for name in sorted(expected):
        if name in _TERMINAL_WORDS:
            words.append(_TERMINAL_WORDS[name])
            continue
        try:
            pattern = _parser().get_terminal(name).pattern
        except KeyError:
            continue
        if pattern.type == "str":
            words.append(repr(pattern.value))
    words = sorted(set(words))
    if not words:
        return None
    return "expected " + (words[0] if len(words) == 1 else "one of " + ", ".join(words))
