"""A module global is written only by the functions and methods that declare it ``global``
(or write its rows in place): the index records which ones (``ModuleInfo.global_writers``),
and resolving a global's values asks for their summaries alone. Asking for every function's summary from inside one that reads the
global made that reader look recursive, and had it interpreted a second time."""

from __future__ import annotations

from pathlib import Path

from zerolint.config import Settings
from zerolint.dataflow import Analyzer
from zerolint.engine import Engine
from zerolint.project import Project

SOURCE = """\
import deep_gemm

_impl = None
_count = 0


def _lazy_init():
    global _impl

    def bump():
        global _count
        _count += 1

    bump()
    _impl = deep_gemm.get_paged_mqa_logits_metadata


def metadata(lens, block_kv, num_sms):
    _lazy_init()
    return _impl(lens // 4, block_kv, num_sms)


def unrelated(x):
    return x + 1


class Holder:
    def reset(self):
        global _impl
        _impl = None
"""


def test_the_index_records_which_module_functions_declare_a_global(tmp_path: Path) -> None:
    path = tmp_path / "wrapper.py"
    path.write_text(SOURCE)
    module = Project([path]).module_at(path)
    assert module is not None
    # A nested function's declaration is its enclosing module function's; a method's is
    # the method's, by its class (global_values reads module functions and methods).
    assert module.global_writers == {
        "_impl": {"_lazy_init", "Holder.reset"},
        "_count": {"_lazy_init"},
    }
    assert module.declared_globals == {"_impl", "_count"}


def test_a_write_through_the_namespace_makes_a_writer(tmp_path: Path) -> None:
    """`globals()["NAME"] = v` writes NAME, alone or in a tuple of targets, as `global
    NAME` does."""
    path = tmp_path / "namespace.py"
    path.write_text(
        "RATIO = 4\nLIMIT = 1\n\n\n"
        'def set_ratio(r):\n    globals()["RATIO"] = r\n\n\n'
        'def set_both(r):\n    globals()["LIMIT"], _ = r, 0\n'
    )
    module = Project([path]).module_at(path)
    assert module is not None
    assert module.global_writers == {"RATIO": {"set_ratio"}, "LIMIT": {"set_both"}}


def test_a_globals_values_come_from_its_writers_alone(tmp_path: Path) -> None:
    path = tmp_path / "wrapper.py"
    path.write_text(SOURCE)
    engine = Engine(Settings())
    project = Project([path])
    analyzer = Analyzer(project, engine.rules)
    module = project.module_at(path)
    assert module is not None
    analyzer.sink_capable.add(module.name)
    interpreted: list[str | None] = []
    interpret = analyzer._summarise

    def counting(key):  # the real interpretation, counted
        interpreted.append(None if key.node is None else key.node.name.value)
        return interpret(key)

    analyzer._summarise = counting  # type: ignore[method-assign]
    summary = analyzer.summary(analyzer.func_key(module, module.functions["metadata"]))
    # The writers (and the local function one calls), the module's top level; not
    # `unrelated`; and the reader once: nothing looked recursive.
    expected = ["metadata", None, "_lazy_init", "bump", "reset"]
    assert sorted(interpreted, key=str) == sorted(expected, key=str)
    # The global still carries the sink into the reader: its hit is found.
    assert [h.spec.function for h in summary.hits] == ["get_paged_mqa_logits_metadata"]
    # And the check still reports the floor-divided lengths reaching the kernel.
    outcome = engine.run([path])
    assert [f.code for f in outcome.report.findings] == ["ZL001"]
