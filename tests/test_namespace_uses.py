"""A module that binds its names through its namespace: `globals()["NAME"] = v` makes
NAME no constant, and any other use of the namespace as a dict (`globals().update(d)`,
`vars()`, `exec(...)`, `sys.modules[__name__]`) makes none of its names one. Read from
the parsed module (project.parse_module), so a comment or a string that names
`globals()` says nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from zerolint.project import named_not_called, parse_module

RATIO = "RATIO = 1\n"


def parsed(body: str):
    return parse_module("m", Path("m.py"), "m.py", RATIO + body)


@pytest.mark.parametrize(
    ("body", "bound"),
    [
        ('def f(r):\n    globals()["RATIO"] = r\n', True),
        ('def f(r):\n    globals()["RATIO"] += r\n', True),
        ('def f(r):\n    globals()["RATIO"], _ = r, 0\n', True),
        ('def f(rs):\n    for globals()["RATIO"] in rs:\n        pass\n', True),
        ('def f(c):\n    with c as globals()["RATIO"]:\n        pass\n', True),
        ('def f():\n    del globals()["RATIO"]\n', True),
        ('def f(rs):\n    return [1 for globals()["RATIO"] in rs]\n', True),
        ('def f():\n    return globals()["RATIO"]\n', False),  # a read binds nothing
        ('def f(r):\n    globals()["OTHER"] = r\n', False),
    ],
)
def test_a_name_bound_through_the_namespace_is_no_constant(body: str, bound: bool) -> None:
    info = parsed(body)
    assert not info.globals_escape
    assert (info.constant("RATIO") is None) is bound


@pytest.mark.parametrize(
    ("body", "escapes"),
    [
        ("def f(d):\n    globals().update(d)\n", True),
        ("def f(d):\n    globals ().update(d)\n", True),
        ("import builtins\n\ndef f(d):\n    builtins.globals().update(d)\n", True),
        ("g = globals\n", True),
        ("def f(k, v):\n    globals()[k] = v\n", True),
        ("vars().update({})\n", True),
        ('exec("RATIO = 2")\n', True),
        ('import sys\n\nsetattr(sys.modules[__name__], "RATIO", 2)\n', True),
        ('import sys\n\nsetattr(sys.modules.get(__name__), "RATIO", 2)\n', True),
        ('def reset():\n    reset.__globals__["RATIO"] = 0\n', True),
        ('import sys\n\nsys._getframe().f_globals["RATIO"] = 2\n', True),
        ('"""Never touched through globals() or vars()."""\n', False),
        ("x = 1  # not through globals().update\n", False),
        ("def f(o):\n    return vars(o)\n", False),  # an object's fields, not the module's
        ("# not through globals\ndef f(o):\n    return vars(o)\n", False),
        ('s = "exec(globals())"\n', False),
    ],
)
def test_a_namespace_handed_out_leaves_no_constant(body: str, escapes: bool) -> None:
    info = parsed(body)
    assert info.globals_escape is escapes
    assert (info.constant("RATIO") is None) is escapes


@pytest.mark.parametrize(
    "body",
    [
        "print(config.globals)\n",  # another object's attribute
        "def render(t, globals=None):\n    return t\n",  # a parameter
        "render(1, globals=None)\n",  # a keyword
    ],
)
def test_a_name_globals_that_is_no_read_of_the_namespace(body: str) -> None:
    assert not parsed(body).globals_escape


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ("list(map(reset, xs))\n", True),
        ("hooks = [reset]\n", True),
        ("def f(hook=reset):\n    hook()\n", True),
        ("class A:\n    def f(self):\n        return self.reset\n", True),
        ("reset()\n", False),
        ("class A:\n    def f(self):\n        self.reset()\n", False),
        ('"""Everything goes through reset."""\n', False),
        ("def f(reset=None):\n    return 1\n", False),
        ("f(reset=1)\n", False),
        ("from m import reset\n", False),
        ("reset[grid](x)\n", False),
        ("def f(reset=False):\n    if reset:\n        return 1\n", False),
        ("def f(flag=reset):\n    if flag:\n        return 1\n", True),
        ("def f(reset):\n    def g():\n        return reset\n    return g\n", False),
        ("def f(reset):\n    return 1\n\n\ndef g():\n    return [reset]\n", True),
        ("def f(reset=None, hook=reset):\n    return reset\n", True),
        ("@register(reset)\ndef f(reset):\n    return reset\n", True),
    ],
)
def test_a_writer_named_other_than_to_be_called(body: str, named: bool) -> None:
    """`named_not_called`: the functions a call of something unknown may be."""
    info = parsed("def reset():\n    global RATIO\n    RATIO = 0\n\n\n" + body)
    assert (named_not_called(info, {"reset"}) == {"reset"}) is named


def test_a_parameter_hides_one_name_only() -> None:
    """A function whose parameter is named like one writer still hands over another it
    names in its body."""
    info = parsed(
        "def reset():\n    global RATIO\n    RATIO = 0\n\n\n"
        "def clear():\n    global RATIO\n    RATIO = 1\n\n\n"
        "def f(reset):\n    return [reset, clear]\n"
    )
    assert named_not_called(info, {"reset", "clear"}) == {"clear"}
