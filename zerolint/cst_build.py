"""LibCST trees built from Python's own parser, for analysis.

LibCST's parser keeps every space, comment and comma of a file and builds a Python object
for each; the analysis reads none of them. ``build_module`` takes the tree Python's parser
gives (compiled code, no formatting kept) and builds the LibCST nodes the analysis reads:
the same classes, with the same values in every field that is not formatting, in the same
order, at about a third of the cost of LibCST's parse (vLLM 0.33.0's attention files). The
formatting fields keep LibCST's defaults, so such a tree is never printed: ``--fix`` and
the language server parse with LibCST itself, and a step's text is cut from the source
(``ModuleInfo.code``, ``source_text``).

``tests/test_cst_build.py`` compares the two trees field by field, formatting aside, on
crafted sources holding every construct and on the attention folders of real vLLM and
SGLang trees. What this module does not build itself (a ``match`` statement, a statement
with type parameters, an f-string, implicitly concatenated strings) is handed to LibCST's
parser: for that expression alone, for that statement where it is at the module's top
level, and for the whole file otherwise.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import libcst as cst

from zerolint.source_text import Source, first_lineno

_new = object.__new__
_set = object.__setattr__
_REQUIRED = object()


def _maker(cls: type) -> Callable[..., Any]:
    """A constructor of ``cls`` that skips LibCST's checks and shares the default values
    (formatting nodes are immutable, so one instance serves every node). Sequences must be
    given as tuples, as LibCST's parser gives them."""
    names: list[str] = []
    scope: dict[str, Any] = {"_new": _new, "_set": _set, "_cls": cls, "_REQUIRED": _REQUIRED}
    for i, f in enumerate(dataclasses.fields(cls)):
        if f.default is not dataclasses.MISSING:
            scope[f"_d{i}"] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            scope[f"_d{i}"] = f.default_factory()
        else:
            scope[f"_d{i}"] = _REQUIRED
        names.append(f.name)
    params = ", ".join(f"{n}=_d{i}" for i, n in enumerate(names))
    body = "".join(f"    _set(node, {n!r}, {n})\n" for n in names)
    star = "*, " if names else ""
    source = f"def make({star}{params}):\n    node = _new(_cls)\n{body}    return node\n"
    exec(source, scope)  # noqa: S102 - generated from the dataclass's own field names
    made: Callable[..., Any] = scope["make"]
    return made


class _Makers(dict):  # type: ignore[type-arg]
    """cls -> its constructor, made on first use."""

    def __missing__(self, cls: type) -> Callable[..., Any]:
        made = self[cls] = _maker(cls)
        return made


_M: dict[type, Callable[..., Any]] = _Makers()

_BINARY = {
    ast.Add: cst.Add,
    ast.Sub: cst.Subtract,
    ast.Mult: cst.Multiply,
    ast.Div: cst.Divide,
    ast.FloorDiv: cst.FloorDivide,
    ast.Mod: cst.Modulo,
    ast.Pow: cst.Power,
    ast.LShift: cst.LeftShift,
    ast.RShift: cst.RightShift,
    ast.BitOr: cst.BitOr,
    ast.BitAnd: cst.BitAnd,
    ast.BitXor: cst.BitXor,
    ast.MatMult: cst.MatrixMultiply,
}
_AUGMENTED = {
    ast.Add: cst.AddAssign,
    ast.Sub: cst.SubtractAssign,
    ast.Mult: cst.MultiplyAssign,
    ast.Div: cst.DivideAssign,
    ast.FloorDiv: cst.FloorDivideAssign,
    ast.Mod: cst.ModuloAssign,
    ast.Pow: cst.PowerAssign,
    ast.LShift: cst.LeftShiftAssign,
    ast.RShift: cst.RightShiftAssign,
    ast.BitOr: cst.BitOrAssign,
    ast.BitAnd: cst.BitAndAssign,
    ast.BitXor: cst.BitXorAssign,
    ast.MatMult: cst.MatrixMultiplyAssign,
}
_UNARY = {ast.UAdd: cst.Plus, ast.USub: cst.Minus, ast.Invert: cst.BitInvert, ast.Not: cst.Not}
_COMPARE = {
    ast.Eq: cst.Equal,
    ast.NotEq: cst.NotEqual,
    ast.Lt: cst.LessThan,
    ast.LtE: cst.LessThanEqual,
    ast.Gt: cst.GreaterThan,
    ast.GtE: cst.GreaterThanEqual,
    ast.In: cst.In,
    ast.NotIn: cst.NotIn,
    ast.Is: cst.Is,
    ast.IsNot: cst.IsNot,
}
# One operator node per class: they hold formatting only.
_OPERATORS: dict[type, cst.CSTNode] = {}


def _operator(table: dict[type, type], op: ast.AST) -> cst.CSTNode:
    cls = table[type(op)]
    found = _OPERATORS.get(cls)
    if found is None:
        found = _OPERATORS[cls] = _M[cls]()
    return found


class Unsupported(Exception):
    """The tree holds something this module does not build; LibCST parses the file."""


def _string_end(data: bytes, i: int) -> int:
    """The offset just past the string literal whose prefix or opening quote is at
    ``data[i]``. A backslash escapes the next byte, in raw strings too (``r"\\""`` is one
    string), so the prefix does not matter."""
    while i < len(data) and data[i] not in b"'\"":
        i += 1
    quote = data[i : i + 3] if data[i : i + 3] in (b'"""', b"'''") else data[i : i + 1]
    j = i + len(quote)
    # Only a backslash or the quote's character can end a run of the literal's bytes:
    # jump to the next of either (a docstring is thousands of bytes).
    mark = quote[:1]
    while True:
        q = data.find(mark, j)
        if q < 0:
            raise Unsupported("unterminated string")
        b = data.find(b"\\", j, q)
        if b >= 0:
            j = b + 2
        elif data.startswith(quote, q):
            return q + len(quote)
        else:
            j = q + 1


class _Builder:
    def __init__(self, text: str, tree: ast.Module) -> None:
        self.source = Source(text)
        self.data = self.source.data
        self.tree = tree
        # Each statement built: where Python's tree has it (``Spans``); None once a
        # statement is handed to LibCST's parser (its nested statements have none).
        self.spans: Spans | None = {}
        self._stmt = {
            ast.FunctionDef: self.function,
            ast.AsyncFunctionDef: self.function,
            ast.ClassDef: self.class_def,
            ast.If: self.if_,
            ast.For: self.for_,
            ast.AsyncFor: self.for_,
            ast.While: self.while_,
            ast.With: self.with_,
            ast.AsyncWith: self.with_,
            ast.Try: self.try_,
        }
        self._small = {
            ast.Expr: lambda s: _M[cst.Expr](value=self.expr(s.value)),
            ast.Assign: self.assign,
            ast.AugAssign: lambda s: _M[cst.AugAssign](
                target=self.expr(s.target),
                operator=_operator(_AUGMENTED, s.op),
                value=self.expr(s.value),
            ),
            ast.AnnAssign: lambda s: _M[cst.AnnAssign](
                target=self.expr(s.target),
                annotation=self.annotation(s.annotation),
                value=self.maybe(s.value),
            ),
            ast.Return: lambda s: _M[cst.Return](value=self.maybe(s.value)),
            ast.Raise: lambda s: _M[cst.Raise](
                exc=self.maybe(s.exc),
                cause=_M[cst.From](item=self.expr(s.cause)) if s.cause is not None else None,
            ),
            ast.Assert: lambda s: _M[cst.Assert](
                test=self.expr(s.test),
                msg=self.maybe(s.msg),
            ),
            ast.Pass: lambda s: _M[cst.Pass](),
            ast.Break: lambda s: _M[cst.Break](),
            ast.Continue: lambda s: _M[cst.Continue](),
            ast.Delete: self.delete,
            ast.Global: lambda s: _M[cst.Global](names=self.name_items(s.names)),
            ast.Nonlocal: lambda s: _M[cst.Nonlocal](names=self.name_items(s.names)),
            ast.Import: lambda s: _M[cst.Import](names=tuple(self.alias(a) for a in s.names)),
            ast.ImportFrom: self.import_from,
        }
        self._expr: dict[type, Callable[[Any], cst.CSTNode]] = {
            ast.Name: lambda e: self.name(e.id),
            ast.Attribute: lambda e: _M[cst.Attribute](
                value=self.expr(e.value), attr=self.name(e.attr)
            ),
            ast.Call: self.call,
            ast.Constant: self.constant,
            ast.BinOp: lambda e: _M[cst.BinaryOperation](
                left=self.expr(e.left),
                operator=_operator(_BINARY, e.op),
                right=self.expr(e.right),
            ),
            ast.UnaryOp: lambda e: _M[cst.UnaryOperation](
                operator=_operator(_UNARY, e.op),
                expression=self.expr(e.operand),
            ),
            ast.BoolOp: self.bool_op,
            ast.Compare: lambda e: _M[cst.Comparison](
                left=self.expr(e.left),
                comparisons=tuple(
                    _M[cst.ComparisonTarget](
                        operator=_operator(_COMPARE, op),
                        comparator=self.expr(c),
                    )
                    for op, c in zip(e.ops, e.comparators)
                ),
            ),
            ast.Subscript: self.subscript,
            ast.Tuple: lambda e: _M[cst.Tuple](elements=self.elements(e.elts)),
            ast.List: lambda e: _M[cst.List](elements=self.elements(e.elts)),
            ast.Set: lambda e: _M[cst.Set](elements=self.elements(e.elts)),
            ast.Dict: lambda e: _M[cst.Dict](
                elements=tuple(
                    _M[cst.StarredDictElement](value=self.expr(v))
                    if k is None
                    else _M[cst.DictElement](key=self.expr(k), value=self.expr(v))
                    for k, v in zip(e.keys, e.values)
                ),
            ),
            ast.IfExp: lambda e: _M[cst.IfExp](
                test=self.expr(e.test),
                body=self.expr(e.body),
                orelse=self.expr(e.orelse),
            ),
            ast.Lambda: lambda e: _M[cst.Lambda](
                params=self.parameters(e.args, lambda_=True), body=self.expr(e.body)
            ),
            ast.NamedExpr: lambda e: _M[cst.NamedExpr](
                target=self.expr(e.target), value=self.expr(e.value)
            ),
            ast.Await: lambda e: _M[cst.Await](expression=self.expr(e.value)),
            ast.Yield: lambda e: _M[cst.Yield](value=self.maybe(e.value)),
            ast.YieldFrom: lambda e: _M[cst.Yield](value=_M[cst.From](item=self.expr(e.value))),
            ast.ListComp: lambda e: _M[cst.ListComp](
                elt=self.expr(e.elt), for_in=self.comp_for(e.generators)
            ),
            ast.SetComp: lambda e: _M[cst.SetComp](
                elt=self.expr(e.elt), for_in=self.comp_for(e.generators)
            ),
            ast.GeneratorExp: lambda e: _M[cst.GeneratorExp](
                elt=self.expr(e.elt), for_in=self.comp_for(e.generators)
            ),
            ast.DictComp: lambda e: _M[cst.DictComp](
                key=self.expr(e.key),
                value=self.expr(e.value),
                for_in=self.comp_for(e.generators),
            ),
            ast.JoinedStr: self.parsed_expression,
            ast.Starred: lambda e: _M[cst.StarredElement](value=self.expr(e.value)),
        }

    def _on_own_line(self, node: ast.stmt) -> bool:
        """Whether only indentation comes before ``node`` on its line."""
        return not self.source.line(node.lineno)[: node.col_offset].strip()

    # ------------------------------------------------------------------ statements

    def module(self) -> cst.Module:
        return _M[cst.Module](body=self.lines(self.tree.body))

    def lines(self, stmts: Sequence[ast.stmt]) -> tuple[cst.CSTNode, ...]:
        """Statements of a module or an indented block: compound statements, and small
        statements grouped by the line they share (``a = 1; b = 2``)."""
        out: list[Any] = []  # nodes, and lists of the small statements of one line
        line: list[cst.CSTNode] | None = None
        for stmt in stmts:
            build = self._stmt.get(type(stmt))
            if build is not None:
                out.append(self.placed(build(stmt), stmt))
                line = None
                continue
            small = self.small(stmt)
            if small is None:
                out.append(self.parsed_statement(stmt))
                line = None
            elif line is not None and not self._on_own_line(stmt):
                line.append(small)
            else:
                line = [small]
                out.append(line)
        simple = _M[cst.SimpleStatementLine]
        return tuple(simple(body=tuple(n)) if type(n) is list else n for n in out)

    def small(self, stmt: ast.stmt) -> cst.CSTNode | None:
        build = self._small.get(type(stmt))
        return self.placed(build(stmt), stmt) if build is not None else None

    def placed(self, node: cst.CSTNode, stmt: ast.stmt) -> cst.CSTNode:
        if self.spans is not None:
            self.spans[id(node)] = (
                first_lineno(stmt),
                stmt.lineno,
                stmt.col_offset,
                stmt.end_lineno or stmt.lineno,
                stmt.end_col_offset or 0,
            )
        return node

    def block(self, stmts: Sequence[ast.stmt]) -> cst.CSTNode:
        if self._on_own_line(stmts[0]):
            return _M[cst.IndentedBlock](body=self.lines(stmts))
        body = tuple(self.small(s) for s in stmts)
        if any(s is None for s in body):
            raise Unsupported("a compound statement after a colon")
        return _M[cst.SimpleStatementSuite](body=body)

    def parsed_statement(self, stmt: ast.stmt) -> cst.CSTNode:
        """A statement of the module's top level built by LibCST's parser from its own
        lines. One in a block cannot be cut out without changing what its lines hold (a
        multi-line string's indentation): LibCST then parses the whole file."""
        if stmt.col_offset:
            raise Unsupported(f"{type(stmt).__name__} in a block")
        self.spans = None
        line = first_lineno(stmt)
        first = self.source.offset(line, 0)
        return cst.parse_statement(self.source.cut(first, self.source.span(stmt)[1]) + "\n")

    def parsed_expression(self, node: ast.expr) -> cst.CSTNode:
        """An expression built by LibCST's parser from its own text."""
        parsed = cst.parse_expression("(" + self.source.cut(*self.source.span(node)) + ")")
        return parsed.with_changes(lpar=(), rpar=())

    def decorators(self, node: Any) -> tuple[cst.CSTNode, ...]:
        return tuple(_M[cst.Decorator](decorator=self.expr(d)) for d in node.decorator_list)

    def function(self, s: ast.FunctionDef | ast.AsyncFunctionDef) -> cst.CSTNode:
        if getattr(s, "type_params", None):
            return self.parsed_statement(s)
        return _M[cst.FunctionDef](
            name=self.name(s.name),
            params=self.parameters(s.args),
            body=self.block(s.body),
            decorators=self.decorators(s),
            returns=self.annotation(s.returns) if s.returns is not None else None,
            asynchronous=_M[cst.Asynchronous]() if isinstance(s, ast.AsyncFunctionDef) else None,
        )

    def class_def(self, s: ast.ClassDef) -> cst.CSTNode:
        if getattr(s, "type_params", None):
            return self.parsed_statement(s)
        return _M[cst.ClassDef](
            name=self.name(s.name),
            body=self.block(s.body),
            bases=tuple(self.arg(b) for b in s.bases),
            keywords=tuple(self.keyword(k) for k in s.keywords),
            decorators=self.decorators(s),
        )

    def if_(self, s: ast.If) -> cst.CSTNode:
        orelse: cst.CSTNode | None = None
        if s.orelse:
            nested = s.orelse[0]
            if (
                len(s.orelse) == 1
                and isinstance(nested, ast.If)
                and self.data.startswith(b"elif", self.source.span(nested)[0])
            ):
                orelse = self.placed(self.if_(nested), nested)
            else:
                orelse = _M[cst.Else](body=self.block(s.orelse))
        return _M[cst.If](test=self.expr(s.test), body=self.block(s.body), orelse=orelse)

    def else_(self, stmts: list[ast.stmt]) -> cst.CSTNode | None:
        return _M[cst.Else](body=self.block(stmts)) if stmts else None

    def for_(self, s: ast.For | ast.AsyncFor) -> cst.CSTNode:
        return _M[cst.For](
            target=self.expr(s.target),
            iter=self.expr(s.iter),
            body=self.block(s.body),
            orelse=self.else_(s.orelse),
            asynchronous=_M[cst.Asynchronous]() if isinstance(s, ast.AsyncFor) else None,
        )

    def while_(self, s: ast.While) -> cst.CSTNode:
        return _M[cst.While](
            test=self.expr(s.test), body=self.block(s.body), orelse=self.else_(s.orelse)
        )

    def with_(self, s: ast.With | ast.AsyncWith) -> cst.CSTNode:
        items = tuple(
            _M[cst.WithItem](
                item=self.expr(i.context_expr),
                asname=_M[cst.AsName](name=self.expr(i.optional_vars))
                if i.optional_vars is not None
                else None,
            )
            for i in s.items
        )
        return _M[cst.With](
            items=items,
            body=self.block(s.body),
            asynchronous=_M[cst.Asynchronous]() if isinstance(s, ast.AsyncWith) else None,
        )

    def try_(self, s: ast.Try) -> cst.CSTNode:
        handlers = tuple(
            _M[cst.ExceptHandler](
                body=self.block(h.body),
                type=self.maybe(h.type),
                name=_M[cst.AsName](name=self.name(h.name)) if h.name is not None else None,
            )
            for h in s.handlers
        )
        return _M[cst.Try](
            body=self.block(s.body),
            handlers=handlers,
            orelse=self.else_(s.orelse),
            finalbody=_M[cst.Finally](body=self.block(s.finalbody)) if s.finalbody else None,
        )

    def assign(self, s: ast.Assign) -> cst.CSTNode:
        return _M[cst.Assign](
            targets=tuple(_M[cst.AssignTarget](target=self.expr(t)) for t in s.targets),
            value=self.expr(s.value),
        )

    def delete(self, s: ast.Delete) -> cst.CSTNode:
        if len(s.targets) == 1:
            target = self.expr(s.targets[0])
        else:
            target = _M[cst.Tuple](elements=self.elements(s.targets), lpar=(), rpar=())
        return _M[cst.Del](target=target)

    def dotted(self, name: str) -> cst.CSTNode:
        parts = name.split(".")
        node = self.name(parts[0])
        for part in parts[1:]:
            node = _M[cst.Attribute](value=node, attr=self.name(part))
        return node

    def alias(self, a: ast.alias) -> cst.CSTNode:
        return _M[cst.ImportAlias](
            name=self.dotted(a.name),
            asname=_M[cst.AsName](name=self.name(a.asname)) if a.asname else None,
        )

    def import_from(self, s: ast.ImportFrom) -> cst.CSTNode:
        names: Any
        if len(s.names) == 1 and s.names[0].name == "*":
            names = _M[cst.ImportStar]()
        else:
            names = tuple(self.alias(a) for a in s.names)
        return _M[cst.ImportFrom](
            module=self.dotted(s.module) if s.module else None,
            names=names,
            relative=(_DOT,) * (s.level or 0),
        )

    # ------------------------------------------------------------------ parameters

    def annotation(self, node: ast.expr) -> cst.CSTNode:
        return _M[cst.Annotation](annotation=self.expr(node))

    def param(self, a: ast.arg, default: ast.expr | None, star: Any, lambda_: bool) -> cst.CSTNode:
        return _M[cst.Param](
            name=self.name(a.arg),
            annotation=self.annotation(a.annotation)
            if a.annotation is not None and not lambda_
            else None,
            default=self.maybe(default),
            star=star,
        )

    def parameters(self, args: ast.arguments, *, lambda_: bool = False) -> cst.CSTNode:
        positional = [*args.posonlyargs, *args.args]
        defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
        defaults += args.defaults
        plain = ""
        params = tuple(self.param(a, d, plain, lambda_) for a, d in zip(positional, defaults))
        split = len(args.posonlyargs)
        star_arg: Any = cst.MaybeSentinel.DEFAULT
        if args.vararg is not None:
            star_arg = self.param(args.vararg, None, "*", lambda_)
        elif args.kwonlyargs:
            star_arg = _M[cst.ParamStar]()
        return _M[cst.Parameters](
            params=params[split:],
            posonly_params=params[:split],
            posonly_ind=_M[cst.ParamSlash]() if split else cst.MaybeSentinel.DEFAULT,
            star_arg=star_arg,
            kwonly_params=tuple(
                self.param(a, d, plain, lambda_) for a, d in zip(args.kwonlyargs, args.kw_defaults)
            ),
            star_kwarg=self.param(args.kwarg, None, "**", lambda_)
            if args.kwarg is not None
            else None,
        )

    # ------------------------------------------------------------------ expressions

    def name(self, value: str) -> cst.CSTNode:
        return _M[cst.Name](value=value)

    def name_items(self, names: list[str]) -> tuple[cst.CSTNode, ...]:
        return tuple(_M[cst.NameItem](name=self.name(n)) for n in names)

    def maybe(self, node: ast.expr | None) -> cst.CSTNode | None:
        return self.expr(node) if node is not None else None

    def expr(self, node: ast.expr) -> cst.CSTNode:
        build = self._expr.get(type(node))
        if build is None:
            raise Unsupported(type(node).__name__)
        return build(node)

    def arg(self, node: ast.expr) -> cst.CSTNode:
        if isinstance(node, ast.Starred):
            return _M[cst.Arg](value=self.expr(node.value), star="*")
        return _M[cst.Arg](value=self.expr(node))

    def keyword(self, k: ast.keyword) -> cst.CSTNode:
        if k.arg is None:
            return _M[cst.Arg](value=self.expr(k.value), star="**")
        return _M[cst.Arg](value=self.expr(k.value), keyword=self.name(k.arg))

    def call(self, e: ast.Call) -> cst.CSTNode:
        args: tuple[cst.CSTNode, ...]
        if not e.keywords:
            args = tuple(map(self.arg, e.args))
        elif not e.args:
            args = tuple(map(self.keyword, e.keywords))
        else:  # source order: `f(a, k=1, *b)` is valid Python
            parts: list[tuple[tuple[int, int], Any]] = [
                ((a.lineno, a.col_offset), a) for a in e.args
            ]
            parts += [((k.lineno, k.col_offset), k) for k in e.keywords]
            parts.sort(key=lambda p: p[0])
            args = tuple(
                self.keyword(p) if isinstance(p, ast.keyword) else self.arg(p) for _, p in parts
            )
        return _M[cst.Call](func=self.expr(e.func), args=args)

    def elements(self, elts: Sequence[ast.expr]) -> tuple[cst.CSTNode, ...]:
        element, starred, expr = _M[cst.Element], _M[cst.StarredElement], self.expr
        return tuple(
            starred(value=expr(e.value)) if type(e) is ast.Starred else element(value=expr(e))
            for e in elts
        )

    def bool_op(self, e: ast.BoolOp) -> cst.CSTNode:
        op = _M[cst.And]() if isinstance(e.op, ast.And) else _M[cst.Or]()
        node = self.expr(e.values[0])
        for value in e.values[1:]:
            node = _M[cst.BooleanOperation](left=node, operator=op, right=self.expr(value))
        return node

    def comp_for(self, generators: list[ast.comprehension]) -> cst.CSTNode:
        inner = None
        for g in reversed(generators):
            inner = _M[cst.CompFor](
                target=self.expr(g.target),
                iter=self.expr(g.iter),
                ifs=tuple(_M[cst.CompIf](test=self.expr(t)) for t in g.ifs),
                inner_for_in=inner,
                asynchronous=_M[cst.Asynchronous]() if g.is_async else None,
            )
        return inner  # type: ignore[return-value]

    def constant(self, e: ast.Constant) -> cst.CSTNode:
        value = e.value
        if value is None or value is True or value is False:
            return self.name(repr(value))
        if value is Ellipsis:
            return _M[cst.Ellipsis]()
        start, end = self.source.span(e)
        if isinstance(value, (str, bytes)):
            if _string_end(self.data, start) == end:  # one literal, not `"a" "b"`
                return _M[cst.SimpleString](value=self.source.cut(start, end))
            return self.parsed_expression(e)
        raw_text = self.source.cut(start, end)
        if isinstance(value, bool):  # pragma: no cover - handled above
            raise Unsupported("bool")
        if isinstance(value, int):
            return _M[cst.Integer](value=raw_text)
        if isinstance(value, float):
            return _M[cst.Float](value=raw_text)
        if isinstance(value, complex):
            return _M[cst.Imaginary](value=raw_text)
        raise Unsupported(type(value).__name__)

    def subscript(self, e: ast.Subscript) -> cst.CSTNode:
        s = e.slice
        if isinstance(s, ast.Tuple) and s.elts and not self._parenthesized(s):
            parts: list[ast.expr] = list(s.elts)
        else:
            parts = [s]
        elements = []
        for p in parts:
            if isinstance(p, ast.Slice):
                inner: cst.CSTNode = _M[cst.Slice](
                    lower=self.maybe(p.lower),
                    upper=self.maybe(p.upper),
                    step=self.maybe(p.step),
                )
            elif isinstance(p, ast.Starred):
                inner = _M[cst.Index](value=self.expr(p.value), star="*")
            else:
                inner = _M[cst.Index](value=self.expr(p))
            elements.append(_M[cst.SubscriptElement](slice=inner))
        return _M[cst.Subscript](value=self.expr(e.value), slice=tuple(elements))

    def _parenthesized(self, t: ast.Tuple) -> bool:
        """Whether the tuple's own parentheses enclose it (``(a, b)``), not only those of its
        first and last elements (``(a), (b)``)."""
        start, end = self.source.span(t)
        if self.data[start : start + 1] != b"(":
            return False
        return _closing(self.data, start) == end - 1


def _closing(data: bytes, i: int) -> int:
    """The offset of the bracket closing the one at ``data[i]`` (strings and comments
    skipped), or -1."""
    depth = 0
    n = len(data)
    while i < n:
        c = data[i]
        if c in b"([{":
            depth += 1
        elif c in b")]}":
            depth -= 1
            if depth == 0:
                return i
        elif c == 0x23:  # '#': a comment, to the end of the line
            while i < n and data[i] not in b"\r\n":
                i += 1
            continue
        elif c in b"'\"":
            i = _string_end(data, i)
            continue
        i += 1
    return -1


_DOT = _M[cst.Dot]()


# A built statement's place in Python's tree, by ``id`` of its LibCST node: the line its
# text starts at (a def's first decorator), then Python's line, column, end line and end
# column (columns in UTF-8 bytes).
Spans = dict[int, tuple[int, int, int, int, int]]


def build_module(text: str, tree: ast.Module) -> cst.Module | None:
    """A LibCST module for analysis (see the module's docstring), built from ``tree``,
    Python's tree of ``text``; None where this module cannot build it (the caller then
    parses with LibCST)."""
    return build_module_placed(text, tree)[0]


def build_module_placed(text: str, tree: ast.Module) -> tuple[cst.Module | None, Spans | None]:
    """``build_module``, with where each statement built lies (``Spans``): None where a
    statement was handed to LibCST's parser (``positions.FragmentStatements`` then has
    nothing to go by)."""
    builder = _Builder(text, tree)
    try:
        return builder.module(), builder.spans
    except (Unsupported, cst.ParserSyntaxError, RecursionError, IndexError, UnicodeError):
        return None, None
    finally:
        # Its tables of bound methods make a cycle that would keep Python's tree alive
        # until the collector runs (it is off during a check).
        builder.__dict__.clear()


__all__ = ["Spans", "build_module", "build_module_placed"]
