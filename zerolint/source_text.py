"""The text of a statement or an argument, taken from the source.

A tree built by ``cst_build`` has LibCST's default formatting, so LibCST's
``code_for_node`` would print it reformatted. ``ModuleInfo.code`` asks this module
instead: the same text as ``code_for_node`` gives on the tree LibCST's parser builds, cut
from the source with the positions of Python's own tree. What LibCST counts as part of a
node and Python's positions do not is added back: the parentheses around an expression
(``(seq_lens // 4)``), a small statement's semicolon, and the comment lines LibCST puts
before a ``def``, a ``class`` or a ``try`` (whose first line is then that comment).
"""

from __future__ import annotations

import ast
import re

_COMMENT = re.compile(rb"#[^\r\n]*")


class Source:
    """A module's source as UTF-8 bytes, where Python's columns count."""

    def __init__(self, text: str) -> None:
        self.data = text.encode("utf-8")
        self.starts = [0]
        for line in self.data.splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(line))

    def offset(self, line: int, col: int) -> int:
        return self.starts[line - 1] + col

    def span(self, node: ast.AST) -> tuple[int, int]:
        start = self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        end = self.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
        return start, end

    def cut(self, start: int, end: int) -> str:
        return self.data[start:end].decode("utf-8", "replace")

    def grouped(self, node: ast.AST, gap_start: int, own: int = 0) -> tuple[int, int]:
        """``node``'s span with the parentheses that group it: the ``(`` between
        ``gap_start`` and the node, less ``own`` that belong to the syntax around it (a
        call's), each closed after it."""
        start, end = self.span(node)
        gap = _COMMENT.sub(lambda m: b" " * len(m.group()), self.data[gap_start:start])
        opens = [i for i, c in enumerate(gap) if c == 0x28][own:]
        if not opens:
            return start, end
        found = 0
        i = end
        n = len(self.data)
        while i < n and found < len(opens):
            c = self.data[i]
            if c == 0x29:
                found += 1
                i += 1
            elif c == 0x23:
                while i < n and self.data[i] not in b"\r\n":
                    i += 1
            elif c in b" \t\r\n\\\x0c":
                i += 1
            else:
                break
        if found == 0:
            return start, end
        return gap_start + opens[len(opens) - found], i

    def small_statement(self, stmt: ast.stmt) -> str:
        """A small statement with its semicolon, as LibCST prints it."""
        start, end = self.span(stmt)
        i = end
        while i < len(self.data) and self.data[i] in b" \t\x0c\\":
            i += 1
        if self.data[i : i + 1] == b";":
            end = i + 1
        return self.cut(start, end)

    def first_line(self, stmt: ast.stmt) -> str:
        """The first line of a def's, a class's, a try's or a match's code (``first_lineno``;
        not the comment lines above it, which LibCST counts as the statement's)."""
        return self.line(first_lineno(stmt)).strip().decode("utf-8", "replace")

    def line(self, number: int) -> bytes:
        end = self.starts[number] if number < len(self.starts) else len(self.data)
        return self.data[self.starts[number - 1] : end]


def first_lineno(stmt: ast.stmt) -> int:
    """The line a statement's text starts at: a def's or a class's first decorator, above
    the line Python's tree gives it, else its own."""
    return min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", ()))])


def _small(stmt: ast.stmt) -> bool:
    return (
        not isinstance(
            stmt,
            (
                ast.If,
                ast.For,
                ast.AsyncFor,
                ast.While,
                ast.With,
                ast.AsyncWith,
                ast.Try,
                ast.FunctionDef,
                ast.AsyncFunctionDef,
                ast.ClassDef,
                ast.Match,
            ),
        )
        and type(stmt).__name__ != "TryStar"
    )


def header(source: Source, stmt: ast.stmt) -> str:
    """What ``ModuleInfo.header`` gives for the statement ``stmt``."""
    start, _ = source.span(stmt)
    if isinstance(stmt, (ast.If, ast.While)):
        keyword = "while" if isinstance(stmt, ast.While) else "if"
        word = 4 if source.data.startswith(b"elif", start) else len(keyword)
        a, b = source.grouped(stmt.test, start + word)
        return f"{keyword} {source.cut(a, b)}:"
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        t0, t1 = source.grouped(stmt.target, source.data.find(b"for", start) + 3)
        i0, i1 = source.grouped(stmt.iter, t1)
        return f"for {source.cut(t0, t1)} in {source.cut(i0, i1)}:"
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        parts = []
        gap = source.data.find(b"with", start) + 4
        for item in stmt.items:
            a, b = source.grouped(item.context_expr, gap)
            if item.optional_vars is not None:
                _, b = source.grouped(item.optional_vars, b)
            parts.append(source.cut(a, b))
            gap = b
        return "with " + ", ".join(parts) + ":"
    if not _small(stmt):
        return source.first_line(stmt)
    return source.small_statement(stmt)


def argument(source: Source, call: ast.Call, index: int) -> str | None:
    """The text of the call's ``index``-th argument's value (in source order), with the
    parentheses around it."""
    items: list[ast.AST] = sorted(
        [*call.args, *call.keywords],
        key=lambda n: (n.lineno, n.col_offset),  # type: ignore[attr-defined]
    )
    if not 0 <= index < len(items):
        return None
    item = items[index]
    value = item.value if isinstance(item, (ast.keyword, ast.Starred)) else item
    if index == 0:
        gap, own = source.span(call.func)[1], 1
    else:
        gap, own = source.span(items[index - 1])[1], 0
    if isinstance(item, ast.keyword):  # `k=(x)`: no parenthesis of the call after `k`
        gap, own = max(gap, source.span(item)[0]), 0
    a, b = source.grouped(value, gap, own)
    if (
        isinstance(value, ast.GeneratorExp) and len(items) == 1 and b"(" not in source.data[gap:a]
    ):  # `f(x for x in y)`: Python's span takes the call's parentheses, LibCST does not
        return source.cut(a + 1, b - 1).strip()
    return source.cut(a, b)
