"""Chunked loops: ``for s in range(0, n, c)`` with ``x[s : min(s + c, n)]`` in the body
takes a chunk of ``x``'s rows that is never empty (``Frame.chunks``)."""

from __future__ import annotations

import libcst as cst

from zerolint.dataflow.frames import Frame
from zerolint.dataflow.syntax import dotted, int_value, operand, range_args


def _text(node: cst.BaseExpression) -> str | None:
    """An operand (a name, a field, an integer literal) as text, for comparing two."""
    value = operand(node)
    return None if value == "<expr>" else str(value)


def record_chunk_start(
    frame: Frame, target: cst.BaseExpression, iterated: cst.BaseExpression
) -> None:
    """``for s in range(0, n, c)`` (or ``for i, s in enumerate(range(0, n, c))``): in
    the body, ``s`` is a chunk's start (``Frame.chunks``)."""
    if (
        type(iterated) is cst.Call
        and type(iterated.func) is cst.Name
        and iterated.func.value == "enumerate"
        and len(iterated.args) == 1
        and type(target) is cst.Tuple
        and len(target.elements) == 2
    ):
        iterated, target = iterated.args[0].value, target.elements[1].value
    args = range_args(iterated)
    if type(target) is not cst.Name or args is None or len(args) != 3:
        return
    if int_value(args[0]) != 0:
        return
    stop, step = _text(args[1]), _text(args[2])
    if stop is None or step is None or target.value in (stop, step):
        return
    frame.chunks[target.value] = ("start", stop, step, frozenset((stop, step)))


def chunk_end_of(frame: Frame, node: cst.BaseExpression) -> str | None:
    """The chunk start ``s`` whose end ``node`` is: ``min(s + c, n)`` (either way round)
    for the loop ``for s in range(0, n, c)``."""
    if (
        type(node) is not cst.Call
        or type(node.func) is not cst.Name
        or node.func.value != "min"
        or len(node.args) != 2
        or any(a.keyword is not None or a.star for a in node.args)
    ):
        return None
    for total, stop in (node.args, node.args[::-1]):
        total, stop = total.value, stop.value
        if type(total) is not cst.BinaryOperation or type(total.operator) is not cst.Add:
            continue
        for start, step in ((total.left, total.right), (total.right, total.left)):
            name = dotted(start)
            fact = frame.chunks.get(name) if name is not None else None
            if (
                fact is not None
                and fact[0] == "start"
                and fact[1] == _text(stop)
                and fact[2] == _text(step)
            ):
                return name
    return None


def record_chunk_end(frame: Frame, name: str, value: cst.BaseExpression | None) -> None:
    """``e = min(s + c, n)`` in the body of ``for s in range(0, n, c)``: ``e`` is the
    chunk's end (``Frame.chunks``)."""
    start = chunk_end_of(frame, value) if value is not None else None
    if start is not None and name != start:
        frame.chunks[name] = ("end", start, "", frozenset((start, *frame.chunks[start][3])))


def is_chunk(frame: Frame, lower: cst.BaseExpression, upper: cst.BaseExpression | None) -> bool:
    """``x[s:e]`` is a chunk of a loop over ``range(0, n, c)``: ``s`` the loop's variable,
    ``e`` its end (``min(s + c, n)``, written out or by a name assigned it)."""
    start = dotted(lower)
    fact = frame.chunks.get(start) if start is not None else None
    if fact is None or fact[0] != "start" or upper is None:
        return False
    end = dotted(upper)
    if end is not None:
        named = frame.chunks.get(end)
        return named is not None and named[0] == "end" and named[1] == start
    return chunk_end_of(frame, upper) == start
