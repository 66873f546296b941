"""How deeply a module nests, measured on Python's own tree before LibCST is given it.

LibCST's native parser recurses once per level of nesting and overflows the C stack (a
segmentation fault, which no ``except`` can catch) at about ten thousand levels; its
Python side and zerolint's own interpreter recurse too, and end in ``RecursionError``
at a few hundred. Nesting here is counted as LibCST builds it, not as ``ast`` does:
``a and b and c`` is one flat ``BoolOp`` for ``ast`` but two nested ``BooleanOperation``
nodes for LibCST, and so are the parts of an implicitly concatenated string; an ``elif``
chain nests in both.

The measure is cheap because it is bounded by the source: every level of nesting
consumes at least one byte of source, so an expression shorter (in bytes) than the depth
still allowed cannot go over, and is not walked. Only long expressions are visited node
by node, and only long string constants are tokenized to count their parts.
"""

from __future__ import annotations

import ast
import io
import itertools
import tokenize

# Levels the analyser is known to handle on CPython's default recursion limit (1000), with
# room for the frames below it: zerolint recurses about twice per level of an expression.
MAX_DEPTH = 250

_STRINGS = (ast.Constant, ast.JoinedStr)


def deeper_than(tree: ast.Module, text: str, limit: int = MAX_DEPTH) -> int | None:
    """The nesting depth of ``tree`` (parsed from ``text``) as LibCST would build it, if it
    is over ``limit``; None when it is not (without measuring all of it)."""
    data = text.encode("utf-8", "surrogatepass")
    lines = data.splitlines(keepends=True)  # as Python counts lines: \n, \r\n and \r
    starts = [0, *itertools.accumulate(map(len, lines))]

    def span(node: ast.AST) -> int:
        """An upper bound, in bytes, of the node's source (``ast`` columns are bytes)."""
        start = starts[node.lineno - 1] + node.col_offset  # type: ignore[attr-defined]
        end_line = node.end_lineno or node.lineno  # type: ignore[attr-defined]
        end = starts[end_line - 1] + (node.end_col_offset or 0)  # type: ignore[attr-defined]
        return end - start

    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        # A statement's span holds all of it but its decorators, which come before it; an
        # expression statement spans what its expression does: one level more than bytes.
        located = not isinstance(node, ast.mod) and hasattr(node, "end_lineno")
        extra = 1 if isinstance(node, ast.stmt) else 0
        if (
            located
            and depth + span(node) + extra <= limit
            and not getattr(node, "decorator_list", ())
        ):
            continue  # too short to nest past the limit
        if isinstance(node, ast.BoolOp):
            depth += len(node.values) - 2  # LibCST: one binary node per operator
        elif isinstance(node, _STRINGS) and located:
            depth += _string_parts(node, lines) - 1
        if depth > limit:
            return depth
        children = ast.iter_child_nodes(node)
        if isinstance(node, ast.JoinedStr):  # its literal parts are counted above
            children = (c for c in node.values if isinstance(c, ast.FormattedValue))
        for child in children:
            stack.append((child, depth + 1))
    return None


def _string_parts(node: ast.AST, lines: list[bytes]) -> int:
    """How many literals make up a (possibly implicitly concatenated) string constant."""
    if isinstance(node, ast.Constant) and not isinstance(node.value, (str, bytes)):
        return 1
    first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1  # type: ignore[attr-defined]
    chosen = list(lines[first : last + 1])
    chosen[-1] = chosen[-1][: node.end_col_offset]  # type: ignore[attr-defined]
    chosen[0] = chosen[0][node.col_offset :]  # type: ignore[attr-defined]
    # In brackets, line breaks and indentation inside the segment mean nothing.
    source = "(" + b"".join(chosen).decode("utf-8", "replace") + "\n)"
    fstring_start = getattr(tokenize, "FSTRING_START", -1)
    count = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type in (tokenize.STRING, fstring_start):
                count += 1
    except (tokenize.TokenError, SyntaxError):
        pass
    return max(count, 1)
