"""The prefilter: which files are parsed (issue 18, item 12).

A file is parsed when its text may call a sink or a wrapper of one. A wrapper defined at
module level is reached through an import of its module, so a file that only mentions the
wrapper's name (``build`` is in a hundred files of vLLM) and never its module is not
parsed for it; a file that imports it, directly or through a package that re-exports
it, still is, and its findings are reported.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from devtools.wheels import vllm_tree

WRAPPER = """\
from deep_gemm import get_paged_mqa_logits_metadata


def build(lens, block_size, num_sms):
    return get_paged_mqa_logits_metadata(lens, block_size, num_sms)
"""

CALLER = """\
{imp}


def plan(seq_lens, ratio):
    return {call}(seq_lens // ratio, 64, 132)
"""

# Files that name `build` but reach another one: nothing here can reach the sink.
UNRELATED = {
    "tools/__init__.py": "",
    "tools/make.py": "def build(x, y, z):\n    return x\n",
    "tools/use.py": "from tools.make import build\n\n\ndef f(n):\n    return build(n // 2, 1, 1)\n",
    "tools/other.py": "import setuptools\n\nsetuptools.build = 1\nbuild = print\n",
}


def zerolint(cwd: Path, *paths: str) -> tuple[int, str, int]:
    """Exit status, stdout and the number of parsed files (from --timings)."""
    run = subprocess.run(
        [sys.executable, "-m", "zerolint", "check", "--no-cache", "--color", "never"]
        + ["--timings", *paths],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode in (0, 1), run.stderr
    parsed = re.search(r"\bparsed=(\d+)", run.stderr)
    assert parsed is not None, run.stderr
    return run.returncode, run.stdout, int(parsed.group(1))


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.mark.parametrize(
    ("rel", "imp", "call"),
    [
        ("app/direct.py", "from pkg.wrap import build", "build"),
        ("app/aliased.py", "from pkg.wrap import build as make", "make"),
        ("app/module.py", "from pkg import wrap", "wrap.build"),
        ("app/dotted.py", "import pkg.wrap", "pkg.wrap.build"),
        ("app/star.py", "from pkg.wrap import *", "build"),
        ("app/reexported.py", "from pkg import build", "build"),
        ("pkg/relative.py", "from .wrap import build", "build"),
        ("pkg/sibling.py", "from . import build", "build"),
    ],
)
def test_a_caller_of_a_module_level_wrapper_is_parsed_and_reported(
    tmp_path: Path, rel: str, imp: str, call: str
) -> None:
    write(tmp_path, {"pkg/__init__.py": "from .wrap import build\n", "pkg/wrap.py": WRAPPER})
    write(tmp_path, {"app/__init__.py": "", rel: CALLER.format(imp=imp, call=call)})
    write(tmp_path, UNRELATED)
    status, out, parsed = zerolint(tmp_path, ".")
    assert status == 1, out
    assert [line.split(":")[0] for line in out.splitlines() if ": ZL001 " in line] == [rel]
    # The wrapper, the caller and the package that re-exports: not the `tools` files.
    assert parsed == 3, out


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize(
    ("files", "imp"),
    [
        # The package re-exports its module's names with a star import.
        ({"pkg/__init__.py": "from .wrap import *\n"}, "from pkg import build"),
        # Two star imports: the wrapper's is the second.
        (
            {"pkg/__init__.py": "from .other import *\nfrom pkg.wrap import *\n"},
            "from pkg import build",
        ),
        # A chain: pkg.ops.wrap -> pkg.ops -> pkg.
        (
            {
                "pkg/__init__.py": "from .ops import *\n",
                "pkg/ops/__init__.py": "from . wrap import *\n",
            },
            "from pkg import build",
        ),
        # The caller's own two star imports: the wrapper's is the second.
        ({"pkg/__init__.py": ""}, "from pkg.other import *\nfrom pkg.wrap import *"),
        # Mixed chains: a name imported from a star importer, and a star import of a
        # module that imports the name.
        (
            {
                "pkg/__init__.py": "from .ops import build\n",
                "pkg/ops/__init__.py": "from .wrap import *\n",
            },
            "from pkg import build",
        ),
        (
            {
                "pkg/__init__.py": "from .ops import *\n",
                "pkg/ops/__init__.py": "from .wrap import build\n",
            },
            "from pkg import build",
        ),
        (
            {
                "pkg/__init__.py": "from .ops import *\n",
                "pkg/ops/__init__.py": "from .mid import build\n",
                "pkg/ops/mid.py": "from .wrap import *\n",
            },
            "from pkg import build",
        ),
    ],
)
def test_a_wrapper_re_exported_by_a_star_import_is_reached(
    tmp_path: Path, files: dict[str, str], imp: str, jobs: str
) -> None:
    wrap = "pkg/ops/wrap.py" if "pkg/ops/__init__.py" in files else "pkg/wrap.py"
    write(tmp_path, {**files, wrap: WRAPPER, "pkg/other.py": "def other():\n    return 1\n"})
    write(tmp_path, {"app/__init__.py": "", "app/use.py": CALLER.format(imp=imp, call="build")})
    write(tmp_path, UNRELATED)
    # Enough files that the prescan's child answers the searches (prescan.MIN_FILES).
    write(tmp_path, {f"filler/m{i}.py": f"X = {i}\n" for i in range(250)})
    status, out, _ = zerolint(tmp_path, "--jobs", jobs, ".")
    assert status == 1, out
    assert [line.split(":")[0] for line in out.splitlines() if ": ZL001 " in line] == ["app/use.py"]


@pytest.mark.network
@pytest.mark.slow
def test_a_wrapper_named_build_does_not_widen_what_is_parsed_in_vllm(
    tmp_path: Path,
) -> None:
    shutil.copytree(vllm_tree("0.27.1") / "vllm", tmp_path / "vllm")
    alone = zerolint(tmp_path, "vllm")
    write(tmp_path, {"extra/build_wrapper.py": WRAPPER})
    status, out, parsed = zerolint(tmp_path, "vllm", "extra")
    assert (status, out) == alone[:2]
    assert parsed == alone[2] + 1  # the wrapper's own file, nothing more


def test_timings_name_each_parsed_file_with_its_parse_and_analysis(tmp_path: Path) -> None:
    """--timings: after the phases, one line per parsed file (slowest first) saying what its
    parse and its analysis cost, and only the files the prefilter let through."""
    write(tmp_path, {"pkg/__init__.py": "", "pkg/wrap.py": WRAPPER, **UNRELATED})
    write(tmp_path, {"app/use.py": CALLER.format(imp="from pkg.wrap import build", call="build")})
    run = subprocess.run(
        [sys.executable, "-m", "zerolint", "check", "--no-cache", "--timings", "pkg", "app"]
        + ["tools"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 1, run.stderr
    lines = run.stderr.splitlines()
    parsed = int(re.search(r"\bparsed=(\d+)", lines[0]).group(1))  # type: ignore[union-attr]
    files = re.findall(
        r"^zerolint: parsed (\S+) parse=([0-9.]+)s analyse=([0-9.]+)s$", run.stderr, re.MULTILINE
    )
    assert sorted(f for f, _, _ in files) == ["app/use.py", "pkg/wrap.py"]
    assert len(files) == parsed
    costs = [float(p) + float(a) for _, p, a in files]
    assert costs == sorted(costs, reverse=True) and all(c > 0 for c in costs)


MENTION_CASES = {
    "code": "x = fn(lens)\n",
    "at the end, no newline": "y = 1\nfn(lens)",
    "at the start": "fn(lens)\n",
    "comment line only": "# fn(lens)\n",
    "indented comment, then code": "    # fn(lens)\nz = fn\n",
    "in backticks only": '"""Calls `fn`."""\n',
    "backticks, then code on the same line": '"`fn`"; fn(1)\n',
    "part of a longer name": "fnx = my_fn + fn_other\n",
    "longer name, then the name": "fnx(fn)\n",
    "after a code on one line": "a = 1  # fn\n",
    "many lines, the last one counts": "fnx\n" * 50 + "# fn\n" * 50 + "fn\n",
    "crlf": "a = 1\r\nfn(x)\r\n",
    "unicode word before": "éfn = 1\n",
    "empty": "",
}


@pytest.mark.parametrize("text", MENTION_CASES.values(), ids=MENTION_CASES.keys())
def test_mentions_is_the_pattern_searched_over_the_whole_text(text: str) -> None:
    """``mentions`` runs the pattern only on lines holding a name: it answers what the
    pattern over the whole file answers."""
    from zerolint.engine import mention_pattern, mentions

    for names in (["fn"], ["fn", "fnx"], ["other", "fn"]):
        pattern = mention_pattern(names)
        assert mentions(text, names, pattern) == (pattern.search(text) is not None), names


@pytest.mark.parametrize("text", MENTION_CASES.values(), ids=MENTION_CASES.keys())
def test_a_wrapper_is_reached_where_its_name_is_used_as_code(text: str) -> None:
    """``reaches_wrapper`` looks for a module-level wrapper's name as ``mentions`` does (on
    the lines that hold it): where the pattern over the whole text finds it, with its home
    module named, in the same package, or the module itself."""
    from zerolint.engine import mention_pattern, reaches_wrapper

    used = mention_pattern(["fn"]).search(text) is not None
    qualified = [("fn", mention_pattern(["fn"]), frozenset({"pkg.home"}))]
    # The home named in the text (a module of another package) or the module being the home.
    assert reaches_wrapper("other.mod", text + "\nimport home\n", qualified) == used
    assert reaches_wrapper("pkg.home", text, qualified) == used
    assert reaches_wrapper("pkg.sibling", text, qualified) == used
    assert not reaches_wrapper("other.mod", text, qualified)  # nothing names the home


@pytest.mark.network
def test_mentions_answers_as_the_pattern_on_a_real_tree() -> None:
    """On every file of vLLM 0.33.0, for its sink names and a common name that many files
    hold as part of longer names (a wrapper field such as ``_logits``)."""
    from devtools.wheels import vllm_tree
    from zerolint.config import Settings
    from zerolint.engine import mention_pattern, mentions

    settings = Settings()
    names = sorted(settings.sink_names(settings.rules())) + ["_logits"]
    pattern = mention_pattern(names)
    found = 0
    for path in sorted((vllm_tree("0.33.0") / "vllm").rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        expected = pattern.search(text) is not None
        assert mentions(text, names, pattern) == expected, path
        found += expected
    assert found > 10


LAMBDAS = """\
from deep_gemm import get_paged_mqa_logits_metadata


def register(fn):
    return lambda name: fn


def identity_maker():
    return lambda x: x


def resolver():
    return lambda lens: get_paged_mqa_logits_metadata(lens, 64, 132)


def rebound(fn):
    fn = get_paged_mqa_logits_metadata
    return lambda: fn


def stored(self_like):
    self_like.kernel = lambda: get_paged_mqa_logits_metadata
"""


def test_a_lambda_that_only_gives_back_a_parameter_makes_no_wrapper(tmp_path: Path) -> None:
    """A function returning a lambda is a way to the kernel that other files may take
    without naming it (its name is then looked for everywhere), unless the lambda only
    gives back a parameter: a sink comes out of `register(fn)` only where its caller
    passed one in, and named it. A parameter rebound to the kernel counts."""
    from zerolint.config import Settings
    from zerolint.dataflow import Analyzer
    from zerolint.engine import Engine
    from zerolint.project import Project

    (tmp_path / "lambdas.py").write_text(LAMBDAS)
    engine = Engine(Settings())
    project = Project([tmp_path / "lambdas.py"])
    analyzer = Analyzer(project, engine.rules)
    engine.analyse(project, analyzer, None, set())
    assert {"resolver", "rebound"} <= analyzer.wrapper_names
    assert not {"register", "identity_maker"} & analyzer.wrapper_names


CLOSURES = """
from vllm.utils.deep_gemm import get_paged_mqa_logits_metadata


def capture(seq_lens, ratio):
    lens = seq_lens // ratio

    def replay():
        return get_paged_mqa_logits_metadata(lens, 64, 132)

    def schedule(n):
        return get_paged_mqa_logits_metadata(n, 64, 132)

    return replay(), schedule(lens)
"""


def test_a_closure_forwarding_its_enclosing_functions_name_is_no_wrapper(tmp_path: Path) -> None:
    """A nested function that passes one of its parameters to the kernel is a wrapper (its
    name is looked for in other files); one that passes a name of the function it is
    defined in is not: no caller elsewhere can give that name a value."""
    from zerolint.config import Settings
    from zerolint.dataflow import Analyzer
    from zerolint.engine import Engine
    from zerolint.project import Project

    (tmp_path / "closures.py").write_text(CLOSURES)
    engine = Engine(Settings())
    project = Project([tmp_path / "closures.py"])
    analyzer = Analyzer(project, engine.rules)
    engine.analyse(project, analyzer, None, set())
    assert "schedule" in analyzer.wrapper_names
    assert "replay" not in analyzer.wrapper_names
