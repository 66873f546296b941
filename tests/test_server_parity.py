"""`zerolint server` where it answered otherwise than `zerolint check` for the same file
contents, each with the real server process and a real LSP client: a file or folder whose
name holds a percent-encoded sequence (`a%2C.py`), a folder with a configuration of its
own (another project, which no path crosses into).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from lsprotocol import types as lsp

from devtools.lsp_client import Client
from tests import test_server
from tests.test_server import BUILDER, CLAMPED_HELPER, HELPER, is_clean, is_zl001, run_session

workspace = test_server.workspace  # the fixture: a small project


def test_a_name_with_a_percent_escape_is_not_decoded_twice(workspace: Path, tmp_path: Path) -> None:
    """pygls keys the open documents by the URI decoded once: a path made of that key is
    decoded again, and `a%2C.py` (the URI `a%252C.py`) read as `a,.py`. The file got no
    diagnostics, and in a folder so named an edit of the helper's buffer did not reach the
    builder open beside it."""
    root = tmp_path / "ws%2C"
    shutil.copytree(workspace, root)
    odd = root / "pkg" / "a%2C.py"
    odd.write_text(BUILDER)
    builder = root / "pkg" / "builder.py"

    async def scenario(client: Client) -> None:
        b = client.open(builder)
        a = client.open(odd)
        assert "%252C" in a
        await client.diagnostics_for(a, is_zl001)
        await client.diagnostics_for(b, is_zl001)
        helper = client.open(root / "pkg" / "utils.py")
        client.change(helper, CLAMPED_HELPER)  # unsaved: the buffer counts, not the disk
        await client.diagnostics_for(b, is_clean)
        await client.diagnostics_for(a, is_clean)

    run_session(root, scenario)


def cli_findings(check, root: Path) -> list[tuple[str, str, int]]:
    """(file, code, line) of what `zerolint check .` run in ``root`` finds."""
    out = json.loads(check("--output-format", "json", "--exit-zero", ".", cwd=root)[1])
    return sorted((Path(f["path"]).name, f["code"], f["line"]) for f in out["findings"])


def shown(diagnostics: list[lsp.Diagnostic], name: str) -> list[tuple[str, str, int]]:
    return sorted((name, str(d.code), d.range.start.line + 1) for d in diagnostics)


def test_a_folder_with_its_own_configuration_is_another_project(workspace: Path, check) -> None:
    """`zerolint check` keeps the files under different configurations apart (as Ruff
    does): no path crosses from the builder into a helper under a folder configured on
    its own. The server's tree of the workspace folder held every file below it, and
    followed the path; once the nested configuration is gone, it is one project again."""
    sub = workspace / "pkg" / "sub"
    sub.mkdir()
    (sub / "__init__.py").write_text("")
    (sub / "utils.py").write_text(HELPER)
    nested = sub / "pyproject.toml"
    nested.write_text('[tool.zerolint]\nselect = ["ZL001"]\n')
    builder = workspace / "pkg" / "builder.py"
    builder.write_text(BUILDER.replace("from .utils", "from .sub.utils"))
    (workspace / "pkg" / "utils.py").unlink()
    apart = cli_findings(check, workspace)
    assert apart == []
    nested.unlink()
    together = cli_findings(check, workspace)
    assert together == [("builder.py", "ZL001", 8)]
    nested.write_text('[tool.zerolint]\nselect = ["ZL001"]\n')

    async def scenario(client: Client) -> None:
        uri = client.open(builder)
        first = await client.diagnostics_for(uri, lambda d: True)
        assert shown(first, "builder.py") == apart
        helper = client.open(sub / "utils.py")  # its own project: checked, clean
        assert await client.diagnostics_for(helper, lambda d: True) == []
        nested.unlink()
        client.watched(nested, lsp.FileChangeType.Deleted)
        after = await client.diagnostics_for(uri, is_zl001)
        assert shown(after, "builder.py") == together

    run_session(workspace, scenario)
