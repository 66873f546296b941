"""Parse the function definitions of a CUDA/C++ header into :mod:`syntax` trees.

Recursive descent over the token stream, at namespace scope: namespaces and ``extern "C"``
blocks are opened, ``struct``/``class`` bodies are not. A statement outside the grammar is
kept as ``Skip(unread=True)`` (its line is reported), an expression as ``Opaque``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from zerolint.headers.syntax import (
    Assign,
    Binary,
    Block,
    Call,
    Decl,
    Declarator,
    Expr,
    ExprStmt,
    Function,
    If,
    Index,
    Jump,
    Lambda,
    Loop,
    Member,
    Name,
    Num,
    Opaque,
    Skip,
    Stmt,
    Ternary,
    Unary,
)
from zerolint.headers.tokens import Token


class CppSyntaxError(Exception):
    """A function body the parser cannot read; the message names the line."""


_OPEN = {"(": ")", "[": "]", "{": "}"}
_CLOSE = {")", "]", "}"}
# Function-like specifiers whose parentheses are not a parameter list.
_NOT_A_FUNCTION = {
    "__launch_bounds__",
    "noexcept",
    "alignas",
    "decltype",
    "__attribute__",
    "throw",
    "__declspec",
    "requires",
    "if",
    "for",
    "while",
    "switch",
    "sizeof",
    "return",
}
_KERNEL_MARKERS = {"__global__", "CUTLASS_GLOBAL", "__launch_bounds__"}
_TYPE_WORDS = {
    "const",
    "constexpr",
    "static",
    "extern",
    "volatile",
    "unsigned",
    "signed",
    "long",
    "short",
    "register",
    "inline",
    "auto",
    "typename",
    "struct",
    "mutable",
    "thread_local",
    "__shared__",
    "__device__",
    "__constant__",
    "__restrict__",
    "__forceinline__",
    "CUTLASS_DEVICE",
    "__align__",
}


def _match(tokens: Sequence[Token], i: int) -> int:
    """Index of the bracket closing the one at ``i``."""
    depth = 0
    for j in range(i, len(tokens)):
        text = tokens[j].text
        if tokens[j].kind != "op":
            continue
        if text in _OPEN:
            depth += 1
        elif text in _CLOSE:
            depth -= 1
            if depth == 0:
                return j
    raise CppSyntaxError(f"line {tokens[i].line}: unbalanced {tokens[i].text!r}")


def _split(tokens: Sequence[Token], sep: str) -> list[list[Token]]:
    """Split at ``sep`` outside brackets."""
    parts: list[list[Token]] = [[]]
    depth = 0
    for tok in tokens:
        if tok.kind == "op" and tok.text in _OPEN:
            depth += 1
        elif tok.kind == "op" and tok.text in _CLOSE:
            depth -= 1
        if depth == 0 and tok.kind == "op" and tok.text == sep:
            parts.append([])
        else:
            parts[-1].append(tok)
    return parts


def functions(tokens: list[Token]) -> Iterator[Function]:
    """Function definitions at namespace scope (namespaces and ``extern "C"`` are opened)."""
    start = i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.kind != "op" or tok.text not in ("{", ";", "}"):
            i += 1
            continue
        if tok.text != "{":
            start = i = i + 1
            continue
        prefix = tokens[start:i]
        texts = [t.text for t in prefix]
        if "namespace" in texts or (texts[:1] == ["extern"] and "struct" not in texts):
            start = i = i + 1
            continue
        end = _match(tokens, i)
        header = _function_header(prefix)
        if header is not None:
            name, params, kernel = header
            try:
                body = _Parser(tokens[i : end + 1]).block()
            except (CppSyntaxError, RecursionError):
                body = Block([Skip(tok.line, unread=True)], tok.line)
            yield Function(name, kernel, params, body, prefix[0].line if prefix else tok.line)
            start = end + 1
        i = end + 1


def _function_header(prefix: list[Token]) -> tuple[str, list[str], bool] | None:
    texts = [t.text for t in prefix]
    body_start = _skip_template_header(prefix)
    head = texts[body_start:]
    if any(w in head for w in ("struct", "class", "union", "enum", "=")):
        return None
    groups: list[tuple[int, int]] = []
    j = body_start
    while j < len(prefix):
        if prefix[j].text == "(":
            close = _match(prefix, j)
            groups.append((j, close))
            j = close + 1
        else:
            j += 1
    for open_, close in reversed(groups):
        before = prefix[open_ - 1] if open_ > 0 else None
        if before is not None and before.kind == "id" and before.text not in _NOT_A_FUNCTION:
            params = [_param_name(p) for p in _split(prefix[open_ + 1 : close], ",")]
            kernel = any(t in _KERNEL_MARKERS or t.endswith("_GLOBAL") for t in texts)
            return before.text, [p for p in params if p], kernel
    return None


def _skip_template_header(prefix: list[Token]) -> int:
    j = 0
    while j < len(prefix) and prefix[j].text == "template":
        depth, j = 0, j + 1
        while j < len(prefix):
            text = prefix[j].text
            depth += {"<": 1, ">": -1, ">>": -2}.get(text, 0)
            j += 1
            if depth <= 0:
                break
    return j


def _param_name(tokens: list[Token]) -> str:
    head = _split(tokens, "=")[0]
    names = [t.text for t in head if t.kind == "id" and t.text not in _TYPE_WORDS]
    return names[-1] if len(names) >= 2 else ""


_PRECEDENCE = {
    ",": 1,
    "=": 2,
    "+=": 2,
    "-=": 2,
    "*=": 2,
    "/=": 2,
    "%=": 2,
    "<<=": 2,
    ">>=": 2,
    "&=": 2,
    "|=": 2,
    "^=": 2,
    "?": 3,
    "||": 4,
    "&&": 5,
    "|": 6,
    "^": 7,
    "&": 8,
    "==": 9,
    "!=": 9,
    "<": 10,
    ">": 10,
    "<=": 10,
    ">=": 10,
    "<<": 11,
    ">>": 11,
    "+": 12,
    "-": 12,
    "*": 13,
    "/": 13,
    "%": 13,
    ".*": 14,
    "->*": 14,
}
_ASSIGN_PRECEDENCE = 2
_PREFIX = {"-", "+", "!", "~", "*", "&", "++", "--"}
_CASTS = {"static_cast", "reinterpret_cast", "const_cast", "dynamic_cast"}
_BASIC_TYPES = {
    "int",
    "unsigned",
    "signed",
    "long",
    "short",
    "char",
    "float",
    "double",
    "bool",
    "auto",
    "const",
    "size_t",
}


class _Parser:
    """Recursive descent over one function body (statements) and its expressions."""

    def __init__(self, tokens: Sequence[Token]) -> None:
        self.toks = list(tokens)
        self.pos = 0

    # -- helpers
    def peek(self, k: int = 0) -> Token | None:
        j = self.pos + k
        return self.toks[j] if j < len(self.toks) else None

    def at(self, text: str, k: int = 0) -> bool:
        tok = self.peek(k)
        return tok is not None and tok.text == text and tok.kind in ("op", "id")

    def take(self) -> Token:
        tok = self.peek()
        if tok is None:
            last = self.toks[-1].line if self.toks else 0
            raise CppSyntaxError(f"line {last}: unexpected end")
        self.pos += 1
        return tok

    def expect(self, text: str) -> Token:
        tok = self.take()
        if tok.text != text:
            raise CppSyntaxError(f"line {tok.line}: expected {text!r}, found {tok.text!r}")
        return tok

    def group(self) -> list[Token]:
        """The tokens inside the bracket at the cursor; the cursor moves past its closer."""
        close = _match(self.toks, self.pos)
        inner = self.toks[self.pos + 1 : close]
        self.pos = close + 1
        return inner

    def line(self) -> int:
        tok = self.peek() or (self.toks[-1] if self.toks else None)
        return tok.line if tok else 0

    # -- statements
    def block(self) -> Block:
        line = self.expect("{").line
        body: list[Stmt] = []
        while not self.at("}"):
            if self.peek() is None:
                raise CppSyntaxError(f"line {line}: unclosed block")
            body.append(self.statement())
        self.expect("}")
        return Block(body, line)

    def statement(self) -> Stmt:
        tok = self.peek()
        assert tok is not None
        if tok.text == "{" and tok.kind == "op":
            return self.block()
        if tok.kind == "id" and tok.text in _STATEMENT_KEYWORDS:
            return _STATEMENT_KEYWORDS[tok.text](self)
        if tok.text == ";":
            self.take()
            return Skip(tok.line)
        end = self._statement_end()
        piece = self.toks[self.pos : end]
        self.pos = end + 1
        return _simple_statement(piece, tok.line)

    def _statement_end(self) -> int:
        depth = 0
        for j in range(self.pos, len(self.toks)):
            tok = self.toks[j]
            if tok.kind != "op":
                continue
            if tok.text in _OPEN:
                depth += 1
            elif tok.text in _CLOSE:
                depth -= 1
                if depth < 0:
                    break
            elif tok.text == ";" and depth == 0:
                return j
        raise CppSyntaxError(f"line {self.line()}: statement without ';'")

    def if_(self) -> Stmt:
        line = self.take().line
        if self.at("constexpr"):
            self.take()
        if self.at("!") and self.at("consteval", 1):  # if !consteval { ... }
            self.pos += 2
        cond = _expression(self._paren())
        then = self.statement()
        other = None
        if self.at("else"):
            self.take()
            other = self.statement()
        return If(cond, then, other, line)

    def _paren(self) -> list[Token]:
        if not self.at("("):
            raise CppSyntaxError(f"line {self.line()}: expected '('")
        return self.group()

    def while_(self) -> Stmt:
        line = self.take().line
        cond = _expression(self._paren())
        return Loop(None, cond, None, self.statement(), line)

    def do_(self) -> Stmt:
        line = self.take().line
        body = self.statement()
        self.expect("while")
        cond = _expression(self._paren())
        self.expect(";")
        return Loop(None, cond, None, body, line)

    def for_(self) -> Stmt:
        line = self.take().line
        header = self._paren()
        parts = _split(header, ";")
        body = self.statement()
        if len(parts) != 3:  # range-for: nothing this module needs from its header
            return Loop(Skip(line), None, None, body, line)
        init = _simple_statement(parts[0], line) if parts[0] else None
        cond = _expression(parts[1]) if parts[1] else None
        step = _expression(parts[2]) if parts[2] else None
        return Loop(init, cond, step, body, line)

    def jump(self) -> Stmt:
        tok = self.take()
        end = self._statement_end()
        piece = self.toks[self.pos : end]
        self.pos = end + 1
        return Jump(tok.text, _expression(piece) if piece else None, tok.line)

    def switch(self) -> Stmt:
        line = self.take().line
        subject = _expression(self._paren())
        body = self.statement()
        # Cases are entered by value: read the body as reachable under no condition.
        return Block([ExprStmt(subject, line), body], line)

    def label(self) -> Stmt:
        line = self.take().line
        while not self.at(":"):
            self.take()
        self.take()
        return Skip(line)

    def skip_statement(self) -> Stmt:
        line = self.line()
        self.pos = self._statement_end() + 1
        return Skip(line)

    # -- expressions
    def expr(self, min_prec: int = 1) -> Expr:
        left = self.unary()
        while True:
            tok = self.peek()
            if tok is None or tok.kind != "op" or tok.text not in _PRECEDENCE:
                return left
            prec = _PRECEDENCE[tok.text]
            if prec < min_prec:
                return left
            self.take()
            if tok.text == "?":
                then = self.expr(1)
                self.expect(":")
                left = Ternary(left, then, self.expr(_ASSIGN_PRECEDENCE), tok.line)
            elif prec == _ASSIGN_PRECEDENCE:
                left = Assign(tok.text, left, self.expr(prec), tok.line)
            else:
                left = Binary(tok.text, left, self.expr(prec + 1), tok.line)

    def unary(self) -> Expr:
        tok = self.peek()
        if tok is None:
            raise CppSyntaxError("unexpected end of expression")
        if tok.kind == "op" and tok.text in _PREFIX:
            self.take()
            return Unary(tok.text, self.unary(), tok.line)
        if tok.text == "sizeof" or tok.text == "alignof":
            self.take()
            if self.at("("):
                self.group()
            else:
                self.unary()
            return Num(None, tok.line)
        if tok.text == "(" and self._is_cast():
            self.group()
            return self.unary()
        return self.postfix(self.primary())

    def _is_cast(self) -> bool:
        close = _match(self.toks, self.pos)
        inner = self.toks[self.pos + 1 : close]
        after = self.toks[close + 1] if close + 1 < len(self.toks) else None
        if not inner or after is None or not (after.kind in ("id", "num") or after.text == "("):
            return False
        words = [t for t in inner if t.kind == "id"]
        if not words or any(t.kind == "op" and t.text not in ("*", "&", "::") for t in inner):
            return False
        return all(w.text in _BASIC_TYPES or w.text.endswith("_t") for w in words)

    def primary(self) -> Expr:
        tok = self.take()
        if tok.kind == "num":
            return Num(_int_value(tok.text), tok.line)
        if tok.kind == "str":  # a literal (its text is dropped): a constant like a number
            while self.peek() is not None and self.peek().kind == "str":  # type: ignore[union-attr]
                self.take()
            return Num(None, tok.line)
        if tok.text == "(":
            self.pos -= 1
            inner = self.group()
            return _expression(inner)
        if tok.text == "[":
            self.pos -= 1
            return self.lambda_()
        if tok.text == "{":
            self.pos -= 1
            args = [_expression(p) for p in _split(self.group(), ",") if p]
            return Call(Name("{}", tok.line), args, tok.line)
        if tok.text == "::":
            tok = self.take()
        if tok.kind != "id":
            raise CppSyntaxError(f"line {tok.line}: unexpected {tok.text!r}")
        if tok.text in _CASTS and self.at("<"):
            self._skip_template_args()
            return _expression(self._paren())
        name = tok.text
        while self.at("::") and self.peek(1) is not None and self.peek(1).kind == "id":  # type: ignore[union-attr]
            self.take()
            name += "::" + self.take().text
        if self.at("<") and self._template_args_follow():
            self._skip_template_args()
        if self.at("{"):
            args = [_expression(p) for p in _split(self.group(), ",") if p]
            return Call(Name(name, tok.line), args, tok.line)
        return Name(name, tok.line)

    def _template_args_follow(self) -> bool:
        depth = 0
        for j in range(self.pos, len(self.toks)):
            text = self.toks[j].text
            if text in ("<",):
                depth += 1
            elif text in (">", ">>"):
                depth -= 1 if text == ">" else 2
                if depth <= 0:
                    after = self.toks[j + 1].text if j + 1 < len(self.toks) else ""
                    return after in ("(", "{", "::")
            elif text in (";", "{", "}", "&&", "||", "?", "=", "==", "!="):
                return False
        return False

    def _skip_template_args(self) -> None:
        depth = 0
        while self.peek() is not None:
            text = self.take().text
            if text == "<":
                depth += 1
            elif text == ">":
                depth -= 1
            elif text == ">>":
                depth -= 2
            if depth <= 0:
                return

    def lambda_(self) -> Expr:
        line = self.line()
        self.group()  # captures
        if self.at("("):
            self.group()
        while not self.at("{"):
            if self.peek() is None:
                raise CppSyntaxError(f"line {line}: lambda without a body")
            self.take()
        return Lambda(self.block(), line)

    def postfix(self, expr: Expr) -> Expr:
        while True:
            tok = self.peek()
            if tok is None or tok.kind != "op":
                return expr
            if tok.text == "(":
                args = [_expression(p) for p in _split(self.group(), ",") if p]
                expr = Call(expr, args, tok.line)
            elif tok.text == "[":
                expr = Index(expr, _expression(self.group()), tok.line)
            elif tok.text in (".", "->"):
                self.take()
                expr = Member(expr, self.take().text, tok.line)
            elif tok.text in ("++", "--"):
                self.take()
                expr = Unary("post" + tok.text, expr, tok.line)
            else:
                return expr


_STATEMENT_KEYWORDS = {
    "if": _Parser.if_,
    "while": _Parser.while_,
    "do": _Parser.do_,
    "for": _Parser.for_,
    "return": _Parser.jump,
    "continue": _Parser.jump,
    "break": _Parser.jump,
    "switch": _Parser.switch,
    "case": _Parser.label,
    "default": _Parser.label,
    "goto": _Parser.skip_statement,
    "using": _Parser.skip_statement,
    "typedef": _Parser.skip_statement,
    "static_assert": _Parser.skip_statement,
}


def _expression(tokens: Sequence[Token]) -> Expr:
    """Parse a whole token run as one expression (Opaque if it is outside the grammar)."""
    line = tokens[0].line if tokens else 0
    parser = _Parser(tokens)
    try:
        expr = parser.expr()
    except (CppSyntaxError, RecursionError):
        return Opaque(line)
    return expr if parser.peek() is None else Opaque(line)


def _simple_statement(tokens: list[Token], line: int) -> Stmt:
    decl = _declaration(tokens)
    if decl is not None:
        return decl
    expr = _expression(tokens)
    if isinstance(expr, Opaque):
        return Skip(line, unread=True)
    return ExprStmt(expr, line)


def _declaration(tokens: list[Token]) -> Decl | None:
    """``type name [= init], *name[N], ...;`` or None when the statement is an expression."""
    j, words = 0, 0
    specifiers: list[str] = []
    while j < len(tokens):
        tok = tokens[j]
        if tok.kind == "id" and j + 1 < len(tokens) and tokens[j + 1].text == "::":
            j += 2
            continue
        if tok.kind == "id" and tok.text in _TYPE_WORDS:
            specifiers.append(tok.text)
            words += tok.text not in ("const", "static", "extern", "volatile", "inline")
            j += 1
            continue
        if tok.kind == "op" and tok.text in ("*", "&", "&&") and words:
            j += 1
            continue
        if tok.kind == "op" and tok.text == "<" and words:
            j = _skip_angle(tokens, j)
            if j < 0:
                return None
            continue
        if tok.kind == "id":
            follower = tokens[j + 1].text if j + 1 < len(tokens) else ";"
            if words and follower in ("=", ";", ",", "[", "{", "("):
                items = _declarators(tokens[j:])
                return Decl(tuple(specifiers), items, tok.line) if items is not None else None
            specifiers.append(tok.text)
            words += 1
            j += 1
            continue
        return None
    return None


def _skip_angle(tokens: list[Token], j: int) -> int:
    depth = 0
    for k in range(j, len(tokens)):
        text = tokens[k].text
        depth += {"<": 1, ">": -1, ">>": -2}.get(text, 0)
        if text in (";", "=", "{", "}"):
            return -1
        if depth <= 0:
            return k + 1
    return -1


def _declarators(tokens: list[Token]) -> list[Declarator] | None:
    items: list[Declarator] = []
    for part in _split(tokens, ","):
        part = [t for t in part]
        while part and part[0].text in ("*", "&", "&&", "const", "__restrict__"):
            part = part[1:]
        if not part or part[0].kind != "id":
            return None
        name, rest = part[0], part[1:]
        array = False
        while rest and rest[0].text == "[":
            array = True
            rest = rest[_match(rest, 0) + 1 :]
        init: Expr | None = None
        if rest and rest[0].text == "=":
            init = _expression(rest[1:])
        elif rest and rest[0].text in ("(", "{"):
            inner = rest[1 : _match(rest, 0)]
            args = _split(inner, ",")
            init = _expression(args[0]) if len(args) == 1 and args[0] else None
        elif rest:
            return None
        items.append(Declarator(name.text, init, array, name.line))
    return items


def _int_value(text: str) -> int | None:
    digits = text.replace("'", "").rstrip("uUlLzZ")
    try:
        return int(digits, 0)
    except ValueError:
        return None
