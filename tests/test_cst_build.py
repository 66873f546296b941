"""The trees zerolint analyses are built from Python's own parser (zerolint.cst_build), not
parsed by LibCST: they must be the tree LibCST's parser gives, field for field apart from
formatting, and a statement's or an argument's text (ModuleInfo.code, which path steps and
messages print) must be what LibCST prints for it. Both are checked on crafted sources that
hold every construct, and on the files of real serving trees."""

from __future__ import annotations

import ast
import dataclasses
import sys
from pathlib import Path

import libcst as cst
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from devtools.wheels import sglang_tree, vllm_tree
from zerolint.cst_build import Unsupported, _string_end, build_module
from zerolint.positions import statements_in_order
from zerolint.project import ModuleInfo, parse_module

# Fields that hold spaces, comments, commas, parentheses and the like: the analysis reads
# none of them, and a built tree keeps LibCST's defaults there.
FORMATTING = frozenset(
    {
        "lpar",
        "rpar",
        "comma",
        "semicolon",
        "leading_lines",
        "lines_after_decorators",
        "header",
        "footer",
        "trailing_whitespace",
        "indent",
        "equal",
        "colon",
        "lbracket",
        "rbracket",
        "lbrace",
        "rbrace",
        "encoding",
        "default_indent",
        "default_newline",
        "has_trailing_newline",
        "newline",
        "empty_lines",
        "first_colon",
        "second_colon",
    }
)


def difference(real: object, built: object, where: str = "module") -> str | None:
    """Where the two trees first differ outside formatting, or None."""
    if type(real) is not type(built):
        return f"{where}: {type(real).__name__} in LibCST's tree, {type(built).__name__} built"
    if isinstance(real, (list, tuple)):
        assert isinstance(built, (list, tuple))
        if len(real) != len(built):
            return f"{where}: {len(real)} items in LibCST's tree, {len(built)} built"
        for i, (a, b) in enumerate(zip(real, built)):
            found = difference(a, b, f"{where}[{i}]")
            if found:
                return found
        return None
    if isinstance(real, cst.CSTNode):
        for f in dataclasses.fields(real):
            if f.name in FORMATTING or f.name.startswith("whitespace"):
                continue
            found = difference(getattr(real, f.name), getattr(built, f.name), f"{where}.{f.name}")
            if found:
                return found
        return None
    return None if real == built else f"{where}: {real!r} in LibCST's tree, {built!r} built"


CRAFTED = '''\
"""Docstring."""
from __future__ import annotations
import os, os.path as osp
from . import sibling
from ..pkg.mod import (a as b, c)
from .x import *
x = 1; y = 2;
z: int
w: "list[int]" = [1, 2, *rest]
v = {**base, "k": (1), 2: [i for i in range(3) if i if not i for j in i]}
s = {a for a in b}
g = (a async for a in b)
d = {k: v for k, v in items}
t = 1, 2
u = (1,)
n = 0x_1F + 1_000 + 1.5e-3 + 2j + -3 + ~4 + +5
st = "a" "b" 'c' r"\\"" """tri
ple""" f"{x!r:>{width}} and {y}" "tail"
by = b'x' rb"y"
nf = rb"raw\\d" + Rb'x'
del a, b[0], c.d
del (e, f)
del g
global_thing = lambda a, /, b=1, *c, d, e=2, **f: (a, b, c, d, e, f)
bare = lambda *, k: k
x[(a), (b)]; x[(a, b)]; x[a, b]; x[a:b, ::2, c:]; x[()]; x[...]
f(a, k=1, *b, **c)
f(k=1, *b)
f(*a)
f((seq_lens // 4), ( b ), k=(c))
h = a if b else c
if (n := len(a)) > 10 and b or c and not d:
    pass
elif x is not None and y not in z and 1 < q <= 2:
    pass
else:
    if nested:
        pass
while a: break
for i, *rest in pairs:
    continue
else:
    pass
async def co(a: int, *args: str, key: bool = False, **kw) -> "None":
    async with lock as l, other:
        await thing()
    async for q in stream:
        yield q
    yield
    yield from it
    return


@decorator
@other.decorator(arg)
class C(Base, metaclass=Meta, **extra):
    """Doc."""

    field: int = 0

    def method(self, x, y=2, *, z):  # comment
        global g
        nonlocal_thing = 1

        def inner():
            nonlocal nonlocal_thing
            nonlocal_thing += 1
            nonlocal_thing //= 2
            nonlocal_thing @= m
        try:
            raise ValueError("x") from None
        except (TypeError, ValueError) as exc:
            raise
        except Exception:
            pass
        else:
            assert x, "message"
        finally:
            del y
        with (open(a) as fa, open(b) as fb):
            pass
        with open(a) as (p, q):
            pass
        return x if y else z

    def method2(self):
        return 1
        # the last line of method2's block (LibCST: its footer)

    def method3(self):
        pass
        # the last line of method3's block
    # method4's own comment (LibCST: its leading line)
    def method4(self):
        pass
class D: pass
if a: b = 1; c = 2
match command:
    case [x, y, *rest] if x > 0:
        pass
    case {"k": v, **kw}:
        pass
    case Point(x=0) | None:
        pass
    case _:
        pass
'''


def assert_same(text: str, name: str = "<crafted>") -> None:
    tree = ast.parse(text)
    built = build_module(text, tree)
    assert built is not None, f"{name}: not built"
    found = difference(cst.parse_module(text), built)
    assert found is None, f"{name}: {found}"


def test_every_construct_gives_libcsts_tree() -> None:
    assert_same(CRAFTED)


@pytest.mark.parametrize(
    "source",
    [
        "if a:\n    pass\nelif b:\n    pass\n",
        "if a:\n    pass\nelse:\n    if b:\n        pass\n",
        "x[(a), (b)]\n",
        "x[(a, b)]\n",
        "x[(a, b), c]\n",
        "x[(a), b]\n",
        "f(a, k=1, *b)\n",
        "a = 1; b = 2\n",
        "a = 1\nb = 2\n",
        "if a: b; c\n",
        "s = 'a' 'b'\n",
        "s = 'a\\'' + 'b'\n",
        "s = '''a\\''''\n",
    ],
)
def test_each_case_the_builder_decides_from_the_source(source: str) -> None:
    assert_same(source, repr(source))


def string_end_byte_by_byte(data: bytes, i: int) -> int | None:
    """The end of the string literal at ``data[i]``, one byte at a time: the reference."""
    while i < len(data) and data[i] not in b"'\"":
        i += 1
    quote = data[i : i + 3] if data[i : i + 3] in (b'"""', b"'''") else data[i : i + 1]
    j = i + len(quote)
    while j < len(data):
        if data[j] == ord("\\"):
            j += 2
        elif data.startswith(quote, j):
            return j + len(quote)
        else:
            j += 1
    return None  # unterminated


PIECES = [b"'", b'"', b"\\", b"a", b"'''", b'"""', b"\n"]


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=14))
def test_a_strings_end_is_found_as_byte_by_byte(parts: list[bytes]) -> None:
    """``_string_end`` jumps from quote to backslash rather than stepping through every byte;
    it ends every literal where a byte-by-byte reading does, unterminated ones included."""
    for opening in (b"'", b'"', b"'''", b'"""', b"rb'"):
        data = opening + b"".join(parts)
        want = string_end_byte_by_byte(data, 0)
        if want is None:
            with pytest.raises(Unsupported):
                _string_end(data, 0)
        else:
            assert _string_end(data, 0) == want, data


@pytest.mark.skipif(sys.version_info < (3, 12), reason="type parameters are Python 3.12")
def test_type_parameters_are_left_to_libcst() -> None:
    assert_same("def f[T](x: T) -> T:\n    return x\nclass C[T]:\n    pass\n")


def test_a_match_in_a_block_makes_libcst_parse_the_whole_file() -> None:
    """A statement LibCST must parse cannot be cut out of a block without changing its
    lines (a multi-line string's indentation): the file is LibCST's, and printed by it."""
    source = 'def f(x):\n    match x:\n        case 1:\n            return """a\n    b"""\n'
    assert build_module(source, ast.parse(source)) is None
    info = parse_module("m", Path("m.py"), "m.py", source)
    assert not info.built
    assert difference(cst.parse_module(source), info.module) is None
    top = "match x:\n    case 1:\n        y = 2\n"
    assert build_module(top, ast.parse(top)) is not None


def serving_files() -> list[tuple[str, Path]]:
    """The real trees' files in the folders where the kernels' callers live."""
    out: list[tuple[str, Path]] = []
    for label, root, folders in (
        ("vllm 0.27.1", vllm_tree("0.27.1"), ["vllm/v1/attention"]),
        (
            "vllm 0.33.0",
            vllm_tree("0.33.0"),
            ["vllm/v1/attention", "vllm/utils", "vllm/model_executor/layers/fla"],
        ),
        ("sglang 0.5.23", sglang_tree("0.5.23"), ["sglang/srt/layers/attention"]),
    ):
        for folder in folders:
            out += [(label, p) for p in sorted((root / folder).rglob("*.py"))]
    return out


def test_real_serving_files_give_libcsts_tree() -> None:
    files = serving_files()
    assert len(files) > 300
    for label, path in files:
        assert_same(path.read_text(encoding="utf-8"), f"{label}: {path.name}")


def module(text: str, *, built: bool) -> ModuleInfo:
    info = parse_module("m", Path("m.py"), "m.py", text)
    if not built:
        info.module = cst.parse_module(text)
        info.built = False
    assert info.built is built
    return info


def assert_same_texts(text: str, name: str) -> int:
    """Every statement's and every call argument's text is LibCST's; how many compared."""
    built, real = module(text, built=True), module(text, built=False)
    mine, theirs = statements_in_order(built.module), statements_in_order(real.module)
    assert len(mine) == len(theirs)
    compared = 0
    for a, b in zip(mine, theirs):
        assert built.code(a) == real.code(b), f"{name}: line {real.positions().statement(b)}"
        compared += 1
        for ca, cb in zip(_calls(a), _calls(b)):
            for arg_a, arg_b in zip(ca.args, cb.args):
                got = built.code(arg_a.value, (a, ca))
                assert got == real.code(arg_b.value, (b, cb)), f"{name}: {got!r}"
                compared += 1
    return compared


def _calls(stmt: cst.CSTNode) -> list[cst.Call]:
    from zerolint.positions import statement_calls

    return statement_calls(stmt)


def test_statement_and_argument_texts_are_libcsts() -> None:
    assert assert_same_texts(CRAFTED, "<crafted>") > 100


def test_real_statement_and_argument_texts_are_libcsts() -> None:
    compared = 0
    for label, path in serving_files()[::4]:
        compared += assert_same_texts(path.read_text(encoding="utf-8"), f"{label}: {path.name}")
    assert compared > 10_000


def test_every_class_compared_by_type_has_no_subclass() -> None:
    """The analysis tests a node's class with ``type(node) is cst.X`` (isinstance() against
    LibCST's classes goes through ABCMeta in Python); that is isinstance() only while no
    class derives from X, in the LibCST installed."""
    import re

    root = Path(__file__).resolve().parent.parent / "zerolint"
    used = set()
    for path in root.rglob("*.py"):
        used |= set(re.findall(r"type\([^()]*\) is (?:not )?cst\.(\w+)", path.read_text()))
    assert len(used) > 20
    derived = {name: getattr(cst, name).__subclasses__() for name in used}
    assert {n: d for n, d in derived.items() if d} == {}


TEXT_CASES = {
    "crlf": "def f(a):\r\n    x = (a //\r\n         4)\r\n    return g(x)  # c\r\n",
    "tabs": "if a:\n\tb = 1\n\tif c:\n\t\td = 2\n",
    "non-ascii": "café = 1\nπ = café + 'é'\nf(π, k='ß')\nf((π), k=(café))\n",
    "backslash": "x = 1 + \\\n    2\nif a and \\\n   b: pass\n",
    "semicolons": "x = 1; y = f(2) ;\n",
    "generators": "f(x for x in y)\nf((x for x in y))\nf(a, (x for x in y))\n",
    "with": "with (a as b, c):\n    pass\nwith (open(x)) as f, g:\n    pass\n",
    "for": "for (a, b) in (c):\n    pass\nfor x in (y):\n    pass\n",
    "parenthesized tests": "if (a and\n    b):\n    pass\nwhile ((x)):\n    pass\n",
    "comments above defs": (
        "x = 1\n# lead\n@d  # c\ndef f():\n    pass\n\n\nclass A:\n    # first\n"
        "    def g(self):\n        pass\n        # footer\n    # own\n    def h(self):\n"
        "        pass\n"
    ),
    "try": "try:\n    pass\nexcept E:\n    pass\n# lead\ntry:  # c\n    f(x)\nfinally:\n    pass\n",
    "stars": "f(*args, **kw)\nf(k=(1), *(a))\n",
}


@pytest.mark.parametrize("name", sorted(TEXT_CASES))
def test_texts_of_each_layout_are_libcsts(name: str) -> None:
    assert assert_same_texts(TEXT_CASES[name], name) >= 3
    assert_same(TEXT_CASES[name], name)
