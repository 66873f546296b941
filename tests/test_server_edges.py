"""`zerolint server` where a review found it wrong, each with the real server process and a
real LSP client: lines broken only where the protocol breaks them (not at a form feed or
U+2028), the suppression comment put only where Python reads it as one, positions in
UTF-16 in every file, workspace folders added while running, code actions that do not hold
up the edits behind them nor outlive the findings they fix, the client's own spelling of a
URI, the exit status, and what is answered or logged for an unknown method, parameters that
cannot be read, a request after shutdown, and a buffer on no file.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import time
from pathlib import Path

import pytest
from lsprotocol import types as lsp

from devtools.lsp_client import Client, apply_edit
from tests import test_server
from tests.test_server import (
    BUILDER,
    CLAMPED_BUILDER,
    CLAMPED_HELPER,
    HELPER,
    is_clean,
    is_zl001,
    run_session,
)

workspace = test_server.workspace  # the fixtures: a small project, and a server over it
session = test_server.session

SINK = "    return deep_gemm.get_paged_mqa_logits_metadata(lens.unsqueeze(-1), 64, num_sms)\n"
FIXED = "torch.clamp(lens.unsqueeze(-1), min=1)"
# A page break before the function and a line separator inside a comment: Python reads
# neither as the end of a line, nor does LSP; str.splitlines does.
ODD_BREAKS = BUILDER.replace(
    "def build_schedule", "\x0c\n# lengths\u2028per request\ndef build_schedule"
)


def sink_line(text: str) -> int:
    """The 0-based line of the sink call, counted as LSP counts lines."""
    return re.split(r"(?<=\n)", text).index(SINK)


def compiles(text: str) -> bool:
    try:
        compile(text, "builder.py", "exec")
    except SyntaxError:
        return False
    return True


def test_code_actions_edit_the_sink_line_after_a_form_feed(workspace: Path, session) -> None:
    builder = workspace / "pkg" / "builder.py"
    builder.write_text(ODD_BREAKS)

    async def scenario(client: Client) -> None:
        uri = client.open(builder)
        [diag] = await client.diagnostics_for(uri, is_zl001)
        assert diag.range.start.line == sink_line(ODD_BREAKS)
        actions = {a.title.split(" ")[0]: a for a in await client.code_actions(uri, diag)}
        assert set(actions) == {"Clamp", "Suppress", "zerolint:"}
        for name, action in actions.items():
            assert action.edit is not None and action.edit.changes is not None
            after = apply_edit(ODD_BREAKS, action.edit.changes[uri])
            assert compiles(after), name
            assert SINK not in after, name  # the call itself was edited, nothing else
            assert after.replace("import torch\n", "").count("\n") == ODD_BREAKS.count("\n")
            assert "\x0c\n# lengths\u2028per request\ndef build_schedule" in after
            if name == "Suppress":
                assert SINK.rstrip("\n") + "  # noqa: ZL001\n" in after
            else:
                assert FIXED in after
            client.change(uri, after)
            await client.diagnostics_for(uri, is_clean)
            client.change(uri, ODD_BREAKS)
            await client.diagnostics_for(uri, is_zl001)

    session(scenario)


def test_an_incremental_edit_after_a_form_feed_lands_where_the_client_put_it(
    workspace: Path, session
) -> None:
    builder = workspace / "pkg" / "builder.py"
    builder.write_text(ODD_BREAKS)
    line = sink_line(ODD_BREAKS)

    async def scenario(client: Client) -> None:
        uri = client.open(builder)
        await client.diagnostics_for(uri, is_zl001)
        client.change_range(uri, (line, 0), (line, 0), "    lens = lens.clamp(min=1)\n")
        await client.diagnostics_for(uri, is_clean)  # not a false syntax error
        client.change_range(uri, (line, 0), (line + 1, 0), "")  # and back
        await client.diagnostics_for(uri, is_zl001)

    session(scenario)


@pytest.mark.parametrize(
    ("call", "offered"),
    [
        # The call's line ends with a backslash: a comment there is a syntax error, and the
        # next line is not the call's, so no comment can suppress it.
        (
            (
                "    out = deep_gemm.get_paged_mqa_logits_metadata(lens.unsqueeze(-1), 64, num_sms)"
                " + \\\n        0\n    return out\n"
            ),
            False,
        ),
        # The call's second line ends inside a string: the comment goes on its first.
        (
            (
                "    return deep_gemm.get_paged_mqa_logits_metadata(\n"
                '        lens.unsqueeze(-1), 64, num_sms, note="""\nmulti-line note""")\n'
            ),
            True,
        ),
        # The call's first line ends inside a string: the comment goes on its last line.
        (
            (
                "    return deep_gemm.get_paged_mqa_logits_metadata("
                'lens.unsqueeze(-1), 64, num_sms, note="""\nmulti-line note""")\n'
            ),
            True,
        ),
        # A string on the line reads like a noqa comment: it is left alone.
        (
            (
                "    return deep_gemm.get_paged_mqa_logits_metadata(lens.unsqueeze(-1), 64, num_sms,"
                " tag='# noqa: X1')\n"
            ),
            True,
        ),
        # A real noqa comment naming another code: the code is added to its list.
        (SINK.rstrip("\n") + "  # noqa: X1\n", True),
        # One whose colon is followed by no valid code suppresses nothing (as in Ruff), and
        # a second noqa after it would not count: it is written again with the code.
        (SINK.rstrip("\n") + "  # noqa: ZL-001 why\n", True),
        # A colon after a code (Ruff refuses it too): the codes read before it are kept.
        (SINK.rstrip("\n") + "  # noqa: ZL004: the kernel clamps\n", True),
    ],
)
def test_the_suppression_comment_goes_only_where_python_reads_one(
    workspace: Path, session, call: str, offered: bool
) -> None:
    text = BUILDER.replace(SINK, call)
    builder = workspace / "pkg" / "builder.py"
    builder.write_text(text)

    async def scenario(client: Client) -> None:
        uri = client.open(builder)
        shown = await client.diagnostics_for(uri, lambda ds: "ZL001" in [d.code for d in ds])
        [diag] = [d for d in shown if d.code == "ZL001"]  # an invalid noqa: a warning too
        actions = await client.code_actions(uri, diag)
        suppress = [a for a in actions if a.title.startswith("Suppress")]
        assert any(a.title.startswith("Clamp") for a in actions)
        assert len(suppress) == int(offered)
        if not offered:
            return
        assert suppress[0].edit is not None and suppress[0].edit.changes is not None
        [edit] = suppress[0].edit.changes[uri]
        # The title names the line the comment goes on: the call's own, else which.
        at = edit.range.start.line
        where = "this line" if at == diag.range.start.line else f"line {at + 1}"
        assert suppress[0].title == f"Suppress ZL001 on {where} (# noqa)"
        assert (at > diag.range.start.line) == (
            "metadata(lens.unsqueeze(-1), 64, num_sms, note" in text
        )
        after = apply_edit(text, suppress[0].edit.changes[uri])
        assert compiles(after)
        assert "'# noqa: X1'" in after or "'# noqa" not in text  # the string is unchanged
        assert '"""\nmulti-line note"""' in after or '"""' not in text
        assert "# noqa: X1, ZL001" in after or "  # noqa: X1\n" not in text
        assert "  # noqa: ZL001 why\n" in after or "ZL-001" not in text
        assert "# noqa: ZL004, ZL001 the kernel clamps" in after or "ZL004:" not in text
        client.change(uri, after)
        await client.diagnostics_for(uri, is_clean)

    session(scenario)


def utf16(line: str, column: int) -> int:
    """The UTF-16 code units before ``column`` (code points) of ``line``."""
    return len(line[:column].encode("utf-16-le")) // 2


def test_positions_are_in_utf16_in_every_file(workspace: Path, session) -> None:
    helper = workspace / "pkg" / "utils.py"
    # The division, on a line whose start holds characters outside the BMP.
    text = HELPER.replace(
        "    return seq_lens // compress_ratio\n",
        '    tag = "\U0001f600\U0001f600"; lens = seq_lens // compress_ratio\n    return lens\n',
    )
    helper.write_text(text)
    builder = workspace / "pkg" / "builder.py"
    # A syntax error after characters outside the BMP, in a file that names the kernel.
    call = 'x = "\U0001f600\U0001f600\U0001f600"; deep_gemm.get_paged_mqa_logits_metadata(\n'
    broken = "import deep_gemm\n" + call

    async def scenario(client: Client) -> None:
        uri = client.open(builder)
        [diag] = await client.diagnostics_for(uri, is_zl001, timeout=20)
        [step] = [r for r in diag.related_information or [] if "floor division" in r.message]
        assert step.location.uri.endswith("/pkg/utils.py")
        line = text.splitlines()[step.location.range.start.line]
        expected = utf16(line, line.index("lens = seq_lens"))  # the statement, as the CLI shows
        assert step.location.range.start.character == expected
        client.change(uri, broken)
        [error] = await client.diagnostics_for(
            uri, lambda d: [x.code for x in d] == ["ZL901"], timeout=20
        )
        assert (error.range.start.line, error.range.start.character) == (
            1,
            utf16(call, call.index("(")),
        )

    session(scenario)


def test_a_workspace_folder_added_while_running_is_checked_as_a_project(
    workspace: Path, tmp_path: Path, session
) -> None:
    other = tmp_path / "other"
    shutil.copytree(workspace, other)

    async def scenario(client: Client) -> None:
        client.lsp.workspace_did_change_workspace_folders(
            lsp.DidChangeWorkspaceFoldersParams(
                event=lsp.WorkspaceFoldersChangeEvent(
                    added=[lsp.WorkspaceFolder(uri=other.as_uri(), name="other")], removed=[]
                )
            )
        )
        await client.log_matching("workspace folders changed")
        uri = client.open(other / "pkg" / "builder.py")
        [diag] = await client.diagnostics_for(uri, is_zl001)
        steps = [r.location.uri for r in diag.related_information or []]
        assert (other / "pkg" / "utils.py").as_uri() in steps  # followed into the helper
        assert not [m for m in client.logs if "outside the workspace" in m]

    session(scenario)


def test_a_code_action_does_not_hold_up_the_diagnostics_of_an_edit(
    workspace: Path, session
) -> None:
    # A module long enough for LibCST's fix to take a second or more.
    filler = "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(1000))
    text = BUILDER.replace("def build_schedule", filler + "def build_schedule")
    builder = workspace / "pkg" / "builder.py"
    builder.write_text(text)

    async def scenario(client: Client) -> None:
        uri = client.open(builder)
        [diag] = await client.diagnostics_for(uri, is_zl001)
        asked = asyncio.ensure_future(client.code_actions(uri, diag))
        answered: list[float] = []
        asked.add_done_callback(lambda _: answered.append(time.perf_counter()))
        await asyncio.sleep(0.05)
        clamped = SINK.replace("lens.unsqueeze", "lens.clamp(min=1).unsqueeze")
        client.change(uri, text.replace(SINK, clamped))
        await client.diagnostics_for(uri, is_clean)
        actions = await asyncio.wait_for(asked, 120)
        [cleaned] = [at for at, u, _, d in client.published if u == uri and d == []]
        assert cleaned < answered[0]  # the edit's diagnostics came first...
        assert actions == []  # ...and the fixes, made for the text before it, are not offered

    session(scenario)


def test_diagnostics_are_published_under_the_uri_the_client_opened(
    workspace: Path, tmp_path: Path
) -> None:
    odd = tmp_path / "dir é"
    shutil.copytree(workspace, odd)
    builder = odd / "pkg" / "builder.py"

    async def scenario(client: Client) -> None:
        spelt = re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), builder.as_uri())
        assert spelt != builder.as_uri()
        client.versions[spelt] = 1
        client.lsp.text_document_did_open(
            lsp.DidOpenTextDocumentParams(
                lsp.TextDocumentItem(
                    uri=spelt, language_id="python", version=1, text=builder.read_text()
                )
            )
        )
        await client.diagnostics_for(spelt, is_zl001, timeout=20)

    run_session(odd, scenario)


def test_exit_without_shutdown_exits_with_status_1(workspace: Path) -> None:
    async def main() -> None:
        client = Client(workspace)
        await client.start()
        client.lsp.exit(None)
        process = client.lsp._server
        assert process is not None
        code = await asyncio.wait_for(process.wait(), 30)
        await client.lsp.stop()
        assert code == 1

    asyncio.run(main())


def test_an_unknown_method_bad_params_and_a_buffer_off_disk_are_answered_once(
    workspace: Path, session
) -> None:
    builder = workspace / "pkg" / "builder.py"

    async def scenario(client: Client) -> None:
        with pytest.raises(Exception, match="[Mm]ethod [Nn]ot [Ff]ound|not found"):
            await client.lsp.protocol.send_request_async("zerolint/nothing", {})
        # Parameters pygls cannot read (sent as bytes: the client's own pygls would refuse
        # them): answered with the error, not left unanswered.
        protocol = client.lsp.protocol
        answer = asyncio.get_running_loop().create_future()
        protocol._request_futures["bad-params"] = answer
        bad = {"x": 1}
        protocol._send_data(
            {
                "jsonrpc": "2.0",
                "id": "bad-params",
                "method": "textDocument/codeAction",
                "params": bad,
            }
        )
        with pytest.raises(Exception, match="[Ii]nvalid [Pp]arams"):
            await asyncio.wait_for(answer, 20)
        uri = client.open(builder)
        await client.diagnostics_for(uri, is_zl001)
        builder.unlink()
        for text, shown in ((CLAMPED_BUILDER, is_clean), (BUILDER, is_zl001)) * 2:
            client.change(uri, text)  # four edits of a buffer on no file, each analysed
            await client.diagnostics_for(uri, shown)
        await client.log_matching("not on disk")
        assert len([m for m in client.logs if "not on disk" in m]) == 1
        assert not [m for m in client.logs if "internal error" in m]

    session(scenario)


def test_fix_all_follows_the_findings_when_a_helper_changes(workspace: Path, session) -> None:
    """The fixes are kept per buffer, but a file's findings also come from the modules it
    calls: an edit of the helper must not leave a fix for a finding that is gone."""
    local = (
        "\n\ndef build_local(seq_lens, num_sms):\n"
        "    return deep_gemm.get_paged_mqa_logits_metadata("
        "(seq_lens // 4).unsqueeze(-1), 64, num_sms)\n"
    )
    builder = workspace / "pkg" / "builder.py"
    builder.write_text(BUILDER + local)
    helper = workspace / "pkg" / "utils.py"

    async def fix_all_clamps(client: Client, uri: str, diagnostic: lsp.Diagnostic) -> int:
        [fix_all] = [
            a for a in await client.code_actions(uri, diagnostic) if a.kind and "fixAll" in a.kind
        ]
        assert fix_all.edit is not None and fix_all.edit.changes is not None
        return apply_edit(BUILDER + local, fix_all.edit.changes[uri]).count("torch.clamp(")

    async def scenario(client: Client) -> None:
        uri = client.open(builder)
        two = await client.diagnostics_for(uri, lambda d: len(d) == 2)
        assert await fix_all_clamps(client, uri, two[0]) == 2
        h = client.open(helper)
        client.change(h, CLAMPED_HELPER)  # the helper's finding goes; the local one stays
        [one] = await client.diagnostics_for(uri, lambda d: len(d) == 1)
        assert await fix_all_clamps(client, uri, one) == 1

    session(scenario)


def test_a_request_after_shutdown_is_answered_invalid_request(workspace: Path) -> None:
    async def main() -> None:
        client = Client(workspace)
        await client.start()
        await client.lsp.shutdown_async(None)
        with pytest.raises(Exception, match="after shutdown"):
            await asyncio.wait_for(
                client.lsp.protocol.send_request_async("zerolint/anything", {}), 20
            )
        client.lsp.exit(None)
        process = client.lsp._server
        assert process is not None
        assert await asyncio.wait_for(process.wait(), 30) == 0  # it had been shut down
        await client.lsp.stop()

    asyncio.run(main())


def test_an_invalid_noqa_comment_is_a_warning_on_its_line(workspace: Path, session) -> None:
    """The command line warns on stderr of a noqa comment that suppresses nothing where it
    left a finding; the editor shows the same words as a warning on the comment's line
    (Ruff's server only logs it, where the user never looks), gone once the comment is
    fixed or is no noqa comment."""
    builder = workspace / "pkg" / "builder.py"
    invalid = BUILDER.replace(SINK, SINK.rstrip("\n") + "  # noqa: ZL001: the kernel clamps\n")
    message = (
        "invalid `# noqa` directive: expected a comma-separated list of codes "
        "(e.g. `# noqa: ZL001, ZL004`); it suppresses nothing"
    )

    def warned(ds: list[lsp.Diagnostic]) -> bool:
        return sorted(str(d.code) for d in ds) == ["None", "ZL001"]

    async def scenario(client: Client) -> None:
        uri = client.open(builder, invalid)
        shown = await client.diagnostics_for(uri, warned)
        [warning] = [d for d in shown if d.code is None]
        line = sink_line(BUILDER)  # the comment is on the sink's line
        assert warning.message == message
        assert warning.severity == lsp.DiagnosticSeverity.Warning
        assert warning.source == "zerolint"
        assert warning.range.start == lsp.Position(line, 0)
        assert warning.range.end == lsp.Position(line, len(invalid.splitlines()[line]))
        # No longer a noqa comment: the finding stays, the warning goes.
        client.change(uri, invalid.replace("# noqa: ZL001: the", "# the"))
        await client.diagnostics_for(uri, is_zl001)
        client.change(uri, invalid)
        await client.diagnostics_for(uri, warned)
        # A remark after the code, as Ruff reads it: the finding is suppressed.
        client.change(uri, invalid.replace("ZL001: the", "ZL001 the"))
        await client.diagnostics_for(uri, is_clean)

    session(scenario)
