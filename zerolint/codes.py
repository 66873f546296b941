"""The ZL9xx codes: what zerolint says about the run itself rather than about a kernel call.

They can be looked up (``zerolint rule ZL901``), listed (``zerolint rules``), selected and
ignored like rules. ZL901-ZL905 say a file could not be checked (so it may hold an
unclamped call: the run fails, as Ruff's E902 does); ZL910 says a ``--fix`` could not be
applied; ZL920 (opt-in, like Ruff's RUF100) reports a suppression comment that suppresses
nothing; ZL930 says a limit of the analysis was reached at a sink call, so a finding may be
missing (the run fails: a limit is reported, never a clean pass).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Code:
    code: str
    name: str
    summary: str
    doc: str
    opt_in: bool = False


def _doc(code: str, name: str, what: str, why: str, fix: str) -> str:
    return (
        f"# {name} ({code})\n\n"
        f"## What it means\n\n{what}\n\n"
        f"## Why it matters\n\n{why}\n\n"
        f"## What to do\n\n{fix}\n"
    )


_UNCHECKED = (
    "A file that cannot be checked may hold an unclamped call, so the run fails (exit 1) as "
    "it does for a finding; the other files are still checked and reported. Where no file "
    "named could be checked at all, the run is an error (exit 2)."
)

CODES: tuple[Code, ...] = (
    Code(
        "ZL901",
        "syntax-error",
        "the file is not valid Python: it was not checked",
        _doc(
            "ZL901",
            "syntax-error",
            "The file does not parse as Python (the message gives Python's own reason and "
            "the line).",
            _UNCHECKED,
            "Fix the syntax, or exclude the file (`exclude` in the configuration) if it is "
            "not Python meant to run.",
        ),
    ),
    Code(
        "ZL902",
        "io-error",
        "the file or folder could not be read (missing, permissions, not a regular file)",
        _doc(
            "ZL902",
            "io-error",
            "A file or folder could not be read: it does not exist, permission is denied, it "
            "is a FIFO or a device, or a symlink loop.",
            _UNCHECKED,
            "Make the file readable, or exclude it.",
        ),
    ),
    Code(
        "ZL903",
        "not-utf8",
        "the file is not valid UTF-8 (and declares no other encoding)",
        _doc(
            "ZL903",
            "not-utf8",
            "The file's bytes are not valid UTF-8; the message gives the first bad byte.",
            _UNCHECKED,
            "Save the file as UTF-8.",
        ),
    ),
    Code(
        "ZL904",
        "binary-file",
        "the file holds a NUL byte: not Python source",
        _doc(
            "ZL904",
            "binary-file",
            "The file has a `.py` name but holds a NUL byte, so it is not Python source.",
            _UNCHECKED,
            "Exclude it, or restore its source.",
        ),
    ),
    Code(
        "ZL905",
        "too-deeply-nested",
        "the file is nested too deeply to analyse safely",
        _doc(
            "ZL905",
            "too-deeply-nested",
            "The file nests brackets or expressions deeper than the parser can take without "
            "risk to the run; it was not analysed.",
            _UNCHECKED,
            "Split the expression, or exclude generated files of this shape.",
        ),
    ),
    Code(
        "ZL910",
        "fix-not-applied",
        "--fix could not apply the fix for a finding",
        _doc(
            "ZL910",
            "fix-not-applied",
            "`--fix` (or `--diff`) found a finding it could not fix: the call's shape is "
            "outside what the codemod rewrites, or the fixed file did not re-check clean. "
            "The message says which.",
            "The finding stands and is reported with it; nothing was written for it.",
            "Apply the clamp by hand: `torch.clamp(lens, min=1)` at the call.",
        ),
    ),
    Code(
        "ZL920",
        "unused-suppression",
        "a suppression comment that suppresses no finding (opt-in)",
        _doc(
            "ZL920",
            "unused-suppression",
            "A `# noqa: ZL...`, `# zerolint: ignore[...]` or file-level `# zerolint: noqa` "
            "comment suppresses no finding. Opt-in, like Ruff's RUF100: add `ZL920` to "
            "`select` (or `--select ALL`).",
            "A stale suppression hides the next real finding on that line without anyone "
            "having looked at it.",
            "Delete the comment, or narrow it to the code it is meant for.",
        ),
        opt_in=True,
    ),
    Code(
        "ZL930",
        "analysis-limit",
        "paths into a sink call go further than the analysis follows: a finding may be missing",
        _doc(
            "ZL930",
            "analysis-limit",
            "Paths into the sink call pass through more nested calls than zerolint follows "
            "(8, `MAX_DEPTH`), or lead into more modules not parsed yet than it parses for "
            "one call (16, `MAX_PARSES`); the rest was not followed, and no unsafe path was "
            "found among the paths that were.",
            "A zero-able length may reach the call through the calls that were not followed, "
            "so the call is not known to be safe; the run fails (exit 1) rather than pass "
            "it silently, as for a file that could not be checked.",
            "Clamp the lengths closer to the sink (`torch.clamp(lens, min=1)`), which ends "
            "every path there; or, once the chain is checked by hand, ignore ZL930 for that "
            "file (`per-file-ignores`) or the run (`--ignore ZL930`).",
        ),
    ),
)


def code_by_name(code: str) -> Code | None:
    for entry in CODES:
        if entry.code == code.upper():
            return entry
    return None


OPT_IN = frozenset(c.code for c in CODES if c.opt_in)

# Diagnostics that say a file could not be checked; ZL910 (not fixed) and ZL930 (a limit
# reached in a file that was checked) are about files that were.
NOT_CHECKED = frozenset({"ZL901", "ZL902", "ZL903", "ZL904", "ZL905"})
NOT_FIXED = "ZL910"
LIMIT = "ZL930"
UNUSED = "ZL920"  # a suppression comment that suppresses nothing (opt-in)
