"""A value that may be one of several callables: each is followed, in the same order on
every run.

Values hold what they may call in sets of refs, compared by identity, so a set's order is
its members' memory addresses. A call through such a value used to follow only the first
callee from a module nobody had parsed, whichever came first in memory: a run reported
one callee's path, the next run the other's, or none when that one clamped. Now each
callee is followed, and every walk over refs that makes summaries goes in ``ref_key``
order (``values.in_order``).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from zerolint.dataflow.values import ExtRef, LazyRef, ModRef, in_order, ref_key

MAIN = """\
from deep_gemm import get_paged_mqa_logits_metadata
from pkg.alpha import shrink
from pkg.beta import reduce_it


def build(seq_lens, flag, block, sms):
    fn = shrink if flag else reduce_it
    lens = fn(seq_lens)
    return get_paged_mqa_logits_metadata(lens, block, sms)
"""


def report(check) -> dict:
    """The JSON report of ``pkg`` (``check`` is the command-line tests' fixture)."""
    code, out, err = check("--format", "json", "pkg")
    assert code in (0, 1), err
    return json.loads(out)


def package(root: Path, alpha: str, beta: str) -> None:
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "alpha.py").write_text(f"def shrink(x):\n    return {alpha}\n")
    (root / "pkg" / "beta.py").write_text(f"def reduce_it(x):\n    return {beta}\n")
    (root / "pkg" / "main.py").write_text(MAIN)


def sources(found: dict) -> list[str]:
    return sorted(
        f"{step['path']}:{step['code']}"
        for finding in found["findings"]
        for flow in finding["flows"]
        for step in flow["steps"]
        if step["role"] == "source"
    )


def test_a_call_that_may_be_either_of_two_unparsed_functions_follows_both(
    tmp_path: Path, check
) -> None:
    package(tmp_path, "x // 4", "x // 8")
    assert sources(report(check)) == ["pkg/alpha.py:return x // 4", "pkg/beta.py:return x // 8"]


@pytest.mark.parametrize("clamped", ["alpha", "beta"])
def test_a_callee_that_clamps_does_not_hide_the_one_that_does_not(
    tmp_path: Path, check, clamped: str
) -> None:
    """Following only the first callee in memory found the finding on some runs and
    missed it on others, when that callee clamped. Both paths are shown; the judge's
    witness is on the one that does not clamp."""
    safe, bare = "max(x // 4, 1)", "x // 8"
    package(tmp_path, *((safe, bare) if clamped == "alpha" else (bare, safe)))
    (finding,) = report(check)["findings"]
    assert finding["verdict"]["status"] == "unsafe"
    unsafe = finding["flows"][finding["verdict"]["flow_index"]]
    unclamped = "pkg/beta.py" if clamped == "alpha" else "pkg/alpha.py"
    assert unsafe["steps"][0]["path"] == unclamped
    assert unsafe["steps"][0]["code"] == f"return {bare}"


def test_refs_are_put_in_one_order_whatever_their_addresses() -> None:
    """The same places, made as other objects in another order, sort the same way."""
    first = [LazyRef("pkg.beta.reduce_it"), ModRef("pkg"), LazyRef("pkg.alpha.shrink")]
    first += [ExtRef("torch.clamp")]
    second = [ExtRef("torch.clamp"), LazyRef("pkg.alpha.shrink"), ModRef("pkg")]
    second += [LazyRef("pkg.beta.reduce_it")]

    one, two = in_order(frozenset(first)), in_order(frozenset(second))
    assert [ref_key(r) for r in one] == [ref_key(r) for r in two]
    assert [type(r).__name__ for r in one] == ["ExtRef", "ModRef", "LazyRef", "LazyRef"]
    assert [r.qual for r in one if isinstance(r, LazyRef)] == [
        "pkg.alpha.shrink",
        "pkg.beta.reduce_it",
    ]
    # A set's own order follows the addresses its objects got: made in every order, with
    # other objects made between them, the four must still come out in the one order (a
    # single pair of sets can come out in it by luck, as often as one run in twenty).
    makers = [
        lambda: ExtRef("torch.clamp"),
        lambda: ModRef("pkg"),
        lambda: LazyRef("pkg.alpha.shrink"),
        lambda: LazyRef("pkg.beta.reduce_it"),
    ]
    keep = []
    for order in itertools.permutations(range(4)):
        for spacing in range(3):
            refs = []
            for i in order:
                refs.append(makers[i]())
                keep.append([ModRef("pad") for _ in range(spacing)])
            assert [ref_key(r) for r in in_order(frozenset(refs))] == [ref_key(r) for r in one]
