"""Re-parsing an edited buffer with LibCST while reusing the statements that did not change.

LibCST has no incremental parser, and a full parse of a 2,000-line module costs about
100 ms, a third of an edit's analysis in the language server. Python's own parser (which
``project.parse_module`` runs first anyway, and which costs a tenth of that) says where
each top-level statement starts and ends; the module is cut into chunks at the starts of
statements that are separated from the statement before them by empty lines only. At
such a cut LibCST's tree is cut too: the empty lines are the next statement's
``leading_lines`` and no comment lies in between that LibCST could give to the indented
block before (an indented comment after a block belongs to the block's footer, a
whitespace-only line may too; neither is allowed at a cut). So a chunk's statements are
the same whether LibCST sees the chunk alone or the whole module, and a chunk whose text
did not change since the last parse of the file keeps its statement nodes: only the
chunks an edit touched are parsed.

The reused nodes are the very objects of the previous tree, so everything the analysis
keeps per node (a function's scan of its assignments) stays valid. Where a cut cannot be
made safely (a single chunk, chunks that disagree on the indentation or the newline LibCST
would detect for the whole file, a chunk LibCST rejects) the module is parsed whole;
``tests/test_server_reparse.py`` checks the result against a full parse, node for node.
"""

from __future__ import annotations

import ast
import io
import itertools
from dataclasses import dataclass
from pathlib import Path

import libcst as cst

from zerolint.project import parse_cst

_EMPTY = ("\n", "\r\n", "\r")


@dataclass(frozen=True, slots=True)
class _Chunk:
    """One chunk's parse: its statements, and for the first and last chunk of a module what
    LibCST gives the module (header, footer, trailing newline)."""

    body: tuple[cst.BaseStatement, ...]
    header: tuple[cst.EmptyLine, ...]
    footer: tuple[cst.EmptyLine, ...]
    indent: str
    newline: str
    trailing_newline: bool


def _start(stmt: ast.stmt) -> int:
    """The first line of a statement, its decorators included."""
    return min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", ())])


Piece = tuple[int, int, list[ast.stmt]]  # start and end offsets in the text, its statements


def _pieces(lines: list[str], offsets: list[int], stmts: list[ast.stmt], begin: int, end: int):
    """Cut the text from offset ``begin`` to ``end``, holding ``stmts`` (one block's
    statements), before each statement that only empty lines separate from the one before."""
    out: list[Piece] = []
    held: list[ast.stmt] = [stmts[0]]
    for before, stmt in itertools.pairwise(stmts):
        start = _start(stmt)
        last = before.end_lineno or before.lineno
        between = lines[last : start - 1]  # 1-based lines last+1 .. start-1
        if start <= last or not all(line in _EMPTY for line in between):
            held.append(stmt)  # `a = 1; b = 2` is one LibCST line; a comment: no cut
            continue
        out.append((begin, offsets[last], held))  # the empty lines open the next piece
        begin, held = offsets[last], [stmt]
    out.append((begin, end, held))
    return out


def _lines(text: str) -> tuple[list[str], list[int]]:
    """Lines as the tokenizer sees them (only LF, CR LF and CR end one), and the offset
    at which each starts (and the text's length)."""
    lines = io.StringIO(text, newline="").readlines()
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    return lines, offsets


def chunks_of(text: str, tree: ast.Module) -> list[str]:
    """``text`` cut at the statements a chunk may start with (see the module's docstring);
    the pieces joined give ``text`` back."""
    if len(tree.body) < 2:
        return [text]
    lines, offsets = _lines(text)
    return [text[a:b] for a, b, _ in _pieces(lines, offsets, tree.body, 0, len(text))]


@dataclass(slots=True)
class _Class:
    """A class that was a chunk by itself: its node (header, decorators, block), and its
    body's pieces by their text (the statements each parsed to)."""

    node: cst.ClassDef
    pieces: dict[str, tuple[cst.BaseStatement, ...]]
    indent: str  # what its chunk's parse detected
    newline: str


class Reparser:
    """Parses modules with LibCST, reusing the unchanged chunks of each file's last parse,
    and within a class that is a chunk by itself, its unchanged methods."""

    def __init__(self) -> None:
        # path -> (chunk position, chunk text) -> its parse. Positions: 0 first, 1 middle,
        # 2 last (a first or last chunk also carries the module's header or footer).
        self.last: dict[Path, dict[tuple[int, str], _Chunk]] = {}
        # path -> the text of a class's header (up to its body) -> the class.
        self.classes: dict[Path, dict[str, _Class]] = {}
        self.reused = 0  # statements reused, and parsed, by the last call (for tests)
        self.parsed = 0

    def forget(self, path: Path) -> None:
        self.last.pop(path, None)
        self.classes.pop(path, None)

    def __call__(self, path: Path, text: str, tree: ast.Module) -> cst.Module:
        """The LibCST module of ``text`` (whose ``ast`` tree is ``tree``); raises as
        ``libcst.parse_module(text)`` does, with the same positions."""
        self.reused = self.parsed = 0
        self._used: set[int] = set()
        lines, offsets = _lines(text)
        pieces = _pieces(lines, offsets, tree.body, 0, len(text)) if len(tree.body) > 1 else []
        if len(pieces) < 2:
            return self._whole(path, text, tree)
        previous = self.last.get(path, {})
        classes, self.classes[path] = self.classes.get(path, {}), {}
        kept: dict[tuple[int, str], _Chunk] = {}
        parts: list[_Chunk] = []
        try:
            for i, (a, b, stmts) in enumerate(pieces):
                piece = text[a:b]
                where = 0 if i == 0 else 2 if i == len(pieces) - 1 else 1
                chunk = previous.get((where, piece))
                if chunk is not None and self._unused(chunk.body):
                    self.reused += len(chunk.body)
                elif where == 1 and len(stmts) == 1 and isinstance(stmts[0], ast.ClassDef):
                    chunk = self._class(path, text, lines, offsets, (a, b), stmts[0], classes)
                else:
                    chunk = _parse_chunk(piece, where)
                    self.parsed += len(chunk.body)
                if isinstance(stmts[0], ast.ClassDef) and len(stmts) == 1 and where == 1:
                    self._remember_class(path, text, lines, offsets, (a, b), stmts[0], chunk)
                kept[(where, piece)] = chunk
                parts.append(chunk)
        except (cst.ParserSyntaxError, RecursionError):
            parts = []  # the whole module's parse says where, in the whole module
        first, last = (parts[0], parts[-1]) if parts else (None, None)
        if (
            first is None
            or last is None
            or any((c.indent, c.newline) != (first.indent, first.newline) for c in parts)
        ):
            return self._whole(path, text, tree)
        self.last[path] = kept
        return cst.Module(
            body=[s for c in parts for s in c.body],
            header=first.header,
            footer=last.footer,
            encoding="utf-8",
            default_indent=first.indent,
            default_newline=first.newline,
            has_trailing_newline=last.trailing_newline,
        )

    def _unused(self, stmts: tuple[cst.BaseStatement, ...]) -> bool:
        """Whether none of ``stmts`` (nor a class's statements among them) is in the tree
        being built yet, and if so, mark them used. A text met twice (two equal methods, a
        class and its copy) gets fresh nodes the second time: one node in two places would
        be one statement to the analysis."""
        ids = [id(s) for s in stmts]
        for s in stmts:
            if isinstance(s, cst.ClassDef) and isinstance(s.body, cst.IndentedBlock):
                ids += [id(inner) for inner in s.body.body]
        if any(i in self._used for i in ids):
            return False
        self._used.update(ids)
        return True

    def _whole(self, path: Path, text: str, tree: ast.Module) -> cst.Module:
        self.forget(path)
        self.reused, self.parsed = 0, len(tree.body)
        return parse_cst(text)

    # ------------------------------------------------------------------ classes

    def _class(
        self,
        path: Path,
        text: str,
        lines: list[str],
        offsets: list[int],
        span: tuple[int, int],
        cls: ast.ClassDef,
        classes: dict[str, _Class],
    ) -> _Chunk:
        """A changed chunk that is one class: when its header is the one of a class of the
        last parse, only the pieces of its body that changed are parsed (each inside a
        class header, as in the file), the rest are that class's statements."""
        split = _class_split(lines, offsets, span, cls)
        known = classes.get(text[span[0] : split[0]]) if split is not None else None
        block = known.node.body if known is not None else None
        if (
            split is None
            or known is None
            or not isinstance(block, cst.IndentedBlock)
            or block.indent is not None
            or block.footer
            or id(known.node) in self._used  # its header is another class's already
        ):
            chunk = _parse_chunk(text[span[0] : span[1]], 1)
            self.parsed += len(chunk.body)
            return chunk
        assert known is not None and isinstance(block, cst.IndentedBlock)
        self._used.add(id(known.node))
        indent, newline = known.indent, known.newline
        body: list[cst.BaseStatement] = []
        for a, b, held in split[1]:
            piece = text[a:b]
            stmts = known.pieces.get(piece)
            if stmts is None or not self._unused(stmts):
                wrapper = parse_cst("class _:" + newline + piece)
                inner = wrapper.body[0] if len(wrapper.body) == 1 else None
                if (
                    not isinstance(inner, cst.ClassDef)
                    or not isinstance(inner.body, cst.IndentedBlock)
                    or (wrapper.default_indent, wrapper.default_newline) != (indent, newline)
                    # LibCST makes one statement of the simple statements on one line.
                    or len(inner.body.body) != len({s.lineno for s in held})
                ):
                    chunk = _parse_chunk(text[span[0] : span[1]], 1)
                    self.parsed += len(chunk.body)
                    return chunk
                stmts = tuple(inner.body.body)
                self.parsed += len(stmts)
            else:
                self.reused += len(stmts)
            body.extend(stmts)
        node = known.node.with_changes(body=block.with_changes(body=body))
        return _Chunk((node,), (), (), indent, newline, True)

    def _remember_class(
        self,
        path: Path,
        text: str,
        lines: list[str],
        offsets: list[int],
        span: tuple[int, int],
        cls: ast.ClassDef,
        chunk: _Chunk,
    ) -> None:
        """Keep a class that is a chunk by itself, with its body's pieces, for the next edit."""
        split = _class_split(lines, offsets, span, cls)
        node = chunk.body[0] if len(chunk.body) == 1 else None
        if split is None or not isinstance(node, cst.ClassDef):
            return
        stmts = list(node.body.body) if isinstance(node.body, cst.IndentedBlock) else []
        pieces: dict[str, tuple[cst.BaseStatement, ...]] = {}
        at = 0
        for a, b, held in split[1]:
            # LibCST makes one statement of the simple statements on one line.
            count = len({s.lineno for s in held})
            pieces[text[a:b]] = tuple(stmts[at : at + count])
            at += count
        if at != len(stmts):
            return  # the pieces do not match the statements: keep nothing
        self.classes.setdefault(path, {})[text[span[0] : split[0]]] = _Class(
            node, pieces, chunk.indent, chunk.newline
        )


def _class_split(
    lines: list[str], offsets: list[int], span: tuple[int, int], cls: ast.ClassDef
) -> tuple[int, list[Piece]] | None:
    """Where a class's header ends (the offset after the line with its colon) and its body's
    pieces; None for a class whose body starts on its header's line."""
    first = _start(cls.body[0])
    if first <= cls.lineno:
        return None
    end = first - 1  # the header's last line: the last line of code before the body
    while end > cls.lineno and (
        not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")
    ):
        end -= 1
    return offsets[end], _pieces(lines, offsets, cls.body, offsets[end], span[1])


def _parse_chunk(piece: str, where: int) -> _Chunk:
    module = parse_cst(piece)
    body = tuple(module.body)
    header = tuple(module.header)
    if where != 0 and header:
        # Alone, the chunk's opening empty lines are a module header; in the file they are
        # its first statement's leading lines.
        body = (body[0].with_changes(leading_lines=[*header, *body[0].leading_lines]), *body[1:])
        header = ()
    return _Chunk(
        body=body,
        header=header,
        footer=tuple(module.footer) if where == 2 else (),
        indent=module.default_indent,
        newline=module.default_newline,
        trailing_newline=module.has_trailing_newline,
    )
