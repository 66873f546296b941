"""`zerolint server` end to end: the real server process, a real LSP client, over stdio.

Each test starts ``python -m zerolint server`` in a small workspace (a builder that hands
floor-divided lengths from a helper module to the kernel, and a ``[tool.zerolint]``), and
talks to it as an editor does: open, edit, ask for code actions, save, close, shut down.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from lsprotocol import types as lsp  # the `server` extra, part of `test`

from devtools.lsp_client import Client, apply_edit

BUILDER = """\
import deep_gemm

from .utils import compressed_lens


def build_schedule(seq_lens, compress_ratio, num_sms):
    lens = compressed_lens(seq_lens, compress_ratio)
    return deep_gemm.get_paged_mqa_logits_metadata(lens.unsqueeze(-1), 64, num_sms)
"""
CLAMPED_BUILDER = BUILDER.replace(
    "    lens = compressed_lens(seq_lens, compress_ratio)\n",
    "    lens = compressed_lens(seq_lens, compress_ratio)\n    lens = lens.clamp(min=1)\n",
)
HELPER = '''\
"""Length helpers shared by the attention backends."""


def compressed_lens(seq_lens, compress_ratio):
    return seq_lens // compress_ratio
'''
CLAMPED_HELPER = HELPER.replace(
    "    return seq_lens // compress_ratio\n",
    "    return (seq_lens // compress_ratio).clamp(min=1)\n",
)
PYPROJECT = "[tool.zerolint]\ncompress-ratios = [4]\n"


def is_zl001(diagnostics: list[lsp.Diagnostic]) -> bool:
    return [d.code for d in diagnostics] == ["ZL001"]


def is_clean(diagnostics: list[lsp.Diagnostic]) -> bool:
    return diagnostics == []


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    pkg = root / "pkg"
    pkg.mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT)
    (pkg / "__init__.py").write_text("")
    (pkg / "builder.py").write_text(BUILDER)
    (pkg / "utils.py").write_text(HELPER)
    return root


Session = Callable[[Callable[[Client], Awaitable[None]]], None]


def run_session(root: Path, scenario: Callable[[Client], Awaitable[None]]) -> None:
    """Run a scenario against a fresh server over ``root``; the server must shut down and
    exit 0."""
    run_client(Client(root, "--debounce-ms", "20"), scenario)


def run_client(client: Client, scenario: Callable[[Client], Awaitable[None]]) -> None:
    """``run_session`` with a client of the test's own."""

    async def main() -> None:
        await client.start()
        try:
            await asyncio.wait_for(scenario(client), 240)
        except BaseException:
            await client.kill()
            raise
        code = await client.stop()
        assert code == 0, client.stderr.decode(errors="replace")

    asyncio.run(main())


@pytest.fixture
def session(workspace: Path) -> Session:
    """Run a scenario against a fresh server over the workspace (``run_session``)."""
    return lambda scenario: run_session(workspace, scenario)


def test_initialize_announces_the_features(session: Session) -> None:
    async def scenario(client: Client) -> None:
        result = client.initialize_result
        assert result is not None and result.server_info is not None
        assert result.server_info.name == "zerolint"
        caps = result.capabilities
        sync = caps.text_document_sync
        assert isinstance(sync, lsp.TextDocumentSyncOptions)
        assert sync.change == lsp.TextDocumentSyncKind.Incremental
        assert sync.open_close and sync.save  # a save of a pyproject.toml reloads it
        assert isinstance(caps.code_action_provider, lsp.CodeActionOptions)
        kinds = caps.code_action_provider.code_action_kinds or []
        assert lsp.CodeActionKind.QuickFix in kinds and "source.fixAll.zerolint" in kinds
        await client.log_matching("zerolint 0.")  # the start-up line, in the editor's log

    session(scenario)


def test_open_publishes_the_finding_with_its_path(workspace: Path, session: Session) -> None:
    builder = workspace / "pkg" / "builder.py"
    helper = workspace / "pkg" / "utils.py"

    async def scenario(client: Client) -> None:
        uri = client.open(builder)
        [diag] = await client.diagnostics_for(uri, is_zl001)
        # The sink call, 8:12 to the end of the call (LSP positions are 0-based).
        assert (diag.range.start.line, diag.range.start.character) == (7, 11)
        assert diag.range.end.line == 7
        assert diag.source == "zerolint"
        assert diag.severity == lsp.DiagnosticSeverity.Error
        assert "`lens.unsqueeze(-1)` can be all zero" in diag.message
        assert "witness: B=32, seq_len=1, compress_ratio=4 -> every context length 0" in (
            diag.message.replace("witness (path 1)", "witness")
        )
        assert diag.code_description is not None
        assert diag.code_description.href.endswith("/ZL001.md")
        assert Path(diag.code_description.href.removeprefix("file://")).is_file()
        steps = [
            (Path(r.location.uri.removeprefix("file://")), r.location.range.start.line + 1)
            for r in diag.related_information or []
        ]
        # Into the helper (where the lengths are divided) and back to the call.
        assert steps == [(helper, 5), (builder, 7), (builder, 8)]
        messages = [r.message for r in diag.related_information or []]
        assert "floor division" in messages[0] and "seq_lens // compress_ratio" in messages[0]
        assert "sink (context_lens)" in messages[-1]

    session(scenario)


def test_positions_are_in_utf16_units(workspace: Path, session: Session) -> None:
    builder = workspace / "pkg" / "builder.py"
    # One character outside the BMP before the call: two UTF-16 code units.
    text = BUILDER.replace("    return deep_gemm", '    _ = "\U0001f600"; return deep_gemm')
    builder.write_text(text)
    line = text.splitlines()[7]

    async def scenario(client: Client) -> None:
        uri = client.open(builder)
        [diag] = await client.diagnostics_for(uri, is_zl001)
        assert diag.range.start.character == line.index("deep_gemm.") + 1
        actions = await client.code_actions(uri, diag)
        [suppress] = [a for a in actions if a.title.startswith("Suppress")]
        assert suppress.edit is not None and suppress.edit.changes is not None
        [edit] = suppress.edit.changes[uri]
        assert edit.range.end.character == len(line) + 1  # the whole line, in UTF-16

    session(scenario)


def test_change_that_adds_the_clamp_clears_it(workspace: Path, session: Session) -> None:
    builder = workspace / "pkg" / "builder.py"

    async def scenario(client: Client) -> None:
        uri = client.open(builder)
        await client.diagnostics_for(uri, is_zl001)
        client.change(uri, CLAMPED_BUILDER)
        await client.diagnostics_for(uri, is_clean)
        # Unsaved: what is analysed is the buffer, not the file on disk.
        assert builder.read_text() == BUILDER
        client.change(uri, BUILDER)
        await client.diagnostics_for(uri, is_zl001)

    session(scenario)


def test_edits_in_quick_succession_are_checked_once(workspace: Path, session: Session) -> None:
    builder = workspace / "pkg" / "builder.py"

    async def scenario(client: Client) -> None:
        uri = client.open(builder)
        await client.diagnostics_for(uri, is_zl001)
        before = len(client.published)
        for i in range(15):  # typing: each edit well within the 20 ms debounce of the last
            client.change(uri, BUILDER + f"# {i}\n")
        client.change(uri, CLAMPED_BUILDER)
        await client.diagnostics_for(uri, is_clean)
        mine = [p for p in client.published[before:] if p[1] == uri]
        assert mine[-1][2] == client.versions[uri]  # the last version is the one shown
        assert len(mine) <= 3, [p[2] for p in mine]

    session(scenario)


def test_an_edit_after_a_pause_is_analysed_at_once(workspace: Path) -> None:
    """The debounce holds back only the edits that follow one another within it: the first
    edit after a pause is analysed at once, the next one (typing goes on) after the
    debounce."""
    debounce = 3.0
    builder = workspace / "pkg" / "builder.py"

    async def main() -> None:
        client = Client(workspace, "--debounce-ms", str(int(debounce * 1000)))
        await client.start()
        try:
            uri = client.open(builder)
            await client.diagnostics_for(uri, is_zl001)
            waits = []
            for text, wanted in ((CLAMPED_BUILDER, is_clean), (BUILDER, is_zl001)):
                sent = asyncio.get_running_loop().time()
                client.change(uri, text)
                version = client.versions[uri]
                await client.wait_for(lambda v=version: client.published[-1][2] == v, 30)
                assert wanted(client.published[-1][3])
                waits.append(asyncio.get_running_loop().time() - sent)
            assert waits[0] < debounce / 2, waits  # after a pause: no debounce
            assert waits[1] >= debounce, waits  # within the debounce of the last edit
        finally:
            assert await client.stop() == 0

    asyncio.run(main())


def test_the_server_collects_its_garbage_when_idle_or_every_few_analyses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The analyses run with the cyclic collector off; their garbage is collected in the
    worker once the server is idle, or after ``COLLECT_AT_MOST_EVERY`` analyses without a
    pause. An idle timer that ends while an edit waits (or is analysed) is set again. The
    timer's end is called by hand here, as the event loop calls it (the idle time is set
    to a minute meanwhile), so that nothing hangs on how fast a loaded machine runs."""
    import gc

    from zerolint import server_lsp

    monkeypatch.setattr(server_lsp, "COLLECT_WHEN_IDLE_S", 60.0)
    server = server_lsp.build(debounce=0.01)
    started: list[int] = []

    def on_gc(phase: str, info: dict) -> None:
        if phase == "start" and info["generation"] == 2:
            started.append(1)

    async def collections(count: int) -> None:
        """Wait (up to 30 s: a large heap takes long) until ``count`` have started."""
        for _ in range(300):
            if len(started) >= count:
                return
            await asyncio.sleep(0.1)

    def timer_ends() -> None:
        armed = server.collecting
        assert armed is not None  # an idle collection is waiting
        armed.cancel()
        server._collect()  # what the event loop calls when the timer ends

    async def main() -> None:
        for _ in range(server_lsp.COLLECT_AT_MOST_EVERY - 1):
            server.collect_later()
        await asyncio.sleep(0.1)
        assert started == [] and server.collecting is not None  # waiting for a pause
        server.collect_later()  # the last analysis allowed without a collection
        assert server.collecting is None and server.uncollected == 0  # sent to the worker
        await collections(1)
        assert started == [1]

        server.collect_later()
        edit = "file:///nowhere/edited.py"
        server.sleeping[edit] = waiting = asyncio.ensure_future(asyncio.sleep(60))
        timer_ends()  # while an edit waits: put off
        await asyncio.sleep(0.2)
        assert started == [1] and server.collecting is not None
        del server.sleeping[edit]
        waiting.cancel()
        server.analysing += 1
        timer_ends()  # while an analysis runs: put off
        await asyncio.sleep(0.2)
        assert started == [1] and server.collecting is not None
        server.analysing -= 1
        timer_ends()  # idle
        await collections(2)
        assert started == [1, 1] and server.uncollected == 0

        monkeypatch.setattr(server_lsp, "COLLECT_WHEN_IDLE_S", 0.05)
        server.collect_later()  # and the real timer ends by itself after a pause
        await collections(3)
        assert started == [1, 1, 1]

    collecting = gc.isenabled()
    gc.disable()
    gc.callbacks.append(on_gc)
    try:
        asyncio.run(main())
    finally:
        gc.callbacks.remove(on_gc)
        server.worker.shutdown(wait=True)
        if collecting:
            gc.enable()


def test_a_frozen_parse_that_edits_replaced_is_freed_once_enough_add_up(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index is frozen out of the collector's sight, so the parse an edit replaces
    stays in memory: the server counts those parses' text and, once they add up to
    ``THAW_AFTER_CHARS``, unfreezes before an idle collection (not a forced one) and
    freezes what is alive after it. A parse replaced again before then was never frozen:
    it is not counted. A tree dropped when a new buffer is opened in it counts its frozen
    parses too. The collections go through ``_collect`` and the real worker thread."""
    import gc
    import weakref

    from zerolint import server_lsp
    from zerolint.server_index import WorkspaceIndex

    class Marker:
        pass

    def collect(*, force: bool) -> None:
        server._collect(force=force)
        server.worker.submit(lambda: None).result(timeout=60)  # the collection is done

    def marked(path: Path) -> weakref.ref:
        """A weak reference to an object reachable only through the frozen parse of
        ``path`` (LibCST's nodes take no weak reference)."""
        (context,) = index.contexts.values()
        parsed = context.project._kept[path][1]
        marker = Marker()
        parsed.functions["_marker"] = marker  # type: ignore[union-attr]
        return weakref.ref(marker)

    was_enabled = gc.isenabled()
    builder, helper = workspace / "pkg" / "builder.py", workspace / "pkg" / "utils.py"
    server = server_lsp.build(debounce=0.01)
    server.index = index = WorkspaceIndex([workspace], lambda level, message: None)
    try:
        server.warm()  # indexes, freezes, and turns the collector off, as on initialize
        assert index.frozen_garbage() == 0
        first = marked(builder)
        index.analyse(builder, CLAMPED_BUILDER)
        assert index.frozen_garbage() == len(BUILDER)
        index.analyse(builder, BUILDER)  # the clamped parse was never frozen
        assert index.frozen_garbage() == len(BUILDER)
        collect(force=False)  # below the threshold: a plain collection
        assert first() is not None  # frozen: the collector cannot free it
        monkeypatch.setattr(server_lsp, "THAW_AFTER_CHARS", len(BUILDER))
        collect(force=True)  # forced (an edit may wait): no thaw
        assert first() is not None and index.frozen_garbage() == len(BUILDER)
        collect(force=False)
        assert first() is None  # unfrozen, collected
        assert index.frozen_garbage() == 0 and not server.refreeze
        assert gc.get_freeze_count() > 0  # what is alive is frozen again

        # A new buffer in the tree: the tree is rebuilt, its frozen parses dropped.
        old = marked(helper)
        index.analyse(workspace / "pkg" / "new.py", "x = 1\n")
        assert index.frozen_garbage() >= len(HELPER)
        collect(force=False)
        assert old() is None and index.frozen_garbage() == 0
    finally:
        gc.unfreeze()
        if was_enabled:
            gc.enable()
        server.worker.shutdown(wait=True)


@pytest.mark.parametrize("title", ["Clamp", "Suppress"])
def test_code_action_edit_makes_the_buffer_clean(
    workspace: Path, session: Session, title: str
) -> None:
    builder = workspace / "pkg" / "builder.py"

    async def scenario(client: Client) -> None:
        uri = client.open(builder)
        [diag] = await client.diagnostics_for(uri, is_zl001)
        actions = await client.code_actions(uri, diag)
        assert {a.title.split()[0] for a in actions} >= {"Clamp", "Suppress"}
        [action] = [a for a in actions if a.title.startswith(title)]
        assert action.kind == lsp.CodeActionKind.QuickFix
        assert action.edit is not None and action.edit.changes is not None
        fixed = apply_edit(client.texts[uri], action.edit.changes[uri])
        if title == "Clamp":
            # The edit `zerolint check --fix` makes.
            from zerolint.fix import FixTarget, fix_source

            assert "get_paged_mqa_logits_metadata(torch.clamp(lens.unsqueeze(-1), min=1)" in fixed
            assert "import torch\n" in fixed
            assert fixed == fix_source(BUILDER, [FixTarget(8, 11, 0, 8, 83)])
        else:
            assert fixed.splitlines()[7].endswith("num_sms)  # noqa: ZL001")
        client.change(uri, fixed)
        await client.diagnostics_for(uri, is_clean)

    session(scenario)


def test_fix_all_source_action(workspace: Path, session: Session) -> None:
    builder = workspace / "pkg" / "builder.py"

    async def scenario(client: Client) -> None:
        uri = client.open(builder)
        await client.diagnostics_for(uri, is_zl001)
        result = await client.lsp.text_document_code_action_async(
            lsp.CodeActionParams(
                text_document=lsp.TextDocumentIdentifier(uri=uri),
                range=lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0)),
                context=lsp.CodeActionContext(
                    diagnostics=[], only=[lsp.CodeActionKind.SourceFixAll]
                ),
            )
        )
        [action] = result or []
        assert isinstance(action, lsp.CodeAction)
        assert action.kind == "source.fixAll.zerolint"
        assert action.edit is not None and action.edit.changes is not None
        client.change(uri, apply_edit(client.texts[uri], action.edit.changes[uri]))
        await client.diagnostics_for(uri, is_clean)

    session(scenario)


def test_helper_edit_republishes_the_finding_in_the_open_builder(
    workspace: Path, session: Session
) -> None:
    builder = workspace / "pkg" / "builder.py"
    helper = workspace / "pkg" / "utils.py"

    async def scenario(client: Client) -> None:
        b = client.open(builder)
        await client.diagnostics_for(b, is_zl001)
        h = client.open(helper)
        await client.diagnostics_for(h, is_clean)
        client.change(h, CLAMPED_HELPER)  # the helper clamps: the builder is safe
        await client.diagnostics_for(b, is_clean)
        client.change(h, HELPER)  # and back: the finding returns in the builder
        [diag] = await client.diagnostics_for(b, is_zl001)
        assert diag.related_information is not None
        assert diag.related_information[0].location.uri == client.uri(helper)

    session(scenario)


def test_syntax_error_in_the_buffer_is_logged_and_the_server_goes_on(
    workspace: Path, session: Session
) -> None:
    builder = workspace / "pkg" / "builder.py"

    async def scenario(client: Client) -> None:
        uri = client.open(builder)
        await client.diagnostics_for(uri, is_zl001)
        client.change(uri, BUILDER.replace("(lens.unsqueeze(-1)", "(lens.unsqueeze(-1"))
        [diag] = await client.diagnostics_for(uri, lambda ds: [d.code for d in ds] == ["ZL901"])
        assert "syntax error" in diag.message
        log = await client.log_matching("ZL901")
        assert "builder.py" in log and "syntax error" in log
        client.change(uri, BUILDER)
        await client.diagnostics_for(uri, is_zl001)

    session(scenario)


def test_file_outside_the_workspace_is_checked_alone(
    workspace: Path, tmp_path: Path, session: Session
) -> None:
    outside = tmp_path / "elsewhere" / "builder.py"
    outside.parent.mkdir()
    outside.write_text(
        "import deep_gemm\n\n\ndef f(seq_lens, num_sms):\n"
        "    lens = seq_lens // 4\n"
        "    return deep_gemm.get_paged_mqa_logits_metadata(lens, 64, num_sms)\n"
    )

    async def scenario(client: Client) -> None:
        uri = client.open(outside)
        await client.diagnostics_for(uri, is_zl001)
        log = await client.log_matching("outside the workspace")
        assert str(outside) in log

    session(scenario)


def test_a_workspace_opened_through_a_link_holds_files_named_by_their_real_path(
    workspace: Path, tmp_path: Path
) -> None:
    """A folder opened through a symbolic link, and a file by its real path: one tree, as
    `zerolint check` sees it, so the finding through the helper module is there (the file
    was checked by itself, outside the workspace, and had none)."""
    link = tmp_path / "link"
    link.symlink_to(workspace, target_is_directory=True)
    builder = workspace / "pkg" / "builder.py"

    async def scenario(client: Client) -> None:
        uri = client.open(builder)
        diagnostics = await client.diagnostics_for(uri, is_zl001)
        assert any(
            "utils.py" in (r.location.uri) for d in diagnostics for r in d.related_information or ()
        )
        assert not any("outside the workspace" in m for m in client.logs)

    run_session(link, scenario)


def test_a_buffer_that_keeps_its_bom_is_checked_as_the_file(
    workspace: Path, session: Session
) -> None:
    """A client that sends the BOM with the text: it is not code (the file read from disk
    has none), not a syntax error at U+FEFF."""
    builder = workspace / "pkg" / "builder.py"

    async def scenario(client: Client) -> None:
        uri = client.open(builder, "\ufeff" + builder.read_text())
        await client.diagnostics_for(uri, is_zl001)
        assert not any("ZL901" in m for m in client.logs)

    session(scenario)


def test_file_deleted_while_open_keeps_its_buffer_checked(
    workspace: Path, session: Session
) -> None:
    builder = workspace / "pkg" / "builder.py"
    helper = workspace / "pkg" / "utils.py"

    async def scenario(client: Client) -> None:
        b = client.open(builder)
        h = client.open(helper)
        await client.diagnostics_for(b, is_zl001)
        helper.unlink()
        client.watched(helper, lsp.FileChangeType.Deleted)
        log = await client.log_matching("deleted while open")
        assert str(helper) in log
        client.change(h, CLAMPED_HELPER)  # the buffer still counts
        await client.diagnostics_for(b, is_clean)
        builder.unlink()
        client.change(b, BUILDER + "\n")
        await client.log_matching("not on disk")
        client.close(h)  # closed and gone: the builder's path has no helper any more
        await client.diagnostics_for(h, is_clean)

    session(scenario)


def test_files_changed_together_on_disk_are_checked_once(workspace: Path, session: Session) -> None:
    """A checkout creates and changes many files in one notification: the tree is rebuilt
    and re-read once for all of them, and the open file checked once (it was once per
    file: on vLLM, a re-index of the tree for each file a checkout created)."""
    builder = workspace / "pkg" / "builder.py"
    helper = workspace / "pkg" / "utils.py"

    async def scenario(client: Client) -> None:
        uri = client.open(builder)
        await client.diagnostics_for(uri, is_zl001)
        before = len([p for p in client.published if p[1] == uri])
        created = [workspace / "pkg" / f"new_{i}.py" for i in range(4)]
        for path in created:
            path.write_text("X = 1\n")
        helper.write_text(CLAMPED_HELPER)  # not open: the disk's text counts
        client.watched_all(
            [(path, lsp.FileChangeType.Created) for path in created]
            + [(helper, lsp.FileChangeType.Changed)]
        )
        await client.diagnostics_for(uri, is_clean)
        await asyncio.sleep(2)  # time enough for more checks, had there been any
        mine = [p for p in client.published if p[1] == uri]
        assert len(mine) == before + 1, [p[3] for p in mine[before:]]

    session(scenario)


def test_messages_about_unknown_documents_are_logged(workspace: Path, session: Session) -> None:
    builder = workspace / "pkg" / "builder.py"
    ghost = (workspace / "pkg" / "ghost.py").absolute().as_uri()

    async def scenario(client: Client) -> None:
        client.versions[ghost] = 1
        client.change(ghost, "x = 1\n")
        await client.log_matching("didChange for " + ghost)
        client.close(ghost)
        await client.log_matching("didClose for " + ghost)
        client.save(ghost)
        await client.log_matching("didSave for " + ghost)
        diag = lsp.Diagnostic(range=lsp.Range(lsp.Position(0, 0), lsp.Position(0, 1)), message="")
        assert await client.code_actions(ghost, diag) == []
        await client.log_matching("codeAction for " + ghost)
        # Still up and working.
        uri = client.open(builder)
        await client.diagnostics_for(uri, is_zl001)

    session(scenario)


def test_configuration_change_is_reloaded(workspace: Path, session: Session) -> None:
    builder = workspace / "pkg" / "builder.py"
    config = workspace / "pyproject.toml"

    async def scenario(client: Client) -> None:
        uri = client.open(builder)
        await client.diagnostics_for(uri, is_zl001)
        assert any(r.method == "workspace/didChangeWatchedFiles" for r in client.registrations)
        config.write_text(PYPROJECT + 'ignore = ["ZL001"]\n')
        client.watched(config, lsp.FileChangeType.Changed)
        await client.diagnostics_for(uri, is_clean)
        await client.log_matching("configuration reloaded")
        # Saving the pyproject.toml in the editor reloads it too.
        config.write_text(PYPROJECT)
        c = client.open(config, config.read_text())
        client.save(c)
        await client.diagnostics_for(uri, is_zl001)

    session(scenario)


RULE_FILE = Path(__file__).resolve().parent / "rules" / "ZT002.toml"
DECODE = """\
import fakekern


def decode(q, seq_lens, n, m, buf):
    buf[:n] = seq_lens
    buf[n:m] = 0
    return fakekern.decode_attention(q, buf[:m])
"""


def is_acme(diagnostics: list[lsp.Diagnostic]) -> bool:
    return [d.code for d in diagnostics] == ["ACME001"]


@pytest.mark.parametrize("how", ["watched", "saved"])
def test_a_change_of_a_rule_file_the_configuration_names_is_reloaded(
    tmp_path: Path, how: str
) -> None:
    """A rule file of `rule-files` is part of the configuration: changed on disk (the
    server asks the client to watch it) or saved in the editor, it is read again, as a
    pyproject.toml is; the open files are checked with the new rule."""
    root = tmp_path / "ws"
    (root / "lint").mkdir(parents=True)
    rule = RULE_FILE.read_text().replace('code = "ZT002"', 'code = "ACME001"')
    acme = root / "lint" / "ACME.toml"
    acme.write_text(rule)
    (root / "pyproject.toml").write_text('[tool.zerolint]\nrule-files = ["lint/ACME.toml"]\n')
    (root / "dec.py").write_text(DECODE)

    async def scenario(client: Client) -> None:
        uri = client.open(root / "dec.py")
        await client.diagnostics_for(uri, is_acme)

        def watched() -> list[str]:  # the client holds the options as the JSON it was sent
            return [
                w["globPattern"]
                for r in client.registrations
                if r.method == "workspace/didChangeWatchedFiles"
                for w in r.register_options["watchers"]
            ]

        await client.wait_for(lambda: "**/ACME.toml" in watched(), 10)
        acme.write_text(rule.replace('function = "decode_attention"', 'function = "other"'))
        if how == "watched":
            client.watched(acme, lsp.FileChangeType.Changed)
        else:
            client.save(client.open(acme, acme.read_text()))
        await client.diagnostics_for(uri, is_clean)
        await client.log_matching("configuration reloaded")

    run_session(root, scenario)


def test_bad_configuration_is_logged_and_defaults_apply(workspace: Path, session: Session) -> None:
    builder = workspace / "pkg" / "builder.py"
    (workspace / "pyproject.toml").write_text("[tool.zerolint]\nselect = 3\n")

    async def scenario(client: Client) -> None:
        uri = client.open(builder)
        helper = client.open(workspace / "pkg" / "utils.py")
        await client.diagnostics_for(uri, is_zl001)
        log = await client.log_matching("using the default settings")
        assert "pyproject.toml" in log and "select" in log
        top = workspace / "top.py"
        top.write_text("x = 1\n")
        client.open(top)
        for _ in range(2):
            client.change(uri, builder.read_text() + "\n")
            client.change(helper, (workspace / "pkg" / "utils.py").read_text() + "\n")
            await asyncio.sleep(0.2)
        await client.diagnostics_for(uri, is_zl001)
        # Once, not for every file and edit it applies to.
        assert sum("using the default settings" in m for m in client.logs) == 1, client.logs

    session(scenario)


def test_excluded_file_gets_no_diagnostics(workspace: Path, session: Session) -> None:
    builder = workspace / "pkg" / "builder.py"
    (workspace / "pyproject.toml").write_text(PYPROJECT + 'exclude = ["pkg/builder.py"]\n')

    async def scenario(client: Client) -> None:
        uri = client.open(builder)
        await client.diagnostics_for(uri, is_clean)
        await client.log_matching("excluded by the configuration")

    session(scenario)


def test_per_file_ignores_apply(workspace: Path, session: Session) -> None:
    builder = workspace / "pkg" / "builder.py"
    helper = workspace / "pkg" / "utils.py"
    config = PYPROJECT + '[tool.zerolint.per-file-ignores]\n"pkg/builder.py" = ["ZL001"]\n'
    (workspace / "pyproject.toml").write_text(config)
    # The same finding in another file of the tree is still reported.
    (workspace / "pkg" / "other.py").write_text(BUILDER)

    async def scenario(client: Client) -> None:
        uri = client.open(builder)
        other = client.open(workspace / "pkg" / "other.py")
        await client.diagnostics_for(other, is_zl001)
        await client.diagnostics_for(uri, is_clean)
        assert helper.exists()

    session(scenario)


def test_server_without_pygls_says_what_to_install(tmp_path: Path) -> None:
    import subprocess
    import sys

    # A Python that cannot import pygls: the package path without site-packages.
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    run = subprocess.run(
        [sys.executable, "-S", "-m", "zerolint", "server"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    if "No module named" in run.stderr and "libcst" not in run.stderr:
        pytest.fail(run.stderr)
    assert run.returncode == 2
    assert "server extra (pip install '/path/to/zerolint[server]')" in run.stderr


# ---------------------------------------------------------------- incremental edits

MIDDLE = """\
from .utils import compressed_lens


def lens_for(seq_lens, ratio):
    return compressed_lens(seq_lens, ratio)
"""
VIA_MIDDLE = """\
import deep_gemm

from .middle import lens_for


def build_schedule(seq_lens, compress_ratio, num_sms):
    lens = lens_for(seq_lens, compress_ratio)
    return deep_gemm.get_paged_mqa_logits_metadata(lens.unsqueeze(-1), 64, num_sms)
"""


async def published(client: Client, uri: str) -> list[lsp.Diagnostic]:
    """The diagnostics published for the buffer's current version."""
    version = client.versions[uri]
    await client.wait_for(lambda: any(u == uri and v == version for _, u, v, _ in client.published))
    return next(d for _, u, v, d in reversed(client.published) if u == uri and v == version)


def steps_in(diagnostic: lsp.Diagnostic, path: Path) -> list[int]:
    """The lines (1-based) of the path steps in ``path``."""
    return [
        r.location.range.start.line + 1
        for r in diagnostic.related_information or []
        if r.location.uri == path.absolute().as_uri()
    ]


def test_edit_off_the_path_keeps_the_diagnostics_identical(
    workspace: Path, session: Session
) -> None:
    builder = workspace / "pkg" / "builder.py"
    helper = workspace / "pkg" / "utils.py"

    async def scenario(client: Client) -> None:
        b = client.open(builder)
        before = await client.diagnostics_for(b, is_zl001)
        # Below the sink call, in the file with the finding: republished, the same.
        client.change(b, BUILDER + "\n\ndef unrelated(x):\n    return x + 1\n")
        assert await published(client, b) == before
        # A function of the helper module that no path goes through.
        h = client.open(helper)
        await client.diagnostics_for(h, is_clean)
        client.change(h, HELPER + "\n\ndef padded(n):\n    return n + 8\n")
        assert await published(client, h) == []
        assert client.diagnostics[b] == before

    session(scenario)


def test_edit_of_a_module_the_path_passes_through_updates_them(
    workspace: Path, session: Session
) -> None:
    middle = workspace / "pkg" / "middle.py"
    middle.write_text(MIDDLE)
    builder = workspace / "pkg" / "builder.py"
    builder.write_text(VIA_MIDDLE)

    async def scenario(client: Client) -> None:
        b = client.open(builder)
        [diag] = await client.diagnostics_for(b, is_zl001)
        assert steps_in(diag, middle) == [5]  # return compressed_lens(seq_lens, ratio)
        m = client.open(middle)
        await client.diagnostics_for(m, is_clean)
        # Two lines above the step: the builder's finding shows the step where it now is.
        moved = MIDDLE.replace("    return", "    # the ratio is never 0\n    #\n    return")
        client.change(m, moved)
        await client.diagnostics_for(b, lambda ds: is_zl001(ds) and steps_in(ds[0], middle) == [7])
        # The module clamps what it passes on: the builder is clean.
        client.change(m, moved.replace("ratio)\n", "ratio).clamp(min=1)\n"))
        await client.diagnostics_for(b, is_clean)

    session(scenario)


def test_after_edits_the_diagnostics_equal_a_fresh_check(
    workspace: Path, session: Session, tmp_path: Path
) -> None:
    """A sequence of edits of three open files; then `zerolint check` of the same contents
    (a fresh process, no cache) reports, file by file, what the server shows."""
    import json
    import shutil
    import subprocess
    import sys

    middle = workspace / "pkg" / "middle.py"
    middle.write_text(MIDDLE)
    builder = workspace / "pkg" / "builder.py"
    builder.write_text(
        BUILDER.replace("from .utils", "from .middle import lens_for\nfrom .utils")
        + "\n\ndef build_via_middle(seq_lens, compress_ratio, num_sms):\n"
        "    lens = lens_for(seq_lens, compress_ratio)\n"
        "    return deep_gemm.get_paged_mqa_logits_metadata(lens.unsqueeze(-1), 64, num_sms)\n"
        # A path through an object of a class of a module no sink names: followed only
        # when that module is parsed, which a run must decide as a cold check does.
        "\n\ndef build_planned(seq_lens, num_sms):\n"
        "    from .plan import Planner\n\n"
        "    lens = Planner(4).lens(seq_lens)\n"
        "    return deep_gemm.get_paged_mqa_logits_metadata(lens, 64, num_sms)\n"
    )
    (workspace / "pkg" / "plan.py").write_text(
        "from .utils import compressed_lens\n\n\n"
        "class Planner:\n"
        "    def __init__(self, ratio):\n        self.ratio = ratio\n\n"
        "    def lens(self, seq_lens):\n        return compressed_lens(seq_lens, self.ratio)\n"
    )
    helper = workspace / "pkg" / "utils.py"
    files = [builder, helper, middle]

    def fresh_check(texts: dict[Path, str]) -> dict[str, list[tuple]]:
        copy = tmp_path / "copy"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(workspace, copy)
        for path, text in texts.items():
            (copy / path.relative_to(workspace)).write_text(text)
        run = subprocess.run(
            [sys.executable, "-m", "zerolint", "check", "--format", "json", "--no-cache", "."],
            capture_output=True,
            text=True,
            cwd=copy,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
            timeout=120,
            check=False,
        )
        assert run.returncode in (0, 1), run.stderr
        out: dict[str, list[tuple]] = {}
        for f in json.loads(run.stdout)["findings"]:
            steps = [(s["path"], s["line"], s["col"]) for flow in f["flows"] for s in flow["steps"]]
            key = (f["code"], f["line"], f["col"], f["end_line"], f["end_col"], f["message"], steps)
            out.setdefault(f["path"], []).append(key)
        return out

    def shown(client: Client) -> dict[str, list[tuple]]:
        out: dict[str, list[tuple]] = {}
        for path in files:
            for d in client.diagnostics.get(client.uri(path), []):
                steps = [
                    (
                        Path(r.location.uri.removeprefix("file://"))
                        .relative_to(workspace)
                        .as_posix(),
                        r.location.range.start.line + 1,
                        r.location.range.start.character + 1,
                    )
                    for r in d.related_information or []
                ]
                start, end = d.range.start, d.range.end
                key = (
                    d.code,
                    start.line + 1,
                    start.character + 1,
                    end.line + 1,
                    end.character + 1,
                    d.message.split("\n")[0],
                    steps,
                )
                out.setdefault(path.relative_to(workspace).as_posix(), []).append(key)
        return out

    async def scenario(client: Client) -> None:
        uris = {path: client.open(path) for path in files}
        for uri in uris.values():
            await published(client, uri)
        texts = {path: path.read_text() for path in files}
        edits = [
            (middle, lambda t: t.replace("    return", "    # note\n    return")),
            (builder, lambda t: t.replace("import deep_gemm\n", "import deep_gemm\n# moved\n")),
            (
                helper,
                lambda t: t.replace(
                    "seq_lens // compress_ratio", "(seq_lens // compress_ratio).clamp(min=1)"
                ),
            ),
            (middle, lambda t: t + "\n\ndef other(n):\n    return n // 2\n"),
            (
                helper,
                lambda t: t.replace(
                    "(seq_lens // compress_ratio).clamp(min=1)", "seq_lens // compress_ratio"
                ),
            ),
            (
                builder,
                lambda t: t.replace("    lens = lens_for", "    # via middle\n    lens = lens_for"),
            ),
        ]
        for path, edit in edits:
            texts[path] = edit(texts[path])
            client.change(uris[path], texts[path])
            expected = fresh_check(texts)
            await published(client, uris[path])
            # The other open files' diagnostics are republished right after, when changed.
            with contextlib.suppress(AssertionError):
                await client.wait_for(lambda want=expected: shown(client) == want, 10)
            assert shown(client) == expected, path.name

    session(scenario)
