"""The index of a checked tree: module names, parsed modules, imports, functions, classes.

Modules are read once and parsed on demand: most files of a large tree can never reach a
kernel-metadata call, and zerolint decides that from their text before any parse. A file
is parsed only when it mentions a sink (or a wrapper of one), or when a path being
followed leads into it.
"""

from __future__ import annotations

import ast
import io
import re
import sys
import threading
import time
import tokenize
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

from zerolint.cst_build import Spans, build_module_placed
from zerolint.model import Diagnostic
from zerolint.nesting import MAX_DEPTH, deeper_than
from zerolint.paths import display_path, module_names
from zerolint.positions import (
    PositionIndex,
    build_index,
    content_fields,
    index_of,
    is_node_type,
    placed_index,
)

# LibCST checks each node as it is built (CSTNode.__post_init__ calls _validate), which is
# for nodes a program puts together by hand; a tree its own parser builds from source needs
# none of it, a tenth of the parse (its authors say as much where the check is made).
_CHECK_NODE = cst.CSTNode.__dict__.get("__post_init__")


def _built_by_the_parser(self: cst.CSTNode) -> None:
    return None


# LibCST's parser (native code) builds its own tree before the Python one and frees it
# after; the C library keeps what was freed, and Python's objects, in memory of their own,
# cannot use it. Given back after each large file, it does not add to the peak of a run
# (SGLang 0.5.23: 14 MB less, for 1 ms per file).
TRIM_AFTER = 32 * 1024  # characters


def give_back_free_memory() -> None:
    """Return the C heap's free memory to the system (glibc's ``malloc_trim``); nothing
    where the C library has no such call (looked for once, on Linux only)."""
    global _malloc_trim, _looked_for_malloc_trim
    if not _looked_for_malloc_trim:
        _looked_for_malloc_trim = True
        _malloc_trim = _find_malloc_trim()
    if _malloc_trim is not None:
        _malloc_trim(0)


def _find_malloc_trim() -> Callable[[int], object] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        found: Callable[[int], object] = ctypes.CDLL(None).malloc_trim
        return found
    except (OSError, AttributeError, ImportError, TypeError):  # no glibc (musl), no ctypes
        return None


_malloc_trim: Callable[[int], object] | None = None
_looked_for_malloc_trim = False


def parse_cst(text: str) -> cst.Module:
    """``libcst.parse_module(text)``, without checking each node the parser builds. The
    check is switched off for the whole process while the parser runs, so this is the
    plain parse wherever another thread might build nodes meanwhile (the language server
    builds fixes while it parses), and where LibCST checks nodes some other way than this
    version does."""
    if (
        _CHECK_NODE is None
        or cst.CSTNode.__dict__.get("__post_init__") is not _CHECK_NODE
        or threading.active_count() > 1
    ):
        return cst.parse_module(text)
    cst.CSTNode.__post_init__ = _built_by_the_parser  # type: ignore[method-assign]
    try:
        return cst.parse_module(text)
    finally:
        cst.CSTNode.__post_init__ = _CHECK_NODE  # type: ignore[method-assign]


class BadInput(Exception):
    """A file that cannot be analysed; carries its one-line diagnostic."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


@dataclass(slots=True, eq=False)
class ClassInfo:
    name: str
    qualname: str
    node: cst.ClassDef
    module: ModuleInfo
    methods: dict[str, cst.FunctionDef] = field(default_factory=dict)
    bases: list[cst.BaseExpression] = field(default_factory=list)
    fields: list[str] = field(default_factory=list)  # annotated class-level names, in order
    # Class-level names bound by assignment (``kernel = staticmethod(_kernel)``, annotated
    # or not): each assignment (the small statement) and its value, in order.
    assigned: dict[str, list[tuple[cst.Assign | cst.AnnAssign, cst.BaseExpression]]] = field(
        default_factory=dict
    )
    is_dataclass: bool = False


@dataclass(slots=True, eq=False)
class ModuleInfo:
    name: str
    path: Path
    display: str
    text: str
    module: cst.Module
    imports: dict[str, str] = field(default_factory=dict)
    functions: dict[str, cst.FunctionDef] = field(default_factory=dict)
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    # Functions defined inside functions (and the methods of classes defined there), in
    # source order: summarised too, so that a sink call in one is checked.
    nested: list[cst.FunctionDef] = field(default_factory=list)
    # For each of them (by id), the function it is defined in, and that function's class
    # where it is a method: where the names it reads but does not bind (a closure's) live.
    enclosing: dict[int, tuple[cst.FunctionDef, ClassInfo | None]] = field(default_factory=dict)
    # Module-level names bound by assignment (value expressions, in order), and the
    # statement of each value (by id).
    assigned: dict[str, list[cst.BaseExpression]] = field(default_factory=dict)
    assigned_in: dict[int, cst.CSTNode] = field(default_factory=dict)
    # Module-level names also bound otherwise than by an assignment to the name alone: an
    # import, `+=`, a tuple target, a `for` or `with` target (none is a constant).
    rebound: set[str] = field(default_factory=set)
    # Names that some function declares `global` (written from inside functions), or
    # writes as `globals()["NAME"] = ...`.
    declared_globals: set[str] = field(default_factory=set)
    # The module hands out its namespace (`globals()` other than under a literal key:
    # `globals().update(d)`, `globals()[k] = v`): any of its names may be bound again.
    globals_escape: bool = False
    # For each such name, the module-level functions (by name) whose body, nested functions
    # included, declares it: the only ones whose summaries can write it.
    global_writers: dict[str, set[str]] = field(default_factory=dict)
    # The modules of its `from m import *` lines, in order: where a name found nowhere else
    # may be.
    star_imports: tuple[str, ...] = ()
    # Module-level names that imports bind to two things, or that an import and a `def` or
    # a `class` both bind (`from .fast import f` in a `try`, `from .slow import f` or `def
    # f(...)` in its `except`), so that every arm's counts, not the last one's alone: read
    # in the module's functions through what its code binds (as an assigned name is), and
    # in annotations, bases and re-exports through each arm's import.
    import_arms: set[str] = field(default_factory=set)
    # What module-level imports bind each name to, each thing once, in order
    # (``_index_import``); ``imports`` holds the last.
    top_imports: dict[str, list[str]] = field(default_factory=dict)
    # Python's tree, kept only where positions are asked for again and again (a buffer in
    # the language server); otherwise made again when positions are first asked for.
    tree: ast.Module | None = None
    # Built by cst_build (LibCST's default formatting): code() cuts text from the source.
    built: bool = False
    # Where the build placed each statement, for a module it built whole (positions).
    spans: Spans | None = None
    _positions: PositionIndex | None = None
    _code_cache: dict[int, str] = field(default_factory=dict)
    _escaping: frozenset[str] | None = None
    _named_elsewhere: frozenset[str] | None = None
    _nonlocal: bool | None = None
    _writes: dict[str, frozenset[str]] | None = None
    _order: dict[int, int] | None = None
    # Which function and which if/match arms each statement is in (dataflow.branches).
    branch_index: dict[int, tuple[int, frozenset[tuple[int, int]]]] | None = None

    def read_through_code(self, name: str) -> bool:
        """Whether a read of the module-level ``name`` goes through what the module's code
        binds (``Resolution.global_values``) rather than its imports or its defs alone: an
        assigned name, one a function declares ``global``, one two arms bind."""
        return name in self.assigned or name in self.declared_globals or name in self.import_arms

    def import_pairs(self) -> Iterator[tuple[str, str]]:
        """Each name the module's imports bind, with what it is bound to: ``imports``, and
        the other arms' of ``import_arms`` (``from .fast import f`` in a ``try``, where the
        ``except`` binds ``f`` last)."""
        yield from self.imports.items()
        for local, quals in self.top_imports.items():
            for qual in quals[:-1]:
                yield local, qual

    def writes_by_function(self) -> dict[str, frozenset[str]]:
        """For each function of the module (by its own name) that writes module names
        (``global_writers``; a row write `buf[:n] = x` makes a writer of a local `buf` too,
        which the function's summary tells apart), the names it writes."""
        if self._writes is None:
            module_names = self.assigned.keys() | self.declared_globals
            by_function: dict[str, set[str]] = {}
            for name, writers in self.global_writers.items():
                if name in module_names:
                    for writer in writers:
                        by_function.setdefault(writer.rsplit(".", 1)[-1], set()).add(name)
            self._writes = {f: frozenset(names) for f, names in by_function.items()}
        return self._writes

    def escaping_globals(self) -> frozenset[str]:
        """The module names written by a function of the module that the module names other
        than to call it (``map(reset, xs)``, ``hooks = [reset]``, ``hook=reset``,
        ``@register``): a call of something unknown may be a call of it."""
        if self._escaping is None:
            writes = self.writes_by_function()
            self._escaping = frozenset(
                g for f in self.named_elsewhere() if f in writes for g in writes[f]
            )
        return self._escaping

    def declares_nonlocal(self) -> bool:
        """Whether the module's text holds ``nonlocal`` (a closure may write a name of the
        function it is defined in); looked for once."""
        if self._nonlocal is None:
            self._nonlocal = "nonlocal" in self.text
        return self._nonlocal

    def escaping_functions(self) -> frozenset[str]:
        """The module-level functions the module names other than to call them, where a
        function of the module writes one of its names (none otherwise: nothing they
        call could write one): a call of something unknown may run them, and what they
        call (``hooks = [step]``, ``step`` calling ``reset``)."""
        return self.named_elsewhere() & self.functions.keys()

    def named_elsewhere(self) -> frozenset[str]:
        """Of the module's writers (``writes_by_function``) and module-level functions,
        the ones it names other than to call them (``named_not_called``); none where no
        function writes a module name. One walk of the tree, made once, and only where
        the text names one other than before a ``(``."""
        if self._named_elsewhere is None:
            writes = self.writes_by_function()
            names = set(writes) | self.functions.keys() if writes else set()
            named = (
                named_not_called(self, names)
                if names and _named_not_before_a_call(self.text, names)
                else set()
            )
            self._named_elsewhere = frozenset(named)
        return self._named_elsewhere

    def constant(self, name: str) -> cst.BaseExpression | None:
        """The value of a module-level name bound once, by an assignment, and written by no
        function (``RATIO = 4``); None for any other name."""
        values = self.assigned.get(name)
        if values is None or len(values) != 1:
            return None
        if name in self.declared_globals or name in self.rebound or self.globals_escape:
            return None
        return values[0]

    @property
    def package(self) -> str:
        if self.path.name == "__init__.py":
            return self.name
        return self.name.rpartition(".")[0]

    def positions(self) -> PositionIndex:
        """Where the module's statements and calls are. Python's own tree, which gives
        them, is not kept from the parse in a check: it takes half as much memory as the
        LibCST tree, and only the statements on a reported path need it. For a module
        ``cst_build`` built whole, each such statement is parsed again from its own lines
        (``positions.FragmentStatements``); for another, the whole module."""
        if self._positions is None:
            if self.tree is None and self.spans is not None:  # a statement's lines at a time
                self._positions = placed_index(self.module, self.text, self.spans)
            elif self.tree is None:  # parsed again, deeper in the stack than at the parse
                self._positions = index_of(self.module, self.text)
            else:
                self._positions = build_index(self.module, self.tree, self.text)
        return self._positions

    def statement_order(self, stmt: cst.CSTNode) -> int:
        """The statement's rank in source order: a key that is the same on every run."""
        if self._order is None:
            from zerolint.positions import statements_in_order

            self._order = {id(n): i for i, n in enumerate(statements_in_order(self.module))}
        return self._order.get(id(stmt), -1)

    def code(self, node: cst.CSTNode, within: tuple[cst.CSTNode, cst.Call] | None = None) -> str:
        """The node's source on one line, whitespace folded (for path steps): a statement,
        or an argument's value of the call ``within[1]`` in the statement ``within[0]``."""
        key = id(node)
        cached = self._code_cache.get(key)
        if cached is None:
            text = self._source_text(node, within) if self.built else None
            cached = fold_code(text if text is not None else self.header(node))
            self._code_cache[key] = cached
        return cached

    def _source_text(
        self, node: cst.CSTNode, within: tuple[cst.CSTNode, cst.Call] | None
    ) -> str | None:
        """``header(node)`` for a tree built by cst_build, cut from the source; None where
        the node is not found, and for an expression that is no call's argument: LibCST
        then prints it (with its default formatting, the same for the same expression)."""
        from zerolint import source_text

        if type(node) is cst.Module:
            return self.text  # a step at module level with no statement: the whole file
        if within is None and not isinstance(node, _STATEMENTS):
            return None  # an expression used as a key (syntax.slice_cell): LibCST prints it
        positions = self.positions()
        stmt = positions.stmts.get(id(node))
        if stmt is not None:
            return source_text.header(positions.source, stmt)
        if within is None:
            return None
        call = positions.call_node(*within)
        index = next((i for i, a in enumerate(within[1].args) if a.value is node), None)
        if call is None or index is None:
            return None
        return source_text.argument(positions.source, call, index)

    def header(self, node: cst.CSTNode) -> str:
        """A statement's own text: for if/while/for/with, the line that opens the block."""
        text = self.module.code_for_node
        if isinstance(node, (cst.If, cst.While)):
            keyword = "while" if type(node) is cst.While else "if"
            return f"{keyword} {text(node.test)}:"
        if type(node) is cst.For:
            return f"for {text(node.target)} in {text(node.iter)}:"
        if type(node) is cst.With:
            return "with " + ", ".join(text(item).rstrip(", \n\r\t") for item in node.items) + ":"
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Try, cst.Match)):
            # Its first line of code: LibCST's text starts with the comments above it.
            code, start = text(node), 0
            while start < len(code):
                end = code.find("\n", start)
                end = len(code) if end < 0 else end
                line = code[start:end]
                if line.strip() and not line.lstrip().startswith("#"):
                    return line
                start = end + 1
            return ""
        return text(node)


_STATEMENTS = (cst.BaseSmallStatement, cst.BaseCompoundStatement)


def fold_code(text: str, limit: int = 120) -> str:
    out: list[str] = []
    for raw in text.strip().splitlines():
        line = raw.split("  #", 1)[0].strip() if "#" in raw else raw.strip()
        if line.startswith("#") or not line:
            continue
        if out and (out[-1].endswith(("(", "[", "{")) or line.startswith((")", "]", "}"))):
            out[-1] += line
        else:
            out.append(line)
    folded = " ".join(out)
    return folded if len(folded) <= limit else folded[: limit - 3] + "..."


NUL_BYTE = "contains a NUL byte; not Python source"  # ZL904's message


def read_source(
    path: Path, display: Callable[[], str], read: Callable[[Path], bytes] = Path.read_bytes
) -> str:
    """The file's text, decoded as PEP 263 says (a BOM, a ``coding:`` line, else UTF-8),
    or BadInput with the reason in one line (``display`` names the file; it is only worked
    out when something is wrong). ``read`` gives the file's bytes."""
    try:
        data = read(path)
    except OSError as exc:
        raise BadInput(
            Diagnostic("ZL902", display(), f"cannot read: {exc.strerror or exc}")
        ) from None
    if b"\x00" in data:
        raise BadInput(Diagnostic("ZL904", display(), NUL_BYTE))
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        declared = _declared_encoding(data)
        if declared is None:
            raise BadInput(
                Diagnostic(
                    "ZL903",
                    display(),
                    f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})",
                )
            ) from None
    try:
        return data.decode(declared)
    except (UnicodeDecodeError, LookupError) as exc:
        raise BadInput(Diagnostic("ZL903", display(), f"not valid {declared}: {exc}")) from None


def _declared_encoding(data: bytes) -> str | None:
    """The encoding a ``# -*- coding: ... -*-`` line declares (PEP 263), None if none does."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError:  # an unknown encoding, or a BOM that contradicts the declaration
        return None
    return None if encoding in ("utf-8", "utf-8-sig") else encoding


CstParse = Callable[[Path, str, ast.Module], cst.Module]
"""A LibCST parse of a file's text given its ``ast`` tree (the language server's reuses the
statements an edit did not touch: ``server_reparse.Reparser``)."""


def parse_module(
    name: str, path: Path, display: str, text: str, cst_parse: CstParse | None = None
) -> ModuleInfo:
    """Parse with Python's own parser (fast, safe on hostile input), and build the LibCST
    tree the analysis reads from its tree (``cst_build``); ``cst_parse`` (the language
    server's), or LibCST's own parser where the tree cannot be built, parse it instead."""
    try:
        # Not filename=display: for a file name that exists, Python takes the line of a
        # syntax error from the file on disk, and the column from that line, wrong for a
        # text that is not what is on disk (an editor's buffer, a fix being re-checked).
        tree = ast.parse(text)
    except SyntaxError as exc:
        msg = exc.msg or "invalid syntax"
        raise BadInput(
            Diagnostic("ZL901", display, f"syntax error: {msg}", exc.lineno or 0, exc.offset or 0)
        ) from None
    except (RecursionError, MemoryError):
        raise BadInput(Diagnostic("ZL905", display, "nested too deeply to parse")) from None
    # Measured before LibCST sees it: its parser would crash the process, not raise.
    if deeper_than(tree, text) is not None:
        raise BadInput(
            Diagnostic("ZL905", display, f"nests more than {MAX_DEPTH} levels deep; not analysed")
        )
    # The language server re-parses edited buffers with LibCST: their positions follow.
    kept = tree if cst_parse is not None else None
    built, spans = build_module_placed(text, tree) if cst_parse is None else (None, None)
    walrus = _module_walrus_names(tree) if ":=" in text else ()
    del tree  # a check does not keep it (see ModuleInfo.positions)
    try:
        if built is not None:
            module = built
        elif cst_parse is None:
            module = parse_cst(text)
        else:
            module = cst_parse(path, text, kept)
    except cst.ParserSyntaxError as exc:
        raise BadInput(
            Diagnostic(
                "ZL901", display, f"syntax error: {exc.message}", exc.raw_line, exc.raw_column
            )
        ) from None
    except RecursionError:
        raise BadInput(Diagnostic("ZL905", display, "nested too deeply to parse")) from None
    finally:
        if cst_parse is None and len(text) >= TRIM_AFTER:  # a check: one parse per file
            give_back_free_memory()
    info = ModuleInfo(name=name, path=path, display=display, text=text, module=module)
    info.tree = kept
    info.built = built is not None
    info.spans = spans
    _index_module(info)
    info.rebound.update(walrus)
    return info


def _module_walrus_names(tree: ast.Module) -> set[str]:
    """The names a walrus binds in the module's own scope (`if (RATIO := f()) > 1:`, or in
    a comprehension there), not in a function's, a lambda's or a class body's."""
    names: set[str] = set()
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, _OWN_SCOPES):
            continue
        if type(node) is ast.NamedExpr and type(node.target) is ast.Name:
            names.add(node.target.id)
        stack.extend(ast.iter_child_nodes(node))
    return names


_OWN_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _dotted(node: cst.BaseExpression | None) -> str | None:
    if type(node) is cst.Name:
        return node.value
    if type(node) is cst.Attribute:
        base = _dotted(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


def resolve_relative(package: str, level: int, module: str | None) -> str:
    parts = package.split(".") if package else []
    if level > 1:
        parts = parts[: len(parts) - (level - 1)]
    base = ".".join(parts)
    if module:
        return f"{base}.{module}" if base else module
    return base


def record_import(
    info: ModuleInfo, node: cst.Import | cst.ImportFrom, table: dict[str, str]
) -> None:
    if type(node) is cst.Import:
        for alias in node.names:
            full = _dotted(alias.name) or ""
            if alias.asname is not None:
                local = _dotted(alias.asname.name) or full
                table[local] = full
            else:
                head = full.split(".")[0]
                table[head] = head
        return
    level = len(node.relative)
    mod = _dotted(node.module) if node.module is not None else None
    base = resolve_relative(info.package, level, mod) if level else (mod or "")
    if type(node.names) is cst.ImportStar:
        table.setdefault("*" + base, base)
        return
    for alias in node.names:
        name = _dotted(alias.name) or ""
        local = _dotted(alias.asname.name) if alias.asname is not None else name
        table[local or name] = f"{base}.{name}" if base else name


def _index_import(
    info: ModuleInfo, node: cst.Import | cst.ImportFrom, top: bool, typing: bool = False
) -> None:
    """An import's names in the module's table (``imports``). A module-level import's take
    the place of what an import inside a function or a class, or one for type checkers
    only (``typing``, under ``if TYPE_CHECKING:``), put there, never the other way round:
    a function binds its own imports where they run (``Statements.exec_Import``), and the
    module's other functions read the module's. A module-level name two imports bind to
    different things is one of ``import_arms``."""
    table: dict[str, str] = {}
    record_import(info, node, table)
    for local, qual in table.items():
        if local[:1] == "*":
            info.imports.setdefault(local, qual)
            continue
        if top:
            info.rebound.add(local.split(".")[0])
        if top and not typing:
            bound = info.top_imports.setdefault(local, [])
            if qual not in bound:
                bound.append(qual)
                if len(bound) > 1:
                    info.import_arms.add(local)
            info.imports[local] = qual
        elif local not in info.top_imports:  # a function's, a class's, or for type checkers
            info.imports[local] = qual


def _blocks(stmt: cst.CSTNode) -> list[cst.BaseSuite]:
    """The statement blocks nested directly in a compound statement."""
    out: list[cst.BaseSuite] = []
    for name in ("body", "orelse", "finalbody"):
        part = getattr(stmt, name, None)
        if isinstance(part, cst.BaseSuite):
            out.append(part)
        elif isinstance(part, (cst.Else, cst.Finally)):
            out.append(part.body)
        elif type(part) is cst.If:
            out.extend(_blocks(part) + [part.body])
    for handler in getattr(stmt, "handlers", ()):
        out.append(handler.body)
    for case in getattr(stmt, "cases", ()):
        out.append(case.body)
    return out


def _index_block(
    info: ModuleInfo,
    body,
    depth: int,
    owner: ClassInfo | None,
    top: str | None = None,
    encl: tuple[cst.FunctionDef, ClassInfo | None] | None = None,
    typing: bool = False,
) -> None:
    """Walk statements only (never expressions): imports anywhere (vLLM imports inside
    functions), functions (and those nested in them), classes with their annotated fields
    and class-level assignments, module-level assignments, names declared ``global`` (and
    by which module-level function, ``top``); a one-line body's statements included.
    ``typing``: the block runs for type checkers only (``if TYPE_CHECKING:``)."""
    for stmt in body:
        if isinstance(stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            for small in stmt.body:
                _index_small(info, small, depth, owner, top, typing)
            continue
        if type(stmt) in _INDEXED_SMALL:  # a one-line body's (`if c: import x`)
            _index_small(info, stmt, depth, owner, top, typing)
            continue
        if type(stmt) is cst.FunctionDef:
            if depth == 0:
                info.functions[stmt.name.value] = stmt
                top = stmt.name.value
            elif owner is not None and depth == 1:
                owner.methods[stmt.name.value] = stmt
            else:
                info.nested.append(stmt)
                if encl is not None:
                    info.enclosing[id(stmt)] = encl
            inner = (stmt, owner if depth == 1 else None)
            # The writer a body's writes of module names are listed under: a top-level
            # function by its name, a method as `Class.method` (ModuleInfo.global_writers).
            writer = f"{owner.qualname}.{stmt.name.value}" if depth == 1 and owner else top
            _index_block(info, stmt.body.body, depth + 2, None, writer, inner)
            if depth == 0:
                top = None
            continue
        if type(stmt) is cst.ClassDef:
            if depth <= 1:
                ci = _class_info(info, stmt, owner)
                info.classes[ci.qualname] = ci
                _index_block(info, stmt.body.body, 1, ci)
            else:
                _index_block(info, stmt.body.body, depth + 2, None, top, encl)
            continue
        if depth == 0:
            if type(stmt) is cst.For:
                info.rebound.update(_target_names(stmt.target))
            elif type(stmt) is cst.With:
                for item in stmt.items:
                    if item.asname is not None:
                        info.rebound.update(_target_names(item.asname.name))
        checking = type(stmt) is cst.If and _dotted(stmt.test) in _TYPE_CHECKING
        for block in _blocks(stmt):
            only = typing or checking and block is stmt.body  # type: ignore[attr-defined]
            _index_block(info, block.body, depth, owner, top, encl, only)


_TYPE_CHECKING = frozenset({"TYPE_CHECKING", "typing.TYPE_CHECKING"})


def _target_names(target: cst.BaseExpression) -> Iterator[str]:
    """The names an assignment target binds (``a``, ``a, (b, *c)``), not attributes or
    subscripts."""
    if type(target) is cst.Name:
        yield target.value
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _target_names(element.value)
    elif type(target) is cst.StarredElement:
        yield from _target_names(target.value)


_INDEXED_SMALL = frozenset(
    {cst.Import, cst.ImportFrom, cst.Global, cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Expr}
)


def _index_small(
    info: ModuleInfo,
    small: cst.CSTNode,
    depth: int,
    owner: ClassInfo | None,
    top: str | None = None,
    typing: bool = False,
) -> None:
    if isinstance(small, (cst.Import, cst.ImportFrom)):
        _index_import(info, small, depth == 0, typing)
    elif type(small) is cst.Global:
        info.declared_globals.update(n.name.value for n in small.names)
        if top is not None:
            for n in small.names:
                info.global_writers.setdefault(n.name.value, set()).add(top)
    if top is not None and type(small) in (cst.Assign, cst.AugAssign, cst.AnnAssign):
        for name in _stored_keys(_targets_of(small)):  # globals()["NAME"] = v writes NAME
            info.global_writers.setdefault(name, set()).add(top)
    if top is not None and depth > 0:
        # A write into a module tensor's rows needs no `global`: `BUF[:n] = x`,
        # `BUF[:n] += x`, `BUF.zero_()`, `torch.div(a, b, out=BUF)` as a statement
        # (whether BUF is the module's, the function's summary says: Statements.write).
        for name in _rows_written(small):
            info.global_writers.setdefault(name, set()).add(top)
    elif depth == 0 and type(small) is cst.Assign:
        for target in small.targets:
            if type(target.target) is cst.Name:
                info.assigned.setdefault(target.target.value, []).append(small.value)
                info.assigned_in[id(small.value)] = small
            else:
                info.rebound.update(_target_names(target.target))
    elif depth == 0 and type(small) is cst.AugAssign and type(small.target) is cst.Name:
        info.rebound.add(small.target.value)
    elif depth == 1 and owner is not None and type(small) is cst.Assign:
        for target in small.targets:
            if type(target.target) is cst.Name:
                owner.assigned.setdefault(target.target.value, []).append((small, small.value))
    elif type(small) is cst.AnnAssign and type(small.target) is cst.Name:
        if depth == 0 and small.value is not None:
            info.assigned.setdefault(small.target.value, []).append(small.value)
            info.assigned_in[id(small.value)] = small
        elif depth == 1 and owner is not None:
            owner.fields.append(small.target.value)
            if small.value is not None:  # `kernel: Callable = staticmethod(_kernel)`
                owner.assigned.setdefault(small.target.value, []).append((small, small.value))


def namespace_key(target: cst.BaseExpression) -> str | None:
    """``NAME`` of ``globals()["NAME"]``: the module-level name it reads or binds."""
    if type(target) is not cst.Subscript or len(target.slice) != 1:
        return None
    owner, index = target.value, target.slice[0].slice
    if type(owner) is not cst.Call or owner.args or _dotted(owner.func) != "globals":
        return None
    key = index.value if type(index) is cst.Index else None
    if type(key) is cst.SimpleString:
        text = key.evaluated_value
        return text if isinstance(text, str) and text.isidentifier() else None
    return None


def _stored_keys(targets: Iterable[cst.BaseExpression]) -> Iterator[str]:
    """The ``NAME`` of each ``globals()["NAME"]`` among targets (in a tuple too)."""
    for target in targets:
        kind = type(target)
        if kind is cst.Tuple or kind is cst.List:
            yield from _stored_keys(e.value for e in target.elements)
        elif kind is cst.StarredElement:
            yield from _stored_keys([target.value])
        else:
            name = namespace_key(target)
            if name is not None:
                yield name


def _targets_of(node: cst.CSTNode) -> list[cst.BaseExpression]:
    kind = type(node)
    if kind is cst.Assign:
        return [t.target for t in node.targets]
    if kind in (cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.Del):
        return [node.target]
    if kind is cst.WithItem and node.asname is not None:
        return [node.asname.name]
    return []


# What a module's text must hold for it to use its namespace as a dict: `globals`, a bare
# `vars()` or `exec(...)` (`get_exec()` is none), `sys.modules`, `__globals__`, `f_globals`.
# Patterns that start with a literal, so that the scan for it is fast.
_NAMESPACE_NAMES = re.compile(r"(globals|vars|exec)\b")


def uses_namespace_text(text: str) -> bool:
    """Whether ``text`` may use its module's namespace as a dict (``_namespace_uses`` then
    reads the tree to tell)."""
    if "sys.modules" in text or "__globals__" in text or "f_globals" in text:
        return True
    if "globals" not in text and "vars" not in text and "exec" not in text:
        return False
    for m in _NAMESPACE_NAMES.finditer(text):
        before = text[m.start() - 1] if m.start() else " "
        if before.isalnum() or before == "_" or before == "." and m.group(1) != "globals":
            continue  # `get_exec`, `obj.vars(...)` (`x.globals` the tree tells apart)
        word, after = m.group(1), text[m.end() : m.end() + 20].lstrip()
        if (
            word == "globals"
            or after.startswith("(")
            and (word == "exec" or after[1:].lstrip().startswith(")"))
        ):
            return True
    return False


# Calls that hand it out (`setattr(sys.modules.get(__name__), "N", 0)`).
_NAMESPACE_CALLS = frozenset({"exec", "builtins.globals", "sys.modules.get"})


def _reads(root: cst.CSTNode, skip: Callable[[cst.CSTNode], bool] | None = None):
    """The nodes under ``root`` where a name may be read, parents first: not a def's, a
    class's or a parameter's own name, a keyword argument's name, an import or a
    ``global`` statement; an attribute's name only as the attribute node itself. Below a
    node ``skip`` accepts, nothing."""
    stack: list[cst.CSTNode] = [root]
    while stack:
        node = stack.pop()
        yield node
        if skip is not None and skip(node):
            continue
        kind = type(node)
        if kind is cst.Attribute:
            stack.append(node.value)
        elif kind is cst.Param:
            stack += [n for n in (node.default, node.annotation) if n is not None]
        elif kind is cst.Arg:
            stack.append(node.value)
        elif kind in (cst.Import, cst.ImportFrom, cst.Global, cst.Nonlocal):
            continue
        else:  # the fields that may hold an expression, not formatting (nor a def's name)
            for name in content_fields(kind):
                if name == "name" and (kind is cst.FunctionDef or kind is cst.ClassDef):
                    continue
                value = getattr(node, name)
                if type(value) is tuple or type(value) is list:
                    stack += [v for v in value if is_node_type(type(v))]
                elif is_node_type(type(value)):
                    stack.append(value)


def _namespace_key_read(node: cst.CSTNode) -> bool:
    return type(node) is cst.Subscript and namespace_key(node) is not None


def _namespace_uses(info: ModuleInfo) -> None:
    """The names the module binds through ``globals()["NAME"]`` (by an assignment, a
    ``for``, a ``with`` or ``del``, in a tuple too) are no constants (``declared_globals``);
    one that uses its namespace any other way (``globals()`` not under a literal key,
    ``vars()``, ``exec(...)``, ``sys.modules[...]``) may bind any of its names
    (``globals_escape``). Read from the tree, so comments, strings, an attribute or a
    parameter named ``globals`` say nothing."""
    if not uses_namespace_text(info.text):
        return
    for node in _reads(info.module, _namespace_key_read):  # `globals()["NAME"]`: its own
        kind = type(node)
        stored = _targets_of(node)
        if stored:
            info.declared_globals.update(_stored_keys(stored))
        if kind is cst.Name and node.value == "globals":
            info.globals_escape = True
            return
        if kind is cst.Call:
            called = _dotted(node.func)
            if called in _NAMESPACE_CALLS or called == "vars" and not node.args:
                info.globals_escape = True
                return
        if kind is cst.Attribute and node.attr.value in ("__globals__", "f_globals"):
            info.globals_escape = True  # `reset.__globals__[k]`, `sys._getframe().f_globals`
            return
        if kind is cst.Subscript and _dotted(node.value) == "sys.modules":
            info.globals_escape = True
            return


def _named_not_before_a_call(text: str, names: Iterable[str]) -> bool:
    """Whether ``text`` holds one of ``names`` as a word not followed by ``(`` (a scan for
    each name: one pattern of them all tries each at every place of the text)."""
    for name in names:
        start = text.find(name)
        while start >= 0:
            end = start + len(name)
            before = text[start - 1] if start else " "
            after = text[end] if end < len(text) else " "
            word = not (before.isalnum() or before == "_" or after.isalnum() or after == "_")
            if word and not text[end : end + 20].lstrip().startswith("("):
                return True
            start = text.find(name, end)
    return False


def named_not_called(info: ModuleInfo, names: set[str]) -> set[str]:
    """The ones of ``names`` the module reads other than to call them: ``map(reset,
    xs)``, ``hooks = [reset]``, ``hook=reset``, ``self.reset``, a def decorated by one of
    the project's functions (``@register``; not ``reset()``, a Triton launch
    ``kernel[grid](...)``, ``def reset``, a parameter or a keyword of that name, a
    function's parameter of that name read in its body, a string, or a library's
    decorator, ``@torch.compile``)."""
    found: set[str] = set()
    _named_in(info, info.module, names, found)
    return found


def _named_in(info: ModuleInfo, root: cst.CSTNode, names: set[str], found: set[str]) -> None:
    """``named_not_called`` below ``root``. A function with a parameter of one of the
    names reads its own parameter in its body, which is looked at without that name; its
    decorators and defaults, read where it is defined, with it."""
    called: set[int] = set()
    shadowing: list[tuple[cst.FunctionDef, set[str]]] = []

    def shadows(node: cst.CSTNode) -> bool:
        if type(node) is cst.FunctionDef and node is not root:
            own = {p.name.value for p in parameters(node.params)} & names
            if own:
                shadowing.append((node, names - own))
                return True
        return False

    for node in _reads(root, shadows):
        kind = type(node)
        if (
            kind is cst.FunctionDef
            and node.name.value in names
            and _handed_to_decorators(node, info.imports)
        ):
            found.add(node.name.value)  # `@register def reset(): ...` hands reset over
        if kind is cst.Call:
            called.add(id(node.func))
            if type(node.func) is cst.Subscript:  # a Triton launch, `kernel[grid](...)`
                called.add(id(node.func.value))
        elif kind is cst.Name or kind is cst.Attribute:
            name = node.value if kind is cst.Name else node.attr.value
            if name in names and id(node) not in called:
                found.add(name)
    for fn, kept in shadowing:
        for outer in (*fn.decorators, *parameters(fn.params)):
            _named_in(info, outer, names, found)
        if kept:
            _named_in(info, fn.body, kept, found)


def parameters(params: cst.Parameters) -> list[cst.Param]:
    """Every parameter of a ``def`` or a ``lambda``, in order: positional-only, plain,
    ``*args``, keyword-only, ``**kwargs``."""
    return [
        *params.posonly_params,
        *params.params,
        *([params.star_arg] if type(params.star_arg) is cst.Param else []),
        *params.kwonly_params,
        *([params.star_kwarg] if params.star_kwarg else []),
    ]


# Decorators that wrap the function they are given, not keep it for later: the builtins'
# and the libraries' (by the module a decorator's name comes from).
_WRAPPING_DECORATORS = frozenset({"staticmethod", "classmethod", "property"})
_WRAPPING_LIBRARIES = frozenset(
    {"torch", "functools", "triton", "typing", "abc", "contextlib", "dataclasses", "numpy"}
)


def _handed_to_decorators(func: cst.FunctionDef, imports: dict[str, str]) -> bool:
    """Whether a decorator that may keep the function (to call it later) is given it: one
    of the project's (``@register``), not a builtin's or a library's (``@torch.compile``,
    ``@functools.lru_cache``, ``@torch.inference_mode()``)."""
    for d in func.decorators:
        node = d.decorator.func if type(d.decorator) is cst.Call else d.decorator
        name = _dotted(node) or ""
        head = name.split(".", 1)[0]
        home = imports.get(head, head).split(".", 1)[0]
        if name not in _WRAPPING_DECORATORS and home not in _WRAPPING_LIBRARIES:
            return True
    return False


def _rows_written(small: cst.CSTNode) -> Iterator[str]:
    """The names whose rows a statement may write in place: a subscript target's, an
    in-place method's owner (``x.zero_()``), an ``out=`` argument's."""
    targets: list[cst.BaseExpression] = []
    if type(small) is cst.Assign:  # `x = ...` binds a name: only `x[...] = ...` writes rows
        targets = [t.target for t in small.targets if type(t.target) is cst.Subscript]
    elif type(small) is cst.AugAssign and type(small.target) is cst.Subscript:
        targets = [small.target]
    elif type(small) is cst.Expr and type(small.value) is cst.Call:
        call = small.value
        func = call.func
        if type(func) is cst.Attribute and func.attr.value.endswith("_"):
            targets.append(func.value)
        targets += [
            a.value for a in call.args if a.keyword is not None and a.keyword.value == "out"
        ]
    for target in targets:
        while type(target) in (cst.Subscript, cst.Attribute, cst.Call):
            if type(target) is cst.Call:  # buf.view(-1)[:n] = x
                if type(target.func) is not cst.Attribute:
                    break
                target = target.func.value
            else:
                target = target.value
        if type(target) is cst.Name:
            yield target.value


def _class_info(info: ModuleInfo, node: cst.ClassDef, owner: ClassInfo | None) -> ClassInfo:
    qual = f"{owner.qualname}.{node.name.value}" if owner is not None else node.name.value
    ci = ClassInfo(
        name=node.name.value,
        qualname=qual,
        node=node,
        module=info,
        bases=[a.value for a in node.bases],
    )
    for d in node.decorators:
        target = d.decorator.func if type(d.decorator) is cst.Call else d.decorator
        if (_dotted(target) or "").rsplit(".", 1)[-1] == "dataclass":
            ci.is_dataclass = True
    return ci


def _index_module(info: ModuleInfo) -> None:
    _index_block(info, info.module.body, 0, None)
    top_classes = {c.name for c in info.classes.values() if "." not in c.qualname}
    info.import_arms.update(info.top_imports.keys() & (info.functions.keys() | top_classes))
    _namespace_uses(info)
    info.star_imports = tuple(b for s, b in info.imports.items() if s.startswith("*"))


_NOT_ASKED = object()  # Project.registered: a module nobody asked for yet


class Project:
    """The checked files, addressable by module name, parsed lazily and once."""

    def __init__(
        self,
        files: Iterable[Path],
        display: dict[Path, str] | None = None,
        read: Callable[[Path], bytes] | None = None,
        namespaces: Sequence[str] = (),
    ) -> None:
        """``read`` gives a file's bytes (default: read it); a caller that hashed them
        passes its own, so that what is analysed is exactly what was hashed. ``namespaces``:
        folders that are packages without an ``__init__.py`` (``paths.package_name``)."""
        self.files = list(files)
        self.display = display or {}
        self._read = read or Path.read_bytes
        self.cst_parse: CstParse | None = None  # see parse_module
        self.by_name: dict[str, Path] = {}
        self.name_of = module_names(self.files, namespaces)
        self._texts: dict[Path, str] = {}
        self._modules: dict[Path, ModuleInfo | None] = {}
        # Modules parsed ahead of their turn (parse_ahead), with the seconds it took.
        self._ahead: dict[Path, tuple[ModuleInfo, float]] = {}
        self.taken_ahead = 0  # modules module_at took from there
        self._parsed: list[ModuleInfo] | None = None  # parsed()'s, until _modules changes
        self.diagnostics: dict[Path, Diagnostic] = {}
        # text -> the files whose source contains it, in file order (see files_containing).
        self._containing: dict[str, list[Path]] = {}
        # Who else can answer those searches (the prescan's child), and for which files.
        self._search: Callable[[str], set[Path] | None] | None = None
        self._searched: set[Path] = set()
        self._order: dict[Path, int] | None = None  # see _file_order
        # Where the time goes (--timings): seconds each parse took, and who wants to know.
        self.parse_seconds: dict[Path, float] = {}
        self.on_parse: Callable[[float], None] | None = None
        # Who hears each question the analysis asks here, with its answer, where a
        # summary may be replayed in a later run (WarmProject): Analyzer.record.
        self.recorder: Callable[[tuple], None] | None = None
        for f in self.files:
            # First file wins; names are unique within a well-formed tree.
            self.by_name.setdefault(self.name_of[f], f)

    def display_of(self, path: Path) -> str:
        shown = self.display.get(path)
        if shown is None:
            shown = self.display[path] = display_path(path)
        return shown

    def text(self, path: Path) -> str | None:
        """The file's text (read once), or None with a diagnostic recorded."""
        if path in self._texts:
            return self._texts[path]
        if path in self.diagnostics:
            return None
        try:
            text = read_source(path, lambda: self.display_of(path), self._read)
        except BadInput as bad:
            self.diagnostics[path] = bad.diagnostic
            return None
        self._texts[path] = text
        return text

    def set_text(self, path: Path, text: str | None) -> None:
        """Analyse ``text`` as the contents of ``path`` from now on (None: read the file
        again); what was parsed or diagnosed from the old text is forgotten. A text with a
        NUL character is no Python source, as a file with a NUL byte is not (ZL904)."""
        nul = text is not None and "\x00" in text
        if text is None or nul:
            self._texts.pop(path, None)
        else:
            self._texts[path] = text
        self._modules.pop(path, None)
        self._ahead.pop(path, None)
        self._parsed = None
        self.diagnostics.pop(path, None)
        if nul:
            self.diagnostics[path] = Diagnostic("ZL904", self.display_of(path), NUL_BYTE)
        self._searched.discard(path)
        if self._containing:
            source = self.text(path) or ""
            order = self._file_order()
            for needle, paths in self._containing.items():
                kept = [p for p in paths if p != path]
                if needle in source and path in order:
                    kept.append(path)
                    kept.sort(key=order.__getitem__)
                self._containing[needle] = kept

    def scanned_for(self) -> list[str]:
        """Every text some analysis looked for with ``files_containing``."""
        return list(self._containing)

    def files_containing(self, needle: str) -> list[Path]:
        """The files whose text contains ``needle``, in file order; remembered, since a
        scan of a large tree costs tens of milliseconds, and kept current by set_text."""
        found = self._containing.get(needle)
        if found is None:
            known = self._search(needle) if self._search is not None else None
            if known is None:
                found = [p for p in self.files if needle in (self.text(p) or "")]
            else:
                # The answer is usually a few files of thousands: order those, rather than
                # asking of every file whether it is among them.
                searched = self._searched
                found = [p for p in known if p in searched]
                if len(searched) < len(self.files):
                    found += [
                        p
                        for p in self.files
                        if p not in searched and needle in (self.text(p) or "")
                    ]
                found.sort(key=self._file_order().__getitem__)
            self._containing[needle] = found
        return found

    def _file_order(self) -> dict[Path, int]:
        """Each file's place in ``files``."""
        if self._order is None:
            self._order = {p: i for i, p in enumerate(self.files)}
        return self._order

    def searches_elsewhere(self) -> bool:
        """Whether ``files_containing`` is answered without reading every file here."""
        return self._search is not None

    def search_with(self, search: Callable[[str], set[Path] | None], paths: set[Path]) -> None:
        """Let ``search`` answer ``files_containing`` for ``paths`` (whose texts it holds as
        this project would read them); None from it means: look yourself."""
        self._search = search
        self._searched = set(paths) & set(self.files)

    def module_at(self, path: Path) -> ModuleInfo | None:
        if path in self._modules:
            return self._modules[path]
        ahead = self._ahead.pop(path, None)
        self.taken_ahead += ahead is not None
        text = self.text(path)
        info = None
        if text is not None:
            parsed, seconds = ahead if ahead is not None else self._parse(path, text)
            if isinstance(parsed, BadInput):
                self.diagnostics[path] = parsed.diagnostic
            else:
                info = parsed
            self.parse_seconds[path] = seconds
            if self.on_parse is not None:
                self.on_parse(seconds)
        self._modules[path] = info
        self._parsed = None
        return info

    def _parse(self, path: Path, text: str) -> tuple[ModuleInfo | BadInput, float]:
        """The module parsed from ``text``, or why it cannot be, and the seconds it took."""
        start = time.perf_counter()
        try:
            parsed: ModuleInfo | BadInput = parse_module(
                self.name_of.get(path, path.stem), path, self.display_of(path), text, self.cst_parse
            )
        except BadInput as bad:
            parsed = bad
        return parsed, time.perf_counter() - start

    def parse_ahead(self, path: Path) -> None:
        """Parse ``path`` now, for ``module_at`` to take when it is asked for: the time a
        check waits for the prescan's report is spent on files it will parse anyway. The
        module joins ``parsed()`` only then, so that its order is the same as without
        this; a file that cannot be parsed is left to ``module_at`` to report."""
        if path in self._modules or path in self._ahead:
            return
        text = self.text(path)
        if text is None:
            return
        parsed, seconds = self._parse(path, text)
        if not isinstance(parsed, BadInput):
            self._ahead[path] = (parsed, seconds)

    def module(self, name: str) -> ModuleInfo | None:
        path = self.by_name.get(name)
        return self.module_at(path) if path is not None else None

    def has_module(self, name: str) -> bool:
        return name in self.by_name

    def was_asked(self, name: str) -> bool:
        """Whether the module ``name`` was parsed already, or tried (a syntax error)."""
        path = self.by_name.get(name)
        return path is not None and path in self._modules

    def tried(self, path: Path) -> bool:
        """Whether the file at ``path`` was parsed, or tried (unreadable, a syntax error)."""
        return path in self._modules

    def asked_count(self) -> int:
        """How many modules were parsed, or tried, so far."""
        return len(self._modules)

    def is_parsed(self, name: str) -> bool:
        path = self.by_name.get(name)
        return path is not None and self._modules.get(path) is not None

    def parsed(self) -> list[ModuleInfo]:
        return list(self._parsed_modules())

    def parsed_count(self) -> int:
        """``len(parsed())``, without a list made for it."""
        return len(self._parsed_modules())

    def _parsed_modules(self) -> list[ModuleInfo]:
        if self._parsed is None:
            self._parsed = [m for m in self._modules.values() if m is not None]
        return self._parsed

    def registered(self, where: str | Path) -> object:
        """What ``module(where)`` (a name) or ``module_at(where)`` (a path) gives without
        parsing anything: the module asked for already, None for a name not in the tree,
        else an object that is neither."""
        path = where if isinstance(where, Path) else self.by_name.get(where)
        if path is None:
            return None
        return self._modules.get(path, _NOT_ASKED)

    def records_reads(self) -> bool:
        """Whether the questions asked here reach ``recorder``: only then can a summary
        made in one run be replayed in the next (``Analyzer.adopt``)."""
        return False

    def unchanged(self, mod: ModuleInfo) -> bool:
        """Whether ``mod`` is still what this project parses from its file's text; a
        project whose parses outlive a run says (WarmProject)."""
        return False
