"""`zerolint server` where it answered otherwise than `zerolint check` for the same file
contents, each with the real server process and a real LSP client: a file or folder whose
name holds a percent-encoded sequence (`a%2C.py`).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from devtools.lsp_client import Client
from tests import test_server
from tests.test_server import BUILDER, CLAMPED_HELPER, is_clean, is_zl001, run_session

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
