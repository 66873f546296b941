"""Read DeepGEMM's paged-MQA metadata scheduler header: is the all-zero case guarded?

DeepGEMM compiles its kernels at run time from the headers it ships, so the header on disk
is the kernel that will run. Its version string does not tell a guarded scheduler from an
unguarded one (vLLM 0.27.1 and 0.28.0 both vendor "2.6.1"), so this module reads the C++.

The reading is structural, not textual. Comments, strings and preprocessor lines are
dropped, the rest is tokenized and parsed into statements and expressions, and then, in
every function of the header:

1. a binary search is a loop ``while (lo < hi)`` whose body computes a midpoint of ``lo``
   and ``hi``, reads ``array[mid]`` and moves ``lo`` past the midpoint; ``lo`` is its
   result, the initial ``hi`` its limit, ``array`` the searched (shared-memory) array;
2. every later read of that array whose index is the result (directly or through copies)
   is a read of ``array[limit]`` when every length is 0, one past the data;
3. such a read is guarded when the path to it proves the index below the limit
   (``min(lo, limit - 1)``, a ternary or ``if`` on ``lo < limit``) or proves the total
   non-zero (an early ``return``/``continue`` on a zero total, or an enclosing test),
   where the total is any value computed from what the kernel stored into the array.

Names and layout do not matter; only the shape does, so renamed or reformatted guards are
still found, and a guard in a comment, a bound that is not below the limit, or an early
return after the read are not guards.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

HeaderStatus = Literal["guarded", "unguarded", "unknown"]

# The scheduler headers in the order DeepGEMM's SM90 path uses them: the SM90 file
# (DeepGEMM 2.6 and later), else the generic ``smxx_`` scheduler (2.5).
SCHEDULER_HEADERS = ("sm90_paged_mqa_logits.cuh", "paged_mqa_logits.cuh")


# --------------------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class Evidence:
    """One line of the header that the verdict rests on."""

    line: int
    kind: str  # read | index | search | bound | zero-total
    code: str
    note: str = ""

    def to_dict(self) -> dict[str, object]:
        return {"line": self.line, "kind": self.kind, "code": self.code, "note": self.note}


@dataclass(frozen=True, slots=True)
class HeaderCheck:
    """What the header says about the all-zero case, with the lines that say it."""

    path: str
    status: HeaderStatus
    reason: str
    function: str | None = None
    array: str | None = None
    result: str | None = None
    limit: str | None = None
    hazards: tuple[Evidence, ...] = ()
    guards: tuple[Evidence, ...] = ()
    search: Evidence | None = None

    @property
    def guarded(self) -> bool:
        return self.status == "guarded"

    def location(self) -> str:
        """``file:line`` of the deciding line: the unguarded read, else the first guard."""
        lines = self.hazards or self.guards
        name = Path(self.path).name
        return f"{name}:{lines[0].line}" if lines else name

    def to_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "status": self.status,
            "reason": self.reason,
            "function": self.function,
            "array": self.array,
            "result": self.result,
            "limit": self.limit,
            "search": self.search.to_dict() if self.search else None,
            "hazards": [e.to_dict() for e in self.hazards],
            "guards": [e.to_dict() for e in self.guards],
        }


class HeaderError(Exception):
    """A header file that cannot be read."""


def find_scheduler_header(package_dir: Path) -> Path | None:
    """The paged-MQA scheduler header that DeepGEMM's SM90 path compiles, if shipped.

    ``package_dir`` is a ``deep_gemm`` package folder (pip-installed or vendored).
    """
    folder = package_dir / "include" / "deep_gemm" / "scheduler"
    for name in SCHEDULER_HEADERS:
        if (folder / name).is_file():
            return folder / name
    return None


def check_header(path: Path) -> HeaderCheck:
    """Read the scheduler header at ``path`` and decide whether the all-zero case is guarded."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise HeaderError(f"{path}: cannot read header: {exc.strerror or exc}") from exc
    return check_source(text, str(path))


def check_source(source: str, path: str = "<header>") -> HeaderCheck:
    """Like :func:`check_header`, on the text of a header."""
    lines = source.split("\n")  # as the tokenizer counts lines
    try:
        functions = list(_functions(tokenize(source)))
        readings = [r for fn in functions for r in _Reader(fn, lines).read()]
    except (_SyntaxError, RecursionError) as exc:
        return HeaderCheck(path, "unknown", f"could not read the header: {exc}")
    return _decide(path, readings, functions, lines)


# --------------------------------------------------------------------------- tokens


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # id | num | str | op
    text: str
    line: int


_ALTERNATIVE_TOKENS = {
    "and": "&&",
    "or": "||",
    "not": "!",
    "not_eq": "!=",
    "bitand": "&",
    "bitor": "|",
    "xor": "^",
    "compl": "~",
    "and_eq": "&=",
    "or_eq": "|=",
    "xor_eq": "^=",
}
_STRING_PREFIXES = {"L", "u", "U", "u8", "R", "LR", "uR", "UR", "u8R"}
_TOKEN_RE = re.compile(
    r"(?P<id>[A-Za-z_$][\w$]*)"
    r"|(?P<num>(?:\d|\.\d)(?:[\w.]|'(?=\w)|(?<=[eEpP])[+-])*)"
    r"|(?P<op>>>=|<<=|->\*|\.\.\.|::|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||"
    r"\+=|-=|\*=|/=|%=|&=|\|=|\^=|\.\*|[{}()\[\];,<>?:=+\-*/%&|^!~.@\\#])"
)


def tokenize(source: str) -> list[Token]:
    """C++ tokens with line numbers; comments, literals' contents and directives dropped."""
    tokens: list[Token] = []
    i, line, n = 0, 1, len(source)
    line_start = True
    while i < n:
        c = source[i]
        if c == "\n":
            line, i, line_start = line + 1, i + 1, True
            continue
        if c.isspace():
            i += 1
            continue
        if source.startswith("//", i):
            end = source.find("\n", i)
            i = n if end < 0 else end
            continue
        if source.startswith("/*", i):
            end = source.find("*/", i + 2)
            end = n if end < 0 else end + 2
            line, i = line + source.count("\n", i, end), end
            continue
        if c == "#" and line_start:
            end = _directive_end(source, i)
            line, i = line + source.count("\n", i, end), end
            continue
        line_start = False
        if c in "\"'":
            end = _literal_end(source, i, raw=False)
            tokens.append(Token("str", '""', line))
            line, i = line + source.count("\n", i, end), end
            continue
        match = _TOKEN_RE.match(source, i)
        if match is None:  # a stray byte: skip it rather than fail on the whole header
            i += 1
            continue
        kind, text = match.lastgroup or "op", match.group()
        end = match.end()
        if kind == "id" and text in _STRING_PREFIXES and end < n and source[end] in "\"'":
            stop = _literal_end(source, end, raw=text.endswith("R"))
            tokens.append(Token("str", '""', line))
            line, i = line + source.count("\n", i, stop), stop
            continue
        if kind == "id" and text in _ALTERNATIVE_TOKENS:
            kind, text = "op", _ALTERNATIVE_TOKENS[text]
        tokens.append(Token(kind, text, line))
        i = end
    return tokens


def _directive_end(source: str, i: int) -> int:
    """End of a preprocessor line, following backslash continuations."""
    while True:
        end = source.find("\n", i)
        if end < 0:
            return len(source)
        if not source[i:end].rstrip().endswith("\\"):
            return end
        i = end + 1


def _literal_end(source: str, i: int, *, raw: bool) -> int:
    quote = source[i]
    if raw and quote == '"':
        paren = source.find("(", i)
        delimiter = source[i + 1 : paren] if paren >= 0 else ""
        end = source.find(")" + delimiter + '"', paren)
        return len(source) if end < 0 else end + len(delimiter) + 2
    j = i + 1
    while j < len(source):
        if source[j] == "\\":
            j += 2
            continue
        if source[j] == quote:
            return j + 1
        if source[j] == "\n":  # unterminated: stop at the end of the line
            return j
        j += 1
    return j


# --------------------------------------------------------------------------- syntax


@dataclass(eq=False, slots=True)
class Name:
    id: str
    line: int


@dataclass(eq=False, slots=True)
class Num:
    value: int | None
    line: int


@dataclass(eq=False, slots=True)
class Call:
    func: Expr
    args: list[Expr]
    line: int


@dataclass(eq=False, slots=True)
class Index:
    base: Expr
    index: Expr
    line: int


@dataclass(eq=False, slots=True)
class Member:
    base: Expr
    name: str
    line: int


@dataclass(eq=False, slots=True)
class Unary:
    op: str
    operand: Expr
    line: int


@dataclass(eq=False, slots=True)
class Binary:
    op: str
    left: Expr
    right: Expr
    line: int


@dataclass(eq=False, slots=True)
class Ternary:
    cond: Expr
    then: Expr
    other: Expr
    line: int


@dataclass(eq=False, slots=True)
class Assign:
    op: str
    target: Expr
    value: Expr
    line: int


@dataclass(eq=False, slots=True)
class Lambda:
    body: Block
    line: int


@dataclass(eq=False, slots=True)
class Opaque:
    """Something outside the grammar this module reads; its line is reported."""

    line: int


Expr = Name | Num | Call | Index | Member | Unary | Binary | Ternary | Assign | Lambda | Opaque


@dataclass(eq=False, slots=True)
class Declarator:
    name: str
    init: Expr | None
    array: bool
    line: int


@dataclass(eq=False, slots=True)
class Decl:
    specifiers: tuple[str, ...]
    items: list[Declarator]
    line: int


@dataclass(eq=False, slots=True)
class ExprStmt:
    expr: Expr
    line: int


@dataclass(eq=False, slots=True)
class Block:
    body: list[Stmt]
    line: int


@dataclass(eq=False, slots=True)
class If:
    cond: Expr
    then: Stmt
    other: Stmt | None
    line: int


@dataclass(eq=False, slots=True)
class Loop:
    init: Stmt | None
    cond: Expr | None
    step: Expr | None
    body: Stmt
    line: int


@dataclass(eq=False, slots=True)
class Jump:
    kind: str  # return | continue | break
    value: Expr | None
    line: int


@dataclass(eq=False, slots=True)
class Skip:
    line: int
    unread: bool = False


Stmt = Decl | ExprStmt | Block | If | Loop | Jump | Skip


@dataclass(slots=True)
class Function:
    name: str
    kernel: bool
    params: list[str]
    body: Block
    line: int


class _SyntaxError(Exception):
    pass


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
    raise _SyntaxError(f"line {tokens[i].line}: unbalanced {tokens[i].text!r}")


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


def _functions(tokens: list[Token]) -> Iterator[Function]:
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
            except (_SyntaxError, RecursionError):
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
            raise _SyntaxError(f"line {last}: unexpected end")
        self.pos += 1
        return tok

    def expect(self, text: str) -> Token:
        tok = self.take()
        if tok.text != text:
            raise _SyntaxError(f"line {tok.line}: expected {text!r}, found {tok.text!r}")
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
                raise _SyntaxError(f"line {line}: unclosed block")
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
        raise _SyntaxError(f"line {self.line()}: statement without ';'")

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
            raise _SyntaxError(f"line {self.line()}: expected '('")
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
            raise _SyntaxError("unexpected end of expression")
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
            raise _SyntaxError(f"line {tok.line}: unexpected {tok.text!r}")
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
                raise _SyntaxError(f"line {line}: lambda without a body")
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
    except (_SyntaxError, RecursionError):
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


# --------------------------------------------------------------------------- meaning


class _Binding:
    """A variable, parameter or outside name, identified by object, not by spelling."""

    __slots__ = ("array", "assignments", "line", "name", "shared")

    def __init__(self, name: str, line: int, *, array: bool = False, shared: bool = False):
        self.name = name
        self.line = line
        self.array = array
        self.shared = shared
        self.assignments = 0


class _Scope:
    __slots__ = ("names", "parent")

    def __init__(self, parent: _Scope | None = None) -> None:
        self.names: dict[str, _Binding] = {}
        self.parent = parent

    def lookup(self, name: str) -> _Binding:
        scope: _Scope | None = self
        while scope is not None:
            if name in scope.names:
                return scope.names[name]
            if scope.parent is None:
                break
            scope = scope.parent
        # Template parameters, globals, macros: one binding per spelling, at the root.
        binding = _Binding(name, 0)
        scope.names[name] = binding  # type: ignore[union-attr]
        return binding


@dataclass(frozen=True, slots=True)
class _At:
    """An expression together with the scope its names resolve in."""

    expr: Expr
    scope: _Scope


# A comparison as canonical keys: (op, left, right).
_Relation = tuple[str, object, object]


@dataclass(frozen=True, slots=True)
class _Cond:
    """A condition, with the comparisons it implies read when it was evaluated.

    Reading them there matters: ``if (i >= n) i = n - 1;`` speaks of ``i`` before the
    assignment, and a later reading of ``i`` would see the new value.
    """

    at: _At
    line: int
    when_true: tuple[_Relation, ...]
    when_false: tuple[_Relation, ...]


@dataclass(frozen=True, slots=True)
class _Choose:
    cond: _Cond
    then: _Value
    other: _Value


@dataclass(frozen=True, slots=True)
class _Either:
    first: _Value
    second: _Value


@dataclass(frozen=True, slots=True)
class _Update:
    op: str
    old: _Value
    rhs: _At


_Value = _At | _Choose | _Either | _Update | None


@dataclass(frozen=True, slots=True)
class _Fact:
    """A condition known to be ``truth`` on the path to a statement."""

    cond: _Cond
    truth: bool
    exit: bool = False  # from an early return/continue/break, not an enclosing branch

    @property
    def line(self) -> int:
        return self.cond.line

    @property
    def relations(self) -> tuple[_Relation, ...]:
        return self.cond.when_true if self.truth else self.cond.when_false


@dataclass(slots=True)
class _Search:
    result: _Binding
    other_bound: _Binding
    limit: _At | None
    limit_key: object
    array: tuple[_Binding, object]
    array_name: str
    line: int
    function: str
    kernel: bool  # declared __global__ (or with a launch-bounds / *_GLOBAL marker)


@dataclass(slots=True)
class _Read:
    search: _Search
    line: int
    index: str  # the index as written: the result itself or a copy of it
    index_line: int
    guards: list[Evidence]


@dataclass(slots=True)
class _Reading:
    """What one function says: its searches and the reads of their results."""

    searches: list[_Search] = field(default_factory=list)
    reads: list[_Read] = field(default_factory=list)
    unread_lines: list[int] = field(default_factory=list)


_RAW, _SAFE, _OTHER = "raw", "safe", "other"
_MAX_DEPTH = 40
_MIN_FUNCTIONS = {"min", "umin", "__umin", "imin", "__min"}


class _Reader:
    """Walk one function in program order, tracking values, facts, searches and reads."""

    def __init__(self, function: Function, lines: list[str]) -> None:
        self.fn = function
        self.lines = lines
        self.values: dict[_Binding, _Value] = {}
        self.stores: dict[tuple[_Binding, object], set[_Binding]] = {}
        self.conds: dict[If, _Cond] = {}  # each if's condition, read before its branches
        self.reading = _Reading()

    def read(self) -> list[_Reading]:
        scope = _Scope()
        for param in self.fn.params:
            scope.names[param] = _Binding(param, self.fn.line)
        self.block(self.fn.body, _Scope(scope), [])
        return [self.reading] if self.reading.searches else []

    def code(self, line: int) -> str:
        return self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""

    # -- statements
    def block(self, block: Block, scope: _Scope, facts: list[_Fact]) -> bool:
        """Walk a block; True when it always leaves (return/continue/break) before its end."""
        facts = list(facts)
        for stmt in block.body:
            if self.stmt(stmt, scope, facts):
                return True
            if isinstance(stmt, If):
                facts.extend(self.exit_facts(stmt))
        return False

    def exit_facts(self, stmt: If) -> list[_Fact]:
        """What the rest of a block knows after an ``if`` one of whose branches leaves."""
        then_exits = _always_exits(stmt.then)
        other_exits = stmt.other is not None and _always_exits(stmt.other)
        if then_exits == other_exits:
            return []
        return [_Fact(self.conds[stmt], not then_exits, exit=True)]

    def stmt(self, stmt: Stmt, scope: _Scope, facts: list[_Fact]) -> bool:
        if isinstance(stmt, Block):
            return self.block(stmt, _Scope(scope), facts)
        if isinstance(stmt, Decl):
            self.decl(stmt, scope, facts)
        elif isinstance(stmt, ExprStmt):
            self.expr(stmt.expr, scope, facts)
        elif isinstance(stmt, If):
            return self.if_(stmt, scope, facts)
        elif isinstance(stmt, Loop):
            self.loop(stmt, scope, facts)
        elif isinstance(stmt, Jump):
            if stmt.value is not None:
                self.expr(stmt.value, scope, facts)
            return True
        elif isinstance(stmt, Skip) and stmt.unread:
            self.reading.unread_lines.append(stmt.line)
        return False

    def decl(self, decl: Decl, scope: _Scope, facts: list[_Fact]) -> None:
        shared = "__shared__" in decl.specifiers
        for item in decl.items:
            if item.init is not None:
                self.expr(item.init, scope, facts)
            binding = _Binding(item.name, item.line, array=item.array or shared, shared=shared)
            scope.names[item.name] = binding
            self.values[binding] = _At(item.init, scope) if item.init is not None else None

    def if_(self, stmt: If, scope: _Scope, facts: list[_Fact]) -> bool:
        self.expr(stmt.cond, scope, facts)
        cond = self.conds[stmt] = self.cond(stmt.cond, scope, stmt.line)
        before = dict(self.values)
        then_exits = self.stmt(stmt.then, _Scope(scope), facts + [_Fact(cond, True)])
        after_then = self.values
        self.values = dict(before)
        other_exits = False
        if stmt.other is not None:
            other_exits = self.stmt(stmt.other, _Scope(scope), facts + [_Fact(cond, False)])
        after_other = self.values
        if then_exits and not other_exits:
            self.values = after_other
        elif other_exits and not then_exits:
            self.values = after_then
        else:
            self.values = _merge(after_then, after_other, lambda a, b: _Choose(cond, a, b))
        return then_exits and other_exits

    def loop(self, loop: Loop, scope: _Scope, facts: list[_Fact]) -> None:
        inner = _Scope(scope)
        if loop.init is not None:
            self.stmt(loop.init, inner, facts)
        search = self.search(loop, inner)
        if search is not None:
            self.reading.searches.append(search)
        before = dict(self.values)
        body_facts = list(facts)
        if loop.cond is not None:
            self.expr(loop.cond, inner, facts)
            body_facts.append(_Fact(self.cond(loop.cond, inner, loop.line), True))
        self.stmt(loop.body, _Scope(inner), body_facts)
        if loop.step is not None:
            self.expr(loop.step, inner, body_facts)
        self.values = _merge(before, self.values, _Either)

    # -- expressions
    def expr(self, expr: Expr, scope: _Scope, facts: list[_Fact]) -> None:
        if isinstance(expr, Index):
            self.expr(expr.base, scope, facts)
            self.expr(expr.index, scope, facts)
            self.index_read(expr, scope, facts)
        elif isinstance(expr, Ternary):
            self.expr(expr.cond, scope, facts)
            cond = self.cond(expr.cond, scope, expr.line)
            self.expr(expr.then, scope, facts + [_Fact(cond, True)])
            self.expr(expr.other, scope, facts + [_Fact(cond, False)])
        elif isinstance(expr, Binary) and expr.op in ("&&", "||"):
            self.expr(expr.left, scope, facts)
            fact = _Fact(self.cond(expr.left, scope, expr.line), expr.op == "&&")
            self.expr(expr.right, scope, facts + [fact])
        elif isinstance(expr, Binary):
            self.expr(expr.left, scope, facts)
            self.expr(expr.right, scope, facts)
        elif isinstance(expr, Assign):
            self.expr(expr.value, scope, facts)
            if isinstance(expr.target, Index):
                self.expr(expr.target.base, scope, facts)
                self.expr(expr.target.index, scope, facts)
            self.assign(expr, scope)
        elif isinstance(expr, Unary):
            self.expr(expr.operand, scope, facts)
            if expr.op in ("++", "--", "post++", "post--") and isinstance(expr.operand, Name):
                binding = scope.lookup(expr.operand.id)
                binding.assignments += 1
                self.values[binding] = None
        elif isinstance(expr, Call):
            self.expr(expr.func, scope, facts)
            for arg in expr.args:
                self.expr(arg, scope, facts)
        elif isinstance(expr, Member):
            self.expr(expr.base, scope, facts)
        elif isinstance(expr, Lambda):
            self.block(expr.body, _Scope(scope), facts)
        elif isinstance(expr, Opaque):
            self.reading.unread_lines.append(expr.line)

    def assign(self, expr: Assign, scope: _Scope) -> None:
        target = expr.target
        if isinstance(target, Name):
            binding = scope.lookup(target.id)
            binding.assignments += 1
            rhs = _At(expr.value, scope)
            if expr.op == "=":
                self.values[binding] = rhs
            else:
                self.values[binding] = _Update(expr.op[:-1], self.values.get(binding), rhs)
        elif isinstance(target, Index):
            root = self.root(target.base, scope, 0)
            if root is not None:
                names = self.stores.setdefault(root, set())
                names.update(scope.lookup(n) for n in _names(expr.value))

    # -- the binary search
    def search(self, loop: Loop, scope: _Scope) -> _Search | None:
        sides = _comparison_sides(loop.cond)
        if sides is None:
            return None
        low, high = sides
        mid = _midpoint_name(loop.body, low, high)
        if mid is None:
            return None
        array = _indexed_by(loop.body, mid)
        if array is None:
            return None
        root = self.root(array, scope, 0)
        if root is None:
            return None
        result = _moved_past(loop.body, mid, low, high)
        limit_name = high if result == low else low
        limit_value = self.values.get(scope.lookup(limit_name))
        limit = limit_value if isinstance(limit_value, _At) else None
        limit_key = (
            self.canon(limit.expr, limit.scope, 0) if limit is not None else ("no-limit", id(loop))
        )
        return _Search(
            result=scope.lookup(result),
            other_bound=scope.lookup(limit_name),
            limit=limit,
            limit_key=limit_key,
            array=root,
            array_name=_spelling(array),
            line=loop.line,
            function=self.fn.name,
            kernel=self.fn.kernel,
        )

    def root(self, expr: Expr, scope: _Scope, depth: int) -> tuple[_Binding, object] | None:
        """The array a pointer expression points into, with its offset (canonical)."""
        if depth > _MAX_DEPTH:
            return None
        if isinstance(expr, Name):
            binding = scope.lookup(expr.id)
            value = self.values.get(binding)
            if binding.array or binding.assignments or not isinstance(value, _At):
                return binding, ("num", 0)
            inner = self.root(value.expr, value.scope, depth + 1)
            return inner if inner is not None else (binding, ("num", 0))
        if isinstance(expr, Binary) and expr.op == "+":
            base = self.root(expr.left, scope, depth + 1)
            if base is None:
                return None
            offset = self.canon(expr.right, scope, depth + 1)
            return base[0], ("+", base[1], offset)
        return None

    # -- reads of the searched array by the search result
    def index_read(self, expr: Index, scope: _Scope, facts: list[_Fact]) -> None:
        root = self.root(expr.base, scope, 0) if self.reading.searches else None
        for search in self.reading.searches:
            if root != search.array:
                continue
            kind, guards = self.classify(expr.index, scope, facts, search, 0)
            if kind == _OTHER:
                continue
            guards = guards + self.total_guards(facts, search)
            if kind == _RAW or guards:
                index = expr.index.id if isinstance(expr.index, Name) else search.result.name
                line = self.index_line(expr.index, scope)
                self.reading.reads.append(_Read(search, expr.line, index, line, guards))

    def index_line(self, index: Expr, scope: _Scope) -> int:
        if isinstance(index, Name):
            binding = scope.lookup(index.id)
            if binding.line and binding.assignments == 0:
                return binding.line
        return index.line

    def classify(
        self, expr: Expr, scope: _Scope, facts: list[_Fact], search: _Search, depth: int
    ) -> tuple[str, list[Evidence]]:
        """Is ``expr`` the search result (raw), proved below the limit (safe), or neither?"""
        if depth > _MAX_DEPTH:
            return _OTHER, []
        kind, guards = self._classify_shape(expr, scope, facts, search, depth)
        if kind == _RAW:
            bound = self.fact_bound(expr, scope, facts, search)
            if bound is not None:
                return _SAFE, [bound]
        return kind, guards

    def _classify_shape(
        self, expr: Expr, scope: _Scope, facts: list[_Fact], search: _Search, depth: int
    ) -> tuple[str, list[Evidence]]:
        if isinstance(expr, Name):
            binding = scope.lookup(expr.id)
            if binding is search.result:
                return _RAW, []
            return self.classify_value(self.values.get(binding), facts, search, depth + 1)
        if isinstance(expr, Binary) and expr.op in ("+", "-"):
            if self.below_limit(expr, scope, search):
                return _SAFE, [self.evidence(expr.line, "bound", "index kept below the limit")]
            left, _ = self.classify(expr.left, scope, facts, search, depth + 1)
            step = _int_of(expr.right)
            if left == _RAW and step is not None and (step >= 0) == (expr.op == "+"):
                return _RAW, []
            return _OTHER, []
        if isinstance(expr, Call) and _callee(expr) in _MIN_FUNCTIONS and len(expr.args) >= 2:
            kinds = [self.classify(a, scope, facts, search, depth + 1) for a in expr.args]
            if any(k == _SAFE for k, _ in kinds):
                note = "index bounded by min() below the search limit"
                return _SAFE, [self.evidence(expr.line, "bound", note)]
            return (_RAW if any(k == _RAW for k, _ in kinds) else _OTHER), []
        if isinstance(expr, Ternary):
            cond = self.cond(expr.cond, scope, expr.line)
            return self._choose(
                [
                    self.classify(expr.then, scope, facts + [_Fact(cond, True)], search, depth + 1),
                    self.classify(
                        expr.other, scope, facts + [_Fact(cond, False)], search, depth + 1
                    ),
                ]
            )
        return _OTHER, []

    def classify_value(
        self, value: _Value, facts: list[_Fact], search: _Search, depth: int
    ) -> tuple[str, list[Evidence]]:
        if depth > _MAX_DEPTH or value is None:
            return _OTHER, []
        if isinstance(value, _At):
            return self.classify(value.expr, value.scope, facts, search, depth)
        if isinstance(value, _Choose):
            when_true, when_false = _Fact(value.cond, True), _Fact(value.cond, False)
            return self._choose(
                [
                    self.classify_value(value.then, facts + [when_true], search, depth + 1),
                    self.classify_value(value.other, facts + [when_false], search, depth + 1),
                ]
            )
        if isinstance(value, _Either):
            return self._choose(
                [
                    self.classify_value(value.first, facts, search, depth + 1),
                    self.classify_value(value.second, facts, search, depth + 1),
                ]
            )
        # A compound update of a value (x += ..., x -= ...): the result of the search is
        # only ever read through plain copies and bounds, so an update is not that result.
        return _OTHER, []

    @staticmethod
    def _choose(kinds: list[tuple[str, list[Evidence]]]) -> tuple[str, list[Evidence]]:
        """Either of two values: raw if either may be raw, safe if one is and neither raw."""
        if any(k == _RAW for k, _ in kinds):
            return _RAW, []
        safe = [g for k, gs in kinds if k == _SAFE for g in gs]
        if safe:
            return _SAFE, safe
        return _OTHER, []

    def below_limit(self, expr: Binary, scope: _Scope, search: _Search) -> bool:
        """``limit - k`` for a literal k >= 1."""
        if expr.op != "-":
            return False
        step = _int_of(expr.right)
        if step is None or step < 1:
            return False
        return self.canon(expr.left, scope, 0) == search.limit_key

    def fact_bound(
        self, expr: Expr, scope: _Scope, facts: list[_Fact], search: _Search
    ) -> Evidence | None:
        key = self.canon(expr, scope, 0)
        limit = search.limit_key
        for fact in facts:
            for op, left, right in fact.relations:
                if left != key and right == key:
                    op, left, right = _MIRROR[op], right, left
                if left != key:
                    continue
                if op in ("<", "!=") and right == limit:
                    return self.evidence(fact.line, "bound", "index tested below the limit")
                if op in ("<", "<=") and _is_minus(right, limit):
                    return self.evidence(fact.line, "bound", "index tested below the limit")
        return None

    def cond(self, expr: Expr, scope: _Scope, line: int) -> _Cond:
        at = _At(expr, scope)
        return _Cond(at, line, tuple(self.relations(at, True)), tuple(self.relations(at, False)))

    def relations(self, cond: _At, truth: bool) -> Iterator[_Relation]:
        """The comparisons ``cond == truth`` implies, as (op, left key, right key)."""
        expr = cond.expr
        if isinstance(expr, Unary) and expr.op == "!":
            yield from self.relations(_At(expr.operand, cond.scope), not truth)
        elif isinstance(expr, Binary) and expr.op in ("&&", "||"):
            if (expr.op == "&&") == truth:  # a && b true, or a || b false: both hold
                yield from self.relations(_At(expr.left, cond.scope), truth)
                yield from self.relations(_At(expr.right, cond.scope), truth)
        elif isinstance(expr, Binary) and expr.op in _NEGATE:
            op = expr.op if truth else _NEGATE[expr.op]
            yield op, self.canon(expr.left, cond.scope, 0), self.canon(expr.right, cond.scope, 0)
        else:  # a bare value: true means non-zero
            yield ("!=" if truth else "=="), self.canon(expr, cond.scope, 0), ("num", 0)

    # -- the total
    def total_guards(self, facts: list[_Fact], search: _Search) -> list[Evidence]:
        """Facts on the path that make the total of the searched array non-zero."""
        guards = []
        for fact in facts:
            for op, left, right in self._relations_at(fact.cond.at, fact.truth):
                subject = self._nonzero_subject(op, left, right)
                if subject is None:
                    continue
                expr, scope = subject
                if self.is_boolean(expr, scope, 0):  # a comparison holding is not a count
                    continue
                # The search's own bounds read the array too, but say nothing of the total.
                internal = {search.result, search.other_bound}
                if self.depends_on_array(expr, scope, search.array, 0, internal):
                    note = (
                        "returns early when the total is 0"
                        if fact.exit
                        else "runs only when the total is non-zero"
                    )
                    guards.append(self.evidence(fact.line, "zero-total", note))
                    break
        return guards

    def _relations_at(self, cond: _At, truth: bool) -> Iterator[tuple[str, _At, object]]:
        """Like :meth:`relations`, keeping the non-constant side as an expression."""
        expr = cond.expr
        if isinstance(expr, Unary) and expr.op == "!":
            yield from self._relations_at(_At(expr.operand, cond.scope), not truth)
        elif isinstance(expr, Binary) and expr.op in ("&&", "||"):
            if (expr.op == "&&") == truth:
                yield from self._relations_at(_At(expr.left, cond.scope), truth)
                yield from self._relations_at(_At(expr.right, cond.scope), truth)
        elif isinstance(expr, Binary) and expr.op in _NEGATE:
            op = expr.op if truth else _NEGATE[expr.op]
            if _int_of(expr.right) is not None:
                yield op, _At(expr.left, cond.scope), _int_of(expr.right)
            elif _int_of(expr.left) is not None:
                yield _MIRROR[op], _At(expr.right, cond.scope), _int_of(expr.left)
        else:
            yield ("!=" if truth else "=="), cond, 0

    @staticmethod
    def _nonzero_subject(op: str, left: _At, right: object) -> tuple[Expr, _Scope] | None:
        if not isinstance(right, int):
            return None
        nonzero = (
            (op == "!=" and right == 0) or (op == ">" and right >= 0) or (op == ">=" and right >= 1)
        )
        return (left.expr, left.scope) if nonzero else None

    def is_boolean(self, expr: Expr, scope: _Scope, depth: int) -> bool:
        """A comparison or logical value, directly or through a copy."""
        if depth > _MAX_DEPTH:
            return False
        if isinstance(expr, Name):
            binding = scope.lookup(expr.id)
            value = self.values.get(binding)
            if binding.assignments == 0 and isinstance(value, _At):
                return self.is_boolean(value.expr, value.scope, depth + 1)
            return False
        if isinstance(expr, Binary):
            return expr.op in _NEGATE or expr.op in ("&&", "||")
        return isinstance(expr, Unary) and expr.op == "!"

    def depends_on_array(
        self,
        expr: Expr,
        scope: _Scope,
        array: tuple[_Binding, object],
        depth: int,
        seen: set[_Binding],
    ) -> bool:
        """Whether ``expr`` is computed from what the kernel stored into (or reads from) array."""
        if depth > _MAX_DEPTH:
            return False
        stored = self.stores.get(array, set())
        for node in _walk(expr):
            if isinstance(node, Index) and self.root(node.base, scope, 0) == array:
                return True
            if not isinstance(node, Name):
                continue
            binding = scope.lookup(node.id)
            if binding in seen:
                continue
            if binding in stored:
                return True
            seen.add(binding)
            for at in _value_parts(self.values.get(binding)):
                if self.depends_on_array(at.expr, at.scope, array, depth + 1, seen):
                    return True
        return False

    # -- canonical keys: structural equality through copies and single assignments
    def canon(self, expr: Expr, scope: _Scope, depth: int) -> object:
        """A key equal for equal values: copies and not-yet-reassigned variables are
        replaced by their definitions; anything else is its own variable."""
        if depth > _MAX_DEPTH:
            return ("deep", id(expr))
        if isinstance(expr, Name):
            binding = scope.lookup(expr.id)
            value = self.values.get(binding)
            if binding.assignments == 0 and isinstance(value, _At) and not binding.array:
                return self.canon(value.expr, value.scope, depth + 1)
            return ("var", id(binding))
        if isinstance(expr, Num):  # an unknown constant (sizeof, a literal) equals only itself
            return ("num", expr.value if expr.value is not None else id(expr))
        if isinstance(expr, Binary):
            return (
                expr.op,
                self.canon(expr.left, scope, depth + 1),
                self.canon(expr.right, scope, depth + 1),
            )
        if isinstance(expr, Unary):
            return (expr.op, self.canon(expr.operand, scope, depth + 1))
        if isinstance(expr, Call):
            return (
                "call",
                _callee(expr) or id(expr),
                tuple(self.canon(a, scope, depth + 1) for a in expr.args),
            )
        if isinstance(expr, Member):
            return ("member", self.canon(expr.base, scope, depth + 1), expr.name)
        return ("expr", id(expr))

    def evidence(self, line: int, kind: str, note: str) -> Evidence:
        return Evidence(line, kind, self.code(line), note)


_NEGATE = {"<": ">=", ">=": "<", ">": "<=", "<=": ">", "==": "!=", "!=": "=="}
_MIRROR = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "==": "==", "!=": "!="}


def _is_minus(key: object, limit: object) -> bool:
    return (
        isinstance(key, tuple)
        and len(key) == 3
        and key[0] == "-"
        and key[1] == limit
        and isinstance(key[2], tuple)
        and key[2][0] == "num"
        and isinstance(key[2][1], int)
        and key[2][1] >= 1
    )


def _merge(a: dict[_Binding, _Value], b: dict[_Binding, _Value], join) -> dict[_Binding, _Value]:
    merged = dict(a)
    for binding, value in b.items():
        if binding not in merged:
            merged[binding] = value
        elif merged[binding] is not value:
            merged[binding] = join(merged[binding], value)
    return merged


def _value_parts(value: _Value) -> Iterator[_At]:
    if isinstance(value, _At):
        yield value
    elif isinstance(value, _Choose):
        yield value.cond.at
        yield from _value_parts(value.then)
        yield from _value_parts(value.other)
    elif isinstance(value, _Either):
        yield from _value_parts(value.first)
        yield from _value_parts(value.second)
    elif isinstance(value, _Update):
        yield from _value_parts(value.old)
        yield value.rhs


def _always_exits(stmt: Stmt) -> bool:
    if isinstance(stmt, Jump):
        return True
    if isinstance(stmt, Block):
        return any(_always_exits(s) for s in stmt.body)
    if isinstance(stmt, If):
        return stmt.other is not None and _always_exits(stmt.then) and _always_exits(stmt.other)
    return False


def _walk(expr: Expr) -> Iterator[Expr]:
    yield expr
    if isinstance(expr, (Index,)):
        yield from _walk(expr.base)
        yield from _walk(expr.index)
    elif isinstance(expr, Call):
        yield from _walk(expr.func)
        for arg in expr.args:
            yield from _walk(arg)
    elif isinstance(expr, Member):
        yield from _walk(expr.base)
    elif isinstance(expr, Unary):
        yield from _walk(expr.operand)
    elif isinstance(expr, (Binary,)):
        yield from _walk(expr.left)
        yield from _walk(expr.right)
    elif isinstance(expr, Ternary):
        yield from _walk(expr.cond)
        yield from _walk(expr.then)
        yield from _walk(expr.other)
    elif isinstance(expr, Assign):
        yield from _walk(expr.target)
        yield from _walk(expr.value)


def _walk_stmt(stmt: Stmt | None) -> Iterator[Expr | Declarator]:
    """Every expression and declarator in a statement, lambdas excluded."""
    if stmt is None:
        return
    if isinstance(stmt, Block):
        for s in stmt.body:
            yield from _walk_stmt(s)
    elif isinstance(stmt, Decl):
        for item in stmt.items:
            yield item
            if item.init is not None:
                yield from _walk(item.init)
    elif isinstance(stmt, ExprStmt):
        yield from _walk(stmt.expr)
    elif isinstance(stmt, If):
        yield from _walk(stmt.cond)
        yield from _walk_stmt(stmt.then)
        yield from _walk_stmt(stmt.other)
    elif isinstance(stmt, Loop):
        yield from _walk_stmt(stmt.init)
        for part in (stmt.cond, stmt.step):
            if part is not None:
                yield from _walk(part)
        yield from _walk_stmt(stmt.body)
    elif isinstance(stmt, Jump) and stmt.value is not None:
        yield from _walk(stmt.value)


def _names(expr: Expr) -> set[str]:
    return {node.id for node in _walk(expr) if isinstance(node, Name)}


def _comparison_sides(cond: Expr | None) -> tuple[str, str] | None:
    """``lo < hi``, ``hi > lo`` or ``lo != hi`` over two variables: (lo, hi)."""
    if not isinstance(cond, Binary) or cond.op not in ("<", ">", "!="):
        return None
    if not (isinstance(cond.left, Name) and isinstance(cond.right, Name)):
        return None
    if cond.op == ">":
        return cond.right.id, cond.left.id
    return cond.left.id, cond.right.id


def _is_midpoint(expr: Expr, low: str, high: str) -> bool:
    """An expression of ``low`` and ``high`` only that halves something: (lo+hi)/2 and kin."""
    names = _names(expr)
    if names != {low, high}:
        return False
    for node in _walk(expr):
        if isinstance(node, Binary) and (
            (node.op == "/" and _int_of(node.right) == 2)
            or (node.op == ">>" and _int_of(node.right) == 1)
        ):
            return True
    return False


def _midpoint_name(body: Stmt, low: str, high: str) -> str | None:
    """The variable the loop body sets to the midpoint of ``low`` and ``high``."""
    for node in _walk_stmt(body):
        if isinstance(node, Declarator) and node.init is not None:
            name, value = node.name, node.init
        elif isinstance(node, Assign) and node.op == "=" and isinstance(node.target, Name):
            name, value = node.target.id, node.value
        else:
            continue
        if _is_midpoint(value, low, high):
            return name
    return None


def _indexed_by(body: Stmt, mid: str) -> Expr | None:
    """The array expression read at ``[mid]`` inside the loop body."""
    for node in _walk_stmt(body):
        if isinstance(node, Index) and isinstance(node.index, Name) and node.index.id == mid:
            return node.base
    return None


def _moved_past(body: Stmt, mid: str, low: str, high: str) -> str:
    """Which bound the loop sets to ``mid + 1``: that bound is the search result."""
    for node in _walk_stmt(body):
        if not (isinstance(node, Assign) and isinstance(node.target, Name)):
            continue
        if node.target.id in (low, high) and any(_is_successor(n, mid) for n in _walk(node.value)):
            return node.target.id
    return low


def _is_successor(expr: Expr, name: str) -> bool:
    """``name + 1``."""
    return (
        isinstance(expr, Binary)
        and expr.op == "+"
        and isinstance(expr.left, Name)
        and expr.left.id == name
        and _int_of(expr.right) == 1
    )


def _int_of(expr: Expr) -> int | None:
    if isinstance(expr, Num):
        return expr.value
    if isinstance(expr, Unary) and expr.op == "-" and isinstance(expr.operand, Num):
        return None if expr.operand.value is None else -expr.operand.value
    return None


def _callee(call: Call) -> str | None:
    func = call.func
    if isinstance(func, Name):
        return func.id.rsplit("::", 1)[-1]
    if isinstance(func, Member):
        return func.name
    return None


def _spelling(expr: Expr) -> str:
    if isinstance(expr, Name):
        return expr.id
    if isinstance(expr, Member):
        return f"{_spelling(expr.base)}.{expr.name}"
    return "<array>"


# --------------------------------------------------------------------------- verdict


def _decide(
    path: str, readings: list[_Reading], functions: list[Function], lines: list[str]
) -> HeaderCheck:
    if not functions:
        return HeaderCheck(path, "unknown", "no function definition found in the header")
    relevant = [r for r in readings if r.reads]
    if not relevant:
        found = (
            "a binary search but no read of its array at its result"
            if readings
            else "no binary search over an array in any function"
        )
        return HeaderCheck(path, "unknown", f"could not find the scheduler's search: {found}")
    reads = [read for r in relevant for read in r.reads]
    hazards = [read for read in reads if not read.guards]
    chosen = hazards[0] if hazards else reads[0]
    search = chosen.search
    found = HeaderCheck(
        path,
        "unknown",
        "",
        function=search.function,
        array=search.array_name,
        result=search.result.name,
        limit=_render_limit(search),
        search=Evidence(
            search.line,
            "search",
            _code(lines, search.line),
            f"binary search over {search.array_name} in "
            f"{'kernel' if search.kernel else 'function'} {search.function}; "
            f"result {search.result.name}",
        ),
    )
    if hazards:
        return _unguarded(found, search, hazards, lines)
    guards = tuple(_unique(g for read in reads for g in read.guards))
    reading = next(r for r in relevant if chosen in r.reads)
    unread = sorted(set(reading.unread_lines))
    if unread:
        reason = f"guards found, but lines {', '.join(map(str, unread))} could not be read"
        return replace(found, reason=reason, guards=guards)
    reason = f"every read of {search.array_name} at the search result is guarded: " + "; ".join(
        f"{g.note} (line {g.line})" for g in guards
    )
    return replace(found, status="guarded", reason=reason, guards=guards)


def _unguarded(
    found: HeaderCheck, search: _Search, hazards: list[_Read], lines: list[str]
) -> HeaderCheck:
    evidence = []
    for read in hazards:
        code = _code(lines, read.line)
        evidence.append(
            Evidence(read.line, "read", code, f"{search.array_name}[{read.index}] read")
        )
        if read.index_line and read.index_line != read.line:
            note = f"{read.index} is the search result, unbounded"
            evidence.append(Evidence(read.index_line, "index", _code(lines, read.index_line), note))
    first, result, limit = hazards[0], search.result.name, found.limit
    details = [f"{first.index} = {result}"] if first.index != result else []
    details += [_storage(search)] if search.array[0].shared else []
    detail = f" ({', '.join(details)})" if details else ""
    reason = (
        f"reads {search.array_name}[{first.index}]{detail} at the result of the binary "
        f"search on line {search.line}, with no bound below {limit} and no early return on "
        f"a zero total: when every length is 0 the search ends at {result} == {limit}, "
        "one past the data"
    )
    return replace(found, status="unguarded", reason=reason, hazards=tuple(_unique(evidence)))


def _code(lines: list[str], line: int) -> str:
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def _storage(search: _Search) -> str:
    root = search.array[0].name
    return "in shared memory" if root == search.array_name else f"in __shared__ {root}"


def _render_limit(search: _Search) -> str:
    if search.limit is None:
        return "the search limit"
    expr = search.limit.expr
    return _spelling(expr) if isinstance(expr, (Name, Member)) else "the search limit"


def _unique(evidence) -> list[Evidence]:
    seen: set[tuple[int, str]] = set()
    out = []
    for e in evidence:
        if (e.line, e.kind) not in seen:
            seen.add((e.line, e.kind))
            out.append(e)
    return out
