"""A small real LSP client for the server tests and the latency benchmark.

It starts ``python -m zerolint server`` as a child process and talks LSP to it over the
child's stdin/stdout with pygls' client: what an editor does, with no mock in between. It
records every ``publishDiagnostics`` and ``logMessage`` the server sends, and lets a test
wait for the diagnostics of one document to satisfy a condition.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

Diagnostics = list[lsp.Diagnostic]


class Client:
    """One editor session against one real server process."""

    def __init__(
        self,
        root: Path,
        *server_args: str,
        command: list[str] | None = None,
        position_encodings: list[str] | None = None,
    ) -> None:
        self.root = root
        # The position encodings offered (`general.positionEncodings`; none: UTF-16 only).
        self.position_encodings = position_encodings
        # Default: this Python's zerolint, the one this process imports (its folder first
        # on the server's PYTHONPATH: `PYTHONPATH=.` would name the server's own folder,
        # the workspace, and an editable install's tree would be run instead); another
        # server (a peer in a benchmark) by command.
        self.env: dict[str, str] | None = None
        if command is None:
            import zerolint

            tree = str(Path(zerolint.__file__).resolve().parent.parent)
            paths = [tree, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
            self.env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
        self.command = command or [sys.executable, "-m", "zerolint", "server"]
        self.server_args = server_args
        self.lsp = LanguageClient("zerolint-tests", "1")
        self.diagnostics: dict[str, Diagnostics] = {}
        self.published: list[tuple[float, str, int | None, Diagnostics]] = []
        self.logs: list[str] = []
        self.versions: dict[str, int] = {}
        self.texts: dict[str, str] = {}
        self.registrations: list[lsp.Registration] = []
        self.stderr = b""
        self.initialize_result: lsp.InitializeResult | None = None
        self._changed = asyncio.Event()

        @self.lsp.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_diagnostics(params: lsp.PublishDiagnosticsParams) -> None:
            self.diagnostics[params.uri] = list(params.diagnostics)
            self.published.append(
                (time.perf_counter(), params.uri, params.version, list(params.diagnostics))
            )
            self._changed.set()

        @self.lsp.feature(lsp.WINDOW_LOG_MESSAGE)
        def on_log(params: lsp.LogMessageParams) -> None:
            self.logs.append(params.message)
            self._changed.set()

        @self.lsp.feature(lsp.CLIENT_REGISTER_CAPABILITY)
        def on_register(params: lsp.RegistrationParams) -> None:
            self.registrations.extend(params.registrations)
            self._changed.set()

    # ------------------------------------------------------------------ session

    async def start(self, *, answer_timeout: float | None = None) -> lsp.InitializeResult | None:
        """Start the server and initialize the session. With ``answer_timeout``, go on
        without the initialize result after that many seconds (pygls cannot read every
        server's capabilities: ruff's notebook selector fails its validation)."""
        await self.launch()
        return await self.initialize(answer_timeout=answer_timeout)

    async def launch(self) -> None:
        """Start the server process (not yet initialized)."""
        await self.lsp.start_io(*self.command, *self.server_args, cwd=str(self.root), env=self.env)
        # Read the server's stderr as it comes: a full pipe would stop the server.
        self._drain = asyncio.ensure_future(self._read_stderr())

    async def initialize(
        self, *, answer_timeout: float | None = None
    ) -> lsp.InitializeResult | None:
        """``initialize`` and ``initialized`` the launched server (``start``)."""
        answer = self.lsp.initialize_async(
            lsp.InitializeParams(
                process_id=None,
                root_uri=self.root.as_uri(),
                workspace_folders=[lsp.WorkspaceFolder(uri=self.root.as_uri(), name="ws")],
                capabilities=lsp.ClientCapabilities(
                    general=lsp.GeneralClientCapabilities(
                        position_encodings=self.position_encodings
                    )
                    if self.position_encodings
                    else None,
                    workspace=lsp.WorkspaceClientCapabilities(
                        did_change_watched_files=lsp.DidChangeWatchedFilesClientCapabilities(
                            dynamic_registration=True
                        )
                    ),
                    text_document=lsp.TextDocumentClientCapabilities(
                        publish_diagnostics=lsp.PublishDiagnosticsClientCapabilities(
                            related_information=True, version_support=True
                        )
                    ),
                ),
            )
        )
        result = None
        try:
            result = await asyncio.wait_for(answer, answer_timeout)
        except asyncio.TimeoutError:
            if answer_timeout is None:
                raise
        self.lsp.initialized(lsp.InitializedParams())
        self.initialize_result = result
        return result

    async def stop(self) -> int | None:
        """shutdown, exit, and the server's exit status."""
        await self.lsp.shutdown_async(None)
        self.lsp.exit(None)
        process = self.lsp._server
        code = None
        if process is not None:
            code = await asyncio.wait_for(process.wait(), 30)
            await asyncio.wait_for(self._drain, 30)
        await self.lsp.stop()
        return code

    async def _read_stderr(self) -> None:
        process = self.lsp._server
        stream = process.stderr if process is not None else None
        while stream is not None:
            chunk = await stream.read(65536)
            if not chunk:
                return
            self.stderr += chunk

    @property
    def pid(self) -> int | None:
        process = self.lsp._server
        return process.pid if process is not None else None

    async def kill(self) -> None:
        process = self.lsp._server
        if process is not None and process.returncode is None:
            process.kill()
            await process.wait()
        await self.lsp.stop()

    # ------------------------------------------------------------------ documents

    def uri(self, path: Path) -> str:
        return path.absolute().as_uri()

    def open(self, path: Path, text: str | None = None) -> str:
        uri = self.uri(path)
        text = path.read_text() if text is None else text
        self.versions[uri] = 1
        self.texts[uri] = text
        self.lsp.text_document_did_open(
            lsp.DidOpenTextDocumentParams(
                lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
            )
        )
        return uri

    def change(self, uri: str, text: str) -> None:
        """Replace the whole buffer (as a client with full sync does)."""
        self.versions[uri] = self.versions.get(uri, 0) + 1
        self.texts[uri] = text
        self.lsp.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(
                    uri=uri, version=self.versions[uri]
                ),
                content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )

    def change_range(
        self, uri: str, start: tuple[int, int], end: tuple[int, int], text: str
    ) -> None:
        """Replace the text from ``start`` to ``end`` (line, character; 0-based) with
        ``text``, as a client with incremental sync does."""
        self.versions[uri] = self.versions.get(uri, 0) + 1
        where = lsp.Range(lsp.Position(*start), lsp.Position(*end))
        self.lsp.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(
                    uri=uri, version=self.versions[uri]
                ),
                content_changes=[lsp.TextDocumentContentChangePartial(range=where, text=text)],
            )
        )

    def close(self, uri: str) -> None:
        self.lsp.text_document_did_close(
            lsp.DidCloseTextDocumentParams(lsp.TextDocumentIdentifier(uri=uri))
        )

    def save(self, uri: str) -> None:
        self.lsp.text_document_did_save(
            lsp.DidSaveTextDocumentParams(lsp.TextDocumentIdentifier(uri=uri))
        )

    def watched(self, path: Path, kind: lsp.FileChangeType) -> None:
        self.watched_all([(path, kind)])

    def watched_all(self, changes: list[tuple[Path, lsp.FileChangeType]]) -> None:
        """One notification of several files changed on disk, as a checkout sends it."""
        events = [lsp.FileEvent(uri=self.uri(path), type=kind) for path, kind in changes]
        self.lsp.workspace_did_change_watched_files(lsp.DidChangeWatchedFilesParams(events))

    async def code_actions(self, uri: str, diagnostic: lsp.Diagnostic) -> list[lsp.CodeAction]:
        result = await self.lsp.text_document_code_action_async(
            lsp.CodeActionParams(
                text_document=lsp.TextDocumentIdentifier(uri=uri),
                range=diagnostic.range,
                context=lsp.CodeActionContext(diagnostics=[diagnostic]),
            )
        )
        return [a for a in result or [] if isinstance(a, lsp.CodeAction)]

    # ------------------------------------------------------------------ waiting

    async def wait_for(self, condition: Callable[[], bool], timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(
                    f"timed out; diagnostics={self.diagnostics} logs={self.logs[-10:]}"
                )
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), left)
            except asyncio.TimeoutError:
                continue

    async def diagnostics_for(
        self, uri: str, condition: Callable[[Diagnostics], bool], timeout: float = 60
    ) -> Diagnostics:
        """Wait until the last diagnostics published for ``uri`` satisfy ``condition``."""
        await self.wait_for(
            lambda: uri in self.diagnostics and condition(self.diagnostics[uri]), timeout
        )
        return self.diagnostics[uri]

    async def log_matching(self, needle: str, timeout: float = 60) -> str:
        await self.wait_for(lambda: any(needle in m for m in self.logs), timeout)
        return next(m for m in self.logs if needle in m)


def apply_edit(text: str, edits: list[lsp.TextEdit]) -> str:
    """``text`` with the (non-overlapping) ``edits`` applied, as an editor applies them:
    lines end at ``\\n``, ``\\r\\n`` or ``\\r`` (not at form feeds or U+2028), and
    characters are counted in UTF-16 code units, the protocol's default."""
    lines = re.split(r"(?<=\n)|(?<=\r)(?!\n)", text)
    if lines and lines[-1] == "":
        lines.pop()
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def offset(p: lsp.Position) -> int:
        if p.line >= len(lines):
            return len(text)
        units = lines[p.line].encode("utf-16-le")[: 2 * p.character].decode("utf-16-le")
        return offsets[p.line] + len(units)

    out = text
    for edit in sorted(edits, key=lambda e: offset(e.range.start), reverse=True):
        out = out[: offset(edit.range.start)] + edit.new_text + out[offset(edit.range.end) :]
    return out
