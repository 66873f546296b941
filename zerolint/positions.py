"""Line and column numbers for LibCST nodes, without LibCST's PositionProvider.

PositionProvider regenerates the whole module while tracking every token, which costs
more than parsing it. zerolint only needs positions of the statements and calls that
appear on a reported path, so it pairs each LibCST statement with the statement Python's
own parser (``ast``, which records positions for free) finds at the same place in a
pre-order walk; both parsers see the same statements in the same order. A call is
located by its rank among the calls of its statement. Should the two walks ever disagree,
the slow, exact PositionProvider is used instead. A module ``cst_build`` built whole
needs no second parse of the module: the build kept each statement's place, and a
statement's node is parsed from its own lines when asked for (``FragmentStatements``).
"""

from __future__ import annotations

import ast
import dataclasses
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from zerolint.source_text import Source, first_lineno

if TYPE_CHECKING:
    from zerolint.cst_build import Spans

Span = tuple[int, int, int, int]  # line (1-based), col (0-based chars), end_line, end_col

_SMALL = (
    cst.Expr,
    cst.Assign,
    cst.AugAssign,
    cst.AnnAssign,
    cst.Return,
    cst.Raise,
    cst.Assert,
    cst.Import,
    cst.ImportFrom,
    cst.Pass,
    cst.Break,
    cst.Continue,
    cst.Del,
    cst.Global,
    cst.Nonlocal,
)


def _cst_block(block: cst.BaseSuite | None) -> Iterator[cst.CSTNode]:
    if block is None:
        return
    yield from _cst_stmts(block.body)


def _cst_stmts(stmts) -> Iterator[cst.CSTNode]:
    for stmt in stmts:
        kind = type(stmt)
        if kind is cst.SimpleStatementLine:
            yield from stmt.body
            continue
        yield stmt
        if not _is_small(kind):
            yield from _cst_children(stmt)


_SMALL_KINDS: dict[type, bool] = {}


def _is_small(kind: type) -> bool:
    """issubclass() once per class: isinstance() against LibCST's abstract classes goes
    through ABCMeta in Python."""
    found = _SMALL_KINDS.get(kind)
    if found is None:
        found = _SMALL_KINDS[kind] = issubclass(kind, (*_SMALL, cst.BaseSmallStatement))
    return found


def _cst_children(stmt: cst.CSTNode) -> Iterator[cst.CSTNode]:
    if type(stmt) is cst.If:
        yield from _cst_block(stmt.body)
        orelse = stmt.orelse
        if type(orelse) is cst.If:
            yield orelse
            yield from _cst_children(orelse)
        elif orelse is not None:
            yield from _cst_block(orelse.body)
    elif isinstance(stmt, (cst.For, cst.While)):
        yield from _cst_block(stmt.body)
        if stmt.orelse is not None:
            yield from _cst_block(stmt.orelse.body)
    elif isinstance(stmt, (cst.Try, cst.TryStar)):
        yield from _cst_block(stmt.body)
        for handler in stmt.handlers:
            yield from _cst_block(handler.body)
        if stmt.orelse is not None:
            yield from _cst_block(stmt.orelse.body)
        if stmt.finalbody is not None:
            yield from _cst_block(stmt.finalbody.body)
    elif type(stmt) is cst.Match:
        for case in stmt.cases:
            yield from _cst_block(case.body)
    elif hasattr(stmt, "body") and isinstance(stmt.body, cst.BaseSuite):
        yield from _cst_block(stmt.body)


def _ast_stmts(stmts: list[ast.stmt]) -> Iterator[ast.stmt]:
    for stmt in stmts:
        yield stmt
        for block in _blocks_of(stmt):
            yield from _ast_stmts(block)


_PAIRS: dict[type, tuple[type, ...]] = {
    cst.Expr: (ast.Expr,),
    cst.Assign: (ast.Assign,),
    cst.AugAssign: (ast.AugAssign,),
    cst.AnnAssign: (ast.AnnAssign,),
    cst.Return: (ast.Return,),
    cst.Raise: (ast.Raise,),
    cst.Assert: (ast.Assert,),
    cst.Import: (ast.Import,),
    cst.ImportFrom: (ast.ImportFrom,),
    cst.Pass: (ast.Pass,),
    cst.Break: (ast.Break,),
    cst.Continue: (ast.Continue,),
    cst.Del: (ast.Delete,),
    cst.Global: (ast.Global,),
    cst.Nonlocal: (ast.Nonlocal,),
    cst.If: (ast.If,),
    cst.For: (ast.For, ast.AsyncFor),
    cst.While: (ast.While,),
    cst.With: (ast.With, ast.AsyncWith),
    cst.FunctionDef: (ast.FunctionDef, ast.AsyncFunctionDef),
    cst.ClassDef: (ast.ClassDef,),
    cst.Try: (ast.Try,),
    cst.Match: (ast.Match,),
}


@dataclass(slots=True)
class PositionIndex:
    """Positions of one module's statements and calls."""

    source: Source
    stmts: dict[int, ast.stmt]
    exact: dict[int, Span] | None = None  # PositionProvider fallback
    # Where cst_build placed each statement (placed_index): a statement's span without
    # its node.
    placed: Spans | None = None
    # Per statement: its calls in both trees, paired by rank (computed once).
    calls: dict[int, tuple[list[cst.Call], list[ast.Call]]] = field(default_factory=dict)

    def _char_col(self, line: int, byte_col: int) -> int:
        if 1 <= line < len(self.source.starts):
            return len(self.source.line(line)[:byte_col].decode("utf-8", "replace"))
        return byte_col

    def _span(self, node: ast.AST) -> Span:
        line, end_line = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
        return self._at(line, node.col_offset, end_line, node.end_col_offset or 0)  # type: ignore[attr-defined]

    def _at(self, line: int, col: int, end_line: int, end_col: int) -> Span:
        return (line, self._char_col(line, col), end_line, self._char_col(end_line, end_col))

    def statement(self, stmt: cst.CSTNode) -> Span | None:
        if self.exact is not None:
            return self.exact.get(id(stmt))
        if self.placed is not None:
            place = self.placed.get(id(stmt))
            return self._at(*place[1:]) if place is not None else None
        found = self.stmts.get(id(stmt))
        return self._span(found) if found is not None else None

    def shown(self, stmt: cst.CSTNode) -> Span | None:
        """The statement's span from the line its text starts at: a def's or a class's
        first decorator, above its line (``statement`` starts at the ``def``, as Python's
        tree does)."""
        span = self.statement(stmt)
        if span is None or self.exact is not None:
            return span  # LibCST's own positions start at the first decorator
        if self.placed is not None:
            return (self.placed[id(stmt)][0], *span[1:])
        return (first_lineno(self.stmts[id(stmt)]), *span[1:])

    def call(self, stmt: cst.CSTNode, call: cst.Call) -> Span | None:
        """Position of ``call``, a Call node somewhere inside the statement ``stmt``; the
        statement's where the two parsers do not pair its calls."""
        found = self.placed_call(stmt, call)
        if found is not None or self.exact is not None:
            return found
        return self.statement(stmt) if id(stmt) in self.stmts and self._has(stmt, call) else None

    def placed_call(self, stmt: cst.CSTNode, call: cst.Call) -> Span | None:
        """Position of ``call`` itself: None where the two parsers do not pair it."""
        if self.exact is not None:
            return self.exact.get(id(call))
        found = self.call_node(stmt, call)
        return self._span(found) if found is not None else None

    def _has(self, stmt: cst.CSTNode, call: cst.Call) -> bool:
        return any(c is call for c in self.calls.get(id(stmt), ((), ()))[0])

    def call_node(self, stmt: cst.CSTNode, call: cst.Call) -> ast.Call | None:
        """Python's node for ``call``, a Call node somewhere inside the statement ``stmt``."""
        found = self.stmts.get(id(stmt))
        if found is None:
            return None
        pair = self.calls.get(id(stmt))
        if pair is None:
            ast_calls = sorted(
                (
                    n
                    for part in _ast_header(found)
                    for n in ast.walk(part)
                    if isinstance(n, ast.Call)
                ),
                key=lambda n: (
                    n.lineno,
                    n.col_offset,
                    -(n.end_lineno or 0),
                    -(n.end_col_offset or 0),
                ),
            )
            pair = self.calls[id(stmt)] = (statement_calls(stmt), ast_calls)
        cst_calls, ast_calls = pair
        for i, candidate in enumerate(cst_calls):
            if candidate is call:
                if i < len(ast_calls) and len(ast_calls) == len(cst_calls):
                    return ast_calls[i]
                return None
        return None


def _blocks_of(stmt: ast.stmt) -> list[list[ast.stmt]]:
    """The blocks of statements nested in ``stmt``, in source order (a try's handlers come
    before its else and finally; a match's cases are its blocks)."""
    out = [getattr(stmt, "body", None)]
    out += [h.body for h in getattr(stmt, "handlers", ())]
    out += [getattr(stmt, "orelse", None), getattr(stmt, "finalbody", None)]
    out += [c.body for c in getattr(stmt, "cases", ())]
    return [b for b in out if isinstance(b, list) and b]


def _ast_header(stmt: ast.stmt) -> list[ast.AST]:
    """The parts of a statement that belong to it, not to the blocks nested in it."""
    if isinstance(stmt, (ast.If, ast.While)):
        return [stmt.test]
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return [stmt.target, stmt.iter]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return list(stmt.items)
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
        # Evaluated where the def runs: decorators, defaults (and annotations).
        return [*stmt.decorator_list, stmt.args, *([stmt.returns] if stmt.returns else [])]
    if isinstance(stmt, (ast.Try, ast.TryStar)):
        return [h.type for h in stmt.handlers if h.type is not None]
    if isinstance(stmt, ast.Match):
        return [stmt.subject]
    if isinstance(stmt, ast.ClassDef):
        return [*stmt.decorator_list, *stmt.bases, *stmt.keywords]
    return [stmt]


def statement_calls(stmt: cst.CSTNode) -> list[cst.Call]:
    """The calls of the statement's own parts (not of the blocks nested in it, nor of a
    nested function or class), in the order LibCST visits them: each call before the calls
    inside it, and in source order."""
    if isinstance(stmt, (cst.If, cst.While)):
        roots: list[cst.CSTNode] = [stmt.test]
    elif type(stmt) is cst.For:
        roots = [stmt.target, stmt.iter]
    elif type(stmt) is cst.With:
        roots = list(stmt.items)
    elif type(stmt) is cst.FunctionDef:
        # Evaluated where the def runs: decorators, defaults (and annotations).
        roots = [d.decorator for d in stmt.decorators]
        roots += [stmt.params, *([stmt.returns] if stmt.returns else [])]
    elif isinstance(stmt, (cst.Try, cst.TryStar)):
        roots = [h.type for h in stmt.handlers if h.type is not None]
    elif type(stmt) is cst.Match:
        roots = [stmt.subject]
    elif type(stmt) is cst.ClassDef:
        roots = [d.decorator for d in stmt.decorators] + [*stmt.bases, *stmt.keywords]
    else:
        roots = [stmt]
    calls: list[cst.Call] = []
    stack = roots[::-1]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is cst.Call:
            calls.append(node)
        elif kind is cst.FunctionDef or kind is cst.ClassDef:
            continue  # its own statements
        children: list[cst.CSTNode] = []
        for name in content_fields(kind):
            value = getattr(node, name)
            if type(value) is tuple or type(value) is list:
                children += [v for v in value if is_node_type(type(v))]
            elif is_node_type(type(value)):
                children.append(value)
        stack += children[::-1]
    return calls


# The node types whose fields LibCST's visitor takes in another order than the class
# declares them (`body if test else orelse`, positional-only parameters first...), in the
# visitor's order; tests/test_positions_calls.py derives this table from LibCST's code.
_VISIT_ORDER: dict[type, tuple[str, ...]] = {
    getattr(cst, name): order
    for name, order in (
        ("Arg", ("keyword", "value")),
        ("ClassDef", ("decorators", "name", "type_parameters", "bases", "keywords", "body")),
        ("ExceptHandler", ("type", "name", "body")),
        ("ExceptStarHandler", ("type", "name", "body")),
        ("FunctionDef", ("decorators", "name", "type_parameters", "params", "returns", "body")),
        ("IfExp", ("body", "test", "orelse")),
        ("MatchCase", ("pattern", "guard", "body")),
        ("Parameters", ("posonly_params", "params", "star_arg", "kwonly_params", "star_kwarg")),
        ("TypeAlias", ("name", "type_parameters", "value")),
    )
    if hasattr(cst, name)  # a LibCST without `type` statements
}
_FIELDS: dict[type, tuple[str, ...]] = dict(_VISIT_ORDER)
# Whether a type is a LibCST node's (also dataflow.syntax's walks): isinstance() against
# LibCST's abstract base goes through ABCMeta in Python for every value that is not one.
NODE_TYPES: dict[type, bool] = {}


def is_node_type(kind: type) -> bool:
    found = NODE_TYPES.get(kind)
    if found is None:
        found = NODE_TYPES[kind] = issubclass(kind, cst.CSTNode)
    return found


# Fields that hold formatting only (punctuation, an operator, a keyword, line breaks and
# comments) or a string: no expression, call or binding lies in them. The walks that look
# for calls (here) and for bindings (``dataflow.syntax``) leave them out: about a sixth of
# a function's nodes.
FORMATTING_FIELDS = frozenset(
    {
        "asynchronous",
        "colon",
        "comma",
        "dot",
        "equal",
        "first_colon",
        "footer",
        "header",
        "indent",
        "lbrace",
        "lbracket",
        "leading_lines",
        "lines_after_decorators",
        "lpar",
        "operator",
        "rbrace",
        "rbracket",
        "rpar",
        "second_colon",
        "semicolon",
    }
)


def content_fields(kind: type) -> tuple[str, ...]:
    """The fields of a node type that may hold an expression (not its formatting), in the
    order LibCST's visitor takes them."""
    found = _FIELDS.get(kind)
    if found is None:
        found = _FIELDS[kind] = tuple(
            f.name
            for f in dataclasses.fields(kind)
            if "whitespace" not in f.name and f.name not in FORMATTING_FIELDS
        )
    return found


def statements_in_order(module: cst.Module) -> list[cst.CSTNode]:
    """Every statement of the module (small statements one by one), in source order."""
    return list(_cst_stmts(module.body))


def index_of(module: cst.Module, source: str) -> PositionIndex:
    """``build_index`` with Python's tree of ``source``, parsed here; where Python cannot
    parse it (syntax LibCST reads and this Python does not, nesting deeper than its
    compiler goes), nothing pairs and LibCST's own positions are used."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        tree = ast.Module(body=[], type_ignores=[])
    return build_index(module, tree, source)


def placed_index(module: cst.Module, source: str, spans: Spans) -> PositionIndex:
    """The index of a module ``cst_build`` built whole, with where it placed each statement
    (``cst_build.Spans``): Python's node for a statement is parsed from the statement's
    own lines when it is first asked for (``FragmentStatements``), not from the module's,
    since a check asks for the statements of a few modules on its findings' paths."""
    index = PositionIndex(source=Source(source), stmts={}, placed=spans)
    index.stmts = FragmentStatements(index, module, source, spans)  # type: ignore[assignment]
    return index


_WORD_BYTE = re.compile(rb"[A-Za-z0-9_\x80-\xff]")


class FragmentStatements:
    """``PositionIndex.stmts`` for a module ``cst_build`` built whole: Python's node for a
    statement, parsed from its own lines, with the lines and columns it has in the whole
    module's tree (the same text at the same columns, wrapped in ``if 1:`` where it is
    indented, its line numbers moved). Should a statement's node not come out where the
    build placed it, the index falls back to the whole module's tree (``index_of``),
    and answers as it would have from the start."""

    def __init__(self, index: PositionIndex, module: cst.Module, text: str, spans: Spans) -> None:
        self.index = index
        self.module = module
        self.text = text
        self.spans = spans
        self.nodes: dict[int, ast.stmt] = {}

    def __contains__(self, key: object) -> bool:
        return key in self.spans

    def get(self, key: int, default: ast.stmt | None = None) -> ast.stmt | None:
        found = self.nodes.get(key)
        if found is not None:
            return found
        span = self.spans.get(key)
        if span is None:
            return default
        found = self._parsed(span)
        if found is None:  # not where the build placed it: the whole module's tree instead
            whole = index_of(self.module, self.text)
            self.index.stmts, self.index.exact = whole.stmts, whole.exact
            self.index.placed = None
            self.index.calls = {}
            return whole.stmts.get(key, default)
        self.nodes[key] = found
        return found

    def _parsed(self, span: tuple[int, int, int, int, int]) -> ast.stmt | None:
        """Python's node for the statement at ``span`` (an ``elif`` is read as an ``if``);
        None where it does not parse alone or comes out elsewhere."""
        first, line, col, end_line, end_col = span
        source = self.index.source
        start = source.starts[first - 1]
        text = source.data[start : source.offset(end_line, end_col)]
        own = source.offset(line, col) - start  # where the statement's own text starts
        if first == line and text[:own].strip():  # `a = 1; b = 2`: `a = 1; ` as spaces
            text = b" " * own + text[own:]
        if text.startswith(b"elif", own) and not _WORD_BYTE.match(text, own + 4):
            text = text[:own] + b"if  " + text[own + 4 :]  # its test at the same column
        indented = col > 0
        try:
            code = text.decode("utf-8")
            with warnings.catch_warnings():  # said at the parse, with the module's lines
                warnings.simplefilter("ignore")
                tree = ast.parse("if 1:\n" + code if indented else code)
        except (SyntaxError, ValueError, RecursionError, MemoryError, UnicodeDecodeError):
            return None
        body = tree.body[0].body if indented else tree.body  # type: ignore[attr-defined]
        if len(body) != 1:
            return None
        node = body[0]
        ast.increment_lineno(node, first - 1 - (1 if indented else 0))
        placed = (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)
        if placed != span[1:] or first_lineno(node) != first:
            return None
        return node


def build_index(module: cst.Module, tree: ast.Module, source: str) -> PositionIndex:
    cst_list = list(_cst_stmts(module.body))
    ast_list = list(_ast_stmts(tree.body))
    index = PositionIndex(source=Source(source), stmts={})
    if len(cst_list) == len(ast_list) and all(
        isinstance(a, _PAIRS.get(type(c), (ast.stmt,))) for c, a in zip(cst_list, ast_list)
    ):
        index.stmts = {id(c): a for c, a in zip(cst_list, ast_list)}
        return index
    index.exact = exact_positions(module)
    return index


def exact_positions(module: cst.Module) -> dict[int, Span]:
    wrapper = cst.metadata.MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(cst.metadata.PositionProvider)
    return {
        id(node): (r.start.line, r.start.column, r.end.line, r.end.column)
        for node, r in positions.items()
    }
