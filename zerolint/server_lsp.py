"""The language server itself: LSP over stdio on pygls, findings as diagnostics.

Each finding becomes one diagnostic at the sink call: the message carries the witness, each
step of each path is a ``relatedInformation`` location (the editor jumps along the path),
and the rule code links to its documentation. Code actions apply the rule's fix (the edit
``zerolint check --fix`` makes) or add the suppression comment. Analysis runs in one worker
thread on the warm index of ``zerolint.server_index``; the event loop stays free to read
the next edit, and edits that come in quick succession are analysed once (debounced).

Bad input never stops the server: a buffer that does not parse, a file outside the
workspace, a file deleted while open or a message about a document that is not open is
reported with ``window/logMessage`` and the server goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import gc
import logging
import os
import re
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from lsprotocol import types as lsp
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcMethodNotFound,
    JsonRpcServerNotInitialized,
)
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method
from pygls.uris import from_fs_path, to_fs_path
from pygls.workspace import TextDocument

from zerolint import __version__
from zerolint.config import CONFIG_NAMES
from zerolint.discovery import PY_SUFFIXES, SKIP_DIRS
from zerolint.formats import step_code, step_note
from zerolint.model import Diagnostic, Finding
from zerolint.project import BadInput, read_source
from zerolint.server_index import (
    FileResult,
    WorkspaceIndex,
    absolute,
    fix_all,
    fix_edit,
    suppression_edit,
)

SOURCE = "zerolint"
# Once indexed, the server runs with the cyclic collector off. The garbage of analyses is
# collected once the server has been idle this long (a collection takes 60 to 150 ms on a
# large tree, which an edit arriving meanwhile would wait for), or at the latest after this
# many analyses without such a pause (memory stays bounded: that one may delay an edit).
COLLECT_WHEN_IDLE_S = 0.5
COLLECT_AT_MOST_EVERY = 4
# The index is frozen out of the collector's sight, so a parse frozen with it that an edit
# replaced (or that went with a dropped tree) stays in memory (a few MB a large module).
# Once the replaced parses' texts add up to this many characters, an idle collection
# unfreezes everything first (0.15 s on vLLM 0.33.0) and freezes what is alive after it.
# The count is an upper bound: the edited module's new parse shares the statements the
# edit did not touch, so a module this large alone makes every idle pause after its edits
# unfreeze.
THAW_AFTER_CHARS = 256 * 1024
FIX_ALL = f"{lsp.CodeActionKind.SourceFixAll.value}.zerolint"
LEVELS = {
    "error": lsp.MessageType.Error,
    "warning": lsp.MessageType.Warning,
    "info": lsp.MessageType.Info,
}


def is_python(path: Path) -> bool:
    return path.suffix in PY_SUFFIXES


# What git reads to know what it ignores (the global excludes file, outside the workspace,
# is not watched), which discovery leaves out unless `respect-gitignore = false`.
IGNORE_FILES = (".gitignore", ".git/info/exclude")


def ignored_by(path: Path) -> Path | None:
    """The folder whose files ``path`` tells git to ignore, if it is such a file: a
    `.gitignore` (its folder's) or a repository's `.git/info/exclude` (its work tree's)."""
    if path.name == ".gitignore":
        return path.parent
    if path.parts[-3:] == (".git", "info", "exclude"):
        return path.parents[2]
    return None


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def lsp_lines(text: str) -> list[str]:
    """``text``'s lines, ends kept, as LSP and Python count them: broken at ``\\n``,
    ``\\r\\n`` and ``\\r`` only. ``str.splitlines`` also breaks at form feeds, U+2028 and
    other separators, and positions counted by it land on the wrong line after one."""
    return _LINE.findall(text)


class Document(TextDocument):
    """pygls' document, with its lines (which incremental changes are applied by) counted
    as the client counts them."""

    @property
    def lines(self) -> tuple[str, ...]:
        return tuple(lsp_lines(self.source))


class Protocol(LanguageServerProtocol):
    """pygls' protocol, except that a change, save or close of a document that was never
    opened is logged and ignored instead of failing inside pygls, and documents are
    ``Document``s."""

    def structure_message(self, data: dict[str, Any]) -> Any:
        """pygls' reading of a message, except that a request whose parameters it cannot
        read is answered with the error (pygls logs it and answers nothing: the client
        would wait for ever)."""
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if isinstance(data, dict) and "id" in data and "method" in data:
                self._send_response(data["id"], None, exc.to_response_error())
            raise

    # Whether an `initialize` request was taken (set as its handler starts): pygls keeps
    # no public record of it.
    initialize_taken = False

    def handle_message(self, message: Any) -> None:
        """pygls' dispatch, except that, as the protocol says, a request after ``shutdown``
        is answered with ``InvalidRequest`` (pygls answers nothing), one before
        ``initialize`` with ``ServerNotInitialized`` (pygls runs it without a workspace),
        a notification then being dropped (but ``exit``), and a second ``initialize`` with
        ``InvalidRequest`` (pygls initialises again: a new workspace, without the open
        documents)."""
        method = getattr(message, "method", None)
        request = method is not None and hasattr(message, "id")
        if self._shutdown and method != lsp.EXIT and request:
            error = JsonRpcInvalidRequest(f"{method} after shutdown").to_response_error()
            self._send_response(message.id, None, error)
            return
        if method == lsp.INITIALIZE and self.initialize_taken:
            if request:
                error = JsonRpcInvalidRequest("initialize may be sent only once")
                self._send_response(message.id, None, error.to_response_error())
            return
        if not self.initialize_taken and method not in (None, lsp.INITIALIZE, lsp.EXIT):
            if request:
                error = JsonRpcServerNotInitialized(f"{method} before initialize")
                self._send_response(message.id, None, error.to_response_error())
            return
        super().handle_message(message)

    @lsp_method(lsp.INITIALIZE)
    def lsp_initialize(self, params: lsp.InitializeParams):
        # Taken once its parameters were read (a request pygls cannot read is answered
        # InvalidParams by `structure_message`, and initialize may be sent again).
        self.initialize_taken = True
        return (yield from super().lsp_initialize(params))

    @lsp_method(lsp.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: lsp.DidOpenTextDocumentParams):
        workspace = self.workspace
        codec = workspace.position_codec

        def create(uri: str, source=None, version=None, language_id=None) -> Document:
            return Document(
                uri,
                source=source,
                version=version,
                language_id=language_id,
                sync_kind=lsp.TextDocumentSyncKind.Incremental,
                position_codec=codec,
            )

        workspace._create_text_document = create  # type: ignore[method-assign]
        yield from super().lsp_text_document__did_open(params)

    def _unknown(self, method: str, uri: str) -> bool:
        if unquote(uri) in self.workspace.text_documents:
            return False
        server = self._server
        if isinstance(server, ZerolintServer):
            server.log("warning", f"zerolint: {method} for {uri}, which is not open; ignored")
        return True

    @lsp_method(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: lsp.DidChangeTextDocumentParams):
        if self._unknown("textDocument/didChange", params.text_document.uri):
            return
        yield from super().lsp_text_document__did_change(params)

    @lsp_method(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: lsp.DidCloseTextDocumentParams):
        if self._unknown("textDocument/didClose", params.text_document.uri):
            return
        yield from super().lsp_text_document__did_close(params)


class ZerolintServer(LanguageServer):
    """zerolint's language server (one per editor session)."""

    def __init__(self, debounce: float = 0.05) -> None:
        super().__init__(
            SOURCE,
            __version__,
            text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental,
            protocol_cls=Protocol,
        )
        self.debounce = debounce
        self.index: WorkspaceIndex | None = None
        # One thread owns the index: analyses never overlap and never block the loop.
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="zerolint-index")
        # Code actions' fixes (LibCST) run on a thread of their own; each file's are kept
        # for the results (and settings) they were made from.
        self.fixer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="zerolint-fix")
        self.fixes: dict[Path, tuple[FileResult, Any, dict[Any, lsp.WorkspaceEdit | None]]] = {}
        # The URI each open file was opened under (diagnostics are published under it).
        self.uris: dict[Path, str] = {}
        self.shut_down = False
        self.off_disk: set[Path] = set()  # open buffers said to be on no file on disk
        self.sleeping: dict[str, asyncio.Task] = {}
        # Documents being analysed, and those edited meanwhile: however fast the typing,
        # one analysis per document is in flight and at most one more is owed.
        self.running: set[str] = set()
        self.dirty: set[str] = set()
        self.shown: dict[Path, tuple[FileResult, int | None, Any]] = {}
        self.published: dict[Path, tuple] = {}
        self.loop: asyncio.AbstractEventLoop | None = None
        # When each document was last edited (the event loop's clock): an edit after a
        # pause is analysed at once, one within the debounce of the last waits for more.
        self.last_edit: dict[str, float] = {}
        # Analyses since the last collection, the collection waiting for a pause, and the
        # analyses in flight (an edit's, a close's, a reload's).
        self.uncollected = 0
        self.collecting: asyncio.TimerHandle | None = None
        self.analysing = 0
        self.refreeze = False  # trees were rebuilt: freeze them after the next collection
        # Whether the client lets us register watchers, and the names of the rule files
        # (the configurations' `rule-files`) watched so far.
        self.can_watch = False
        self.watched_rule_names: set[str] = set()

    # ------------------------------------------------------------------ logging

    def doc_path(self, uri: str) -> Path | None:
        """A document's path, spelled as the workspace folder that holds it spells it: a
        folder opened through a symbolic link, and a file by its real path (or the other
        way round), are one tree, as ``zerolint check`` sees it."""
        path = path_of(uri)
        if path is None or self.index is None:
            return path
        return self.index.spelled(path)

    def log(self, level: str, message: str) -> None:
        """A ``window/logMessage`` (from any thread: sent from the event loop)."""
        logging.getLogger("zerolint.server").log(
            logging.ERROR if level == "error" else logging.INFO, message
        )
        params = lsp.LogMessageParams(type=LEVELS.get(level, lsp.MessageType.Info), message=message)
        if self.loop is not None and not self._in_loop():
            self.loop.call_soon_threadsafe(self.window_log_message, params)
        else:
            self.window_log_message(params)

    def _in_loop(self) -> bool:
        try:
            return asyncio.get_running_loop() is self.loop
        except RuntimeError:
            return False

    def report_server_error(self, error: Exception, source: Any) -> None:
        # Requests answer with their error; everything else is logged, never shown as a popup.
        if isinstance(error, JsonRpcMethodNotFound):  # answered so; a client's probe, not ours
            self.log("info", f"zerolint: {error}")
            return
        if isinstance(error, JsonRpcInvalidParams):  # answered so (Protocol.structure_message)
            self.log("warning", f"zerolint: a message's parameters could not be read: {error}")
            return
        self.log("error", f"zerolint: internal error: {type(error).__name__}: {error}")

    # ------------------------------------------------------------------ documents

    def document(self, uri: str) -> TextDocument | None:
        """The open document ``uri`` names (pygls keys them by the URI percent-decoded)."""
        return self.workspace.text_documents.get(unquote(uri))

    def open_uris(self) -> list[str]:
        """The URIs the open documents were opened under. pygls' keys are decoded once: a
        key made a path is decoded twice (`a%252C.py`, the file `a%2C.py`, as `a,.py`)."""
        return [doc.uri for doc in self.workspace.text_documents.values()]

    def open_documents(self) -> dict[Path, tuple[str, int | None]]:
        out = {}
        for doc in list(self.workspace.text_documents.values()):
            path = self.doc_path(doc.uri)
            if path is not None and is_python(path):
                out[path] = (doc.source, doc.version)
        return out

    def roots(self) -> list[Path]:
        """The workspace folders (or the root the client gave), as the index checks them."""
        folders = [path_of(f.uri) for f in self.workspace.folders.values()]
        roots = [f for f in folders if f is not None]
        if not roots and self.workspace.root_path:
            roots = [Path(self.workspace.root_path)]
        return roots

    def edited(self, uri: str) -> None:
        """An edit of ``uri``: debounced on both edges. The first edit after a pause (no
        edit of it within the debounce, and none waiting or being analysed) is analysed at
        once; edits that follow within the debounce wait until the typing stops, and edits
        made while an analysis runs are analysed once after it."""
        now = asyncio.get_running_loop().time()
        last = self.last_edit.get(uri)
        self.last_edit[uri] = now
        quiet = last is None or now - last >= self.debounce
        busy = uri in self.sleeping or uri in self.running
        self.schedule(uri, 0 if quiet and not busy else self.debounce)

    def schedule(self, uri: str, delay: float) -> None:
        """Analyse ``uri`` after ``delay`` seconds unless another edit comes first."""
        waiting = self.sleeping.pop(uri, None)
        if waiting is not None:
            waiting.cancel()
        self.sleeping[uri] = asyncio.ensure_future(self._after(uri, delay))

    async def _after(self, uri: str, delay: float) -> None:
        try:
            if delay > 0:
                await asyncio.sleep(delay)
        except asyncio.CancelledError:
            return
        if self.sleeping.get(uri) is asyncio.current_task():
            del self.sleeping[uri]
        if uri in self.running:
            self.dirty.add(uri)  # checked again once the analysis in flight is done
            return
        self.running.add(uri)
        try:
            while True:
                self.dirty.discard(uri)
                await self.analyse(uri)
                if uri not in self.dirty:
                    break
        finally:
            self.running.discard(uri)

    async def analyse(self, uri: str, *, closed: bool = False) -> None:
        """Bring ``uri``'s results up to date, and republish every open file whose findings
        changed with it (a helper edited here, the sink in another open file)."""
        path = self.doc_path(uri)
        if path is None:
            self.log("info", f"zerolint: {uri} is not a file on disk; not checked")
            return
        if not is_python(path):
            return
        doc = None if closed else self.document(uri)
        text = doc.source if doc is not None else None
        if doc is not None and not path.exists():
            if path not in self.off_disk:  # said once, not at every edit
                self.off_disk.add(path)
                self.log(
                    "warning",
                    f"zerolint: {path} is not on disk (deleted or not saved yet); "
                    "checking the editor's buffer",
                )
        else:
            self.off_disk.discard(path)
        opened = self.open_documents()
        loop = asyncio.get_running_loop()
        self.analysing += 1
        try:
            try:
                results = await loop.run_in_executor(
                    self.worker, self._analyse_in_worker, path, text, opened
                )
            except Exception as exc:  # noqa: BLE001 - the server stays up whatever happens
                self.log("error", f"zerolint: {path}: internal error: {type(exc).__name__}: {exc}")
                return
            if closed:
                self.publish(path, FileResult(), None, None)
            self.publish_all(results, opened, path)
        finally:
            self.analysing -= 1
            self.collect_later()  # a failed analysis leaves garbage too

    def collect_later(self) -> None:
        """After an analysis: free the analyses' garbage (they run with the collector off)
        once the server is idle, or now if ``COLLECT_AT_MOST_EVERY`` analyses went by
        without a pause."""
        self.uncollected += 1
        if self.uncollected >= COLLECT_AT_MOST_EVERY:
            self._collect(force=True)
        else:
            self._collect_when_idle()

    def _collect_when_idle(self) -> None:
        if self.collecting is not None:
            self.collecting.cancel()
        loop = asyncio.get_running_loop()
        self.collecting = loop.call_later(COLLECT_WHEN_IDLE_S, self._collect)

    def _collect(self, *, force: bool = False) -> None:
        """The idle timer's end (or a forced collection): an edit waiting for its analysis,
        or any analysis in flight, puts the collection off for another idle period."""
        if self.collecting is not None:
            self.collecting.cancel()
            self.collecting = None
        if not force and (self.analysing or self.running or self.sleeping or self.dirty):
            self._collect_when_idle()
            return
        self.uncollected = 0
        with contextlib.suppress(RuntimeError):  # the worker is gone: shutting down
            self.worker.submit(self._collect_in_worker, not force)

    def _analyse_in_worker(
        self, path: Path, text: str | None, opened: dict[Path, tuple[str, int | None]]
    ) -> dict[Path, tuple[FileResult, Any]]:
        """Runs in the worker: the new results of ``path`` (when open) and of every other
        open file that the same tree checks."""
        assert self.index is not None
        context, _ = self.index.analyse(path, text)
        if context is None:
            self.log("info", f"zerolint: {path} is excluded by the configuration; not checked")
        for diagnostic in context.result(path).diagnostics if context else []:
            self.log("warning", f"zerolint: {describe(diagnostic)}")
        out: dict[Path, tuple[FileResult, Any]] = {}
        if text is not None:
            out[path] = (
                (context.result(path), context.settings) if context else (FileResult(), None)
            )
        for other in opened:
            if (
                other != path
                and context is not None
                and context.holds(other)
                and self.index.context_for(other) is context
            ):
                out[other] = (context.result(other), context.settings)
        return out

    def publish_all(
        self,
        results: dict[Path, tuple[FileResult, Any]],
        opened: dict[Path, tuple[str, int | None]],
        edited: Path,
    ) -> None:
        current = self.open_documents()
        for path, (result, settings) in results.items():
            if path not in current:
                continue
            version = opened.get(path, (None, None))[1]
            self.publish(path, result, version, settings, force=path == edited)

    def publish(
        self,
        path: Path,
        result: FileResult,
        version: int | None,
        settings: Any,
        *,
        force: bool = True,
    ) -> None:
        """Send ``path``'s diagnostics; unless ``force``, only when they changed."""
        key = result.key()  # the text of a file not edited is as it was: its warnings too
        self.shown[path] = (result, version, settings)
        if not force and self.published.get(path) == key:
            return
        self.published[path] = key
        invalid = invalid_suppressions(result)
        convert = self.encoder(path, result.text)
        diagnostics = [to_diagnostic(f, convert) for f in result.findings]
        diagnostics += [from_engine_diagnostic(d, convert) for d in result.diagnostics]
        diagnostics += [invalid_diagnostic(path, *where, convert) for where in invalid]
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(
                uri=self.uris.get(path) or from_fs_path(str(path)) or path.as_uri(),
                version=version,
                diagnostics=diagnostics,
            )
        )

    # ------------------------------------------------------------------ the tree

    async def in_worker(self, fn: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self.worker, fn, *args)

    def warm(self) -> None:
        """Runs in the worker: index the workspace before the first file is opened."""
        try:
            if self.index is not None:
                self.index.warm()
            # The warm index lives as long as the server: the collector need not walk it.
            gc.collect()
            gc.freeze()
            if self.index is not None:
                self.index.mark_frozen()
            # From here the server collects by itself, when idle (collect_later): left on,
            # the collector would walk an analysis's young objects as soon as it ends,
            # while its diagnostics wait.
            gc.disable()
        except Exception as exc:  # noqa: BLE001 - the files are checked when opened
            self.log("error", f"zerolint: indexing failed: {type(exc).__name__}: {exc}")

    async def watch_configuration(self) -> None:
        """Ask the client to tell us about configuration, git ignore and Python files
        (`.py`, `.pyi`) changing on disk, and files and folders created or deleted."""
        # An editor reports a change once for each watcher whose glob and kinds match it
        # (VS Code does; each watcher is a watcher of its own there): `**/*` reports every
        # creation and deletion, so the other watchers ask for changes only.
        globs = [f"**/{name}" for name in (*CONFIG_NAMES, *IGNORE_FILES)]
        globs += [f"**/*{s}" for s in PY_SUFFIXES]
        watchers = [lsp.FileSystemWatcher(glob_pattern=g, kind=lsp.WatchKind.Change) for g in globs]
        # A folder deleted, renamed or moved in is one event (VS Code's), sent only where a
        # watcher's glob matches the folder's own name: any name, created or deleted.
        watchers.append(
            lsp.FileSystemWatcher(
                glob_pattern="**/*", kind=lsp.WatchKind.Create | lsp.WatchKind.Delete
            )
        )
        registration = lsp.Registration(
            id="zerolint-watch",
            method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES,
            register_options=lsp.DidChangeWatchedFilesRegistrationOptions(watchers=watchers),
        )
        try:
            await self.client_register_capability_async(
                lsp.RegistrationParams(registrations=[registration])
            )
        except Exception as exc:  # noqa: BLE001 - saving a pyproject.toml still reloads it
            self.log("warning", f"zerolint: cannot watch pyproject.toml files: {exc}")

    def rule_files(self) -> set[Path]:
        """The rule files the configurations of the trees checked now name (`rule-files`),
        as absolute paths: a change of one is a change of the configuration."""
        if self.index is None:
            return set()
        out: set[Path] = set()
        for context in list(self.index.contexts.values()):
            settings = context.settings
            if settings.source is not None:
                folder = settings.source.parent
                out |= {Path(os.path.realpath(folder / entry)) for entry in settings.rule_files}
        return out

    def is_configuration(self, path: Path | None) -> bool:
        """Whether ``path`` is a configuration file, a rule file one of them names, or a
        file that says what git ignores (which files are checked, as on a fresh
        ``zerolint check``)."""
        if path is None:
            return False
        if path.name in CONFIG_NAMES or self.is_ignore_file(path):
            return True
        return Path(os.path.realpath(path)) in self.rule_files()

    def is_ignore_file(self, path: Path) -> bool:
        """Whether ``path`` tells git what to ignore in a folder that is walked for files:
        not one of a cache or a virtual environment (`.pytest_cache/.gitignore`, which
        pytest writes as it makes the folder), which no walk enters."""
        folder = ignored_by(path)
        if folder is None:
            return False
        root = self.index.folder_of(folder) if self.index is not None else None
        below = folder.relative_to(root).parts if root is not None else ()
        return not any(part in SKIP_DIRS or part.endswith(".egg-info") for part in below)

    async def watch_rule_files(self) -> None:
        """Ask the client to watch the rule files the configurations name (any file name,
        so not among the configuration watchers), those not asked for already."""
        if not self.can_watch:
            return
        names = {p.name for p in self.rule_files()} - self.watched_rule_names
        if not names:
            return
        self.watched_rule_names |= names
        registration = lsp.Registration(
            id=f"zerolint-watch-rules-{len(self.watched_rule_names)}",
            method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES,
            register_options=lsp.DidChangeWatchedFilesRegistrationOptions(
                watchers=[  # created or deleted: reported by `**/*` (watch_configuration)
                    lsp.FileSystemWatcher(glob_pattern=f"**/{n}", kind=lsp.WatchKind.Change)
                    for n in sorted(names)
                ]
            ),
        )
        try:
            await self.client_register_capability_async(
                lsp.RegistrationParams(registrations=[registration])
            )
        except Exception as exc:  # noqa: BLE001 - saving a rule file still reloads it
            self.log("warning", f"zerolint: cannot watch the rule files: {exc}")

    def thaw(self) -> None:
        """Trees were dropped: what was frozen with them may be garbage now. Unfrozen, so
        that the next collection frees it; the trees built again are frozen after it."""
        gc.unfreeze()
        self.refreeze = True

    def _collect_in_worker(self, idle: bool = True) -> None:
        """Collect; when idle and enough frozen parses were replaced, unfrozen first."""
        index = self.index
        if idle and index is not None and index.frozen_garbage() >= THAW_AFTER_CHARS:
            self.thaw()
        gc.collect()
        if self.refreeze:
            self.refreeze = False
            gc.freeze()
            if index is not None:
                index.mark_frozen()

    async def reload(self, why: str) -> None:
        """The configuration changed: rebuild every tree and recheck the open files."""
        if self.index is None:
            return
        await self.in_worker(self.index.reload)
        await self.in_worker(self.thaw)  # in the worker: never amid a collection there
        self.log("info", f"zerolint: configuration reloaded ({why})")
        await self.refresh_open()
        await self.watch_rule_files()  # the configuration may name others now

    async def refresh_open(self) -> None:
        for uri in self.open_uris():
            path = self.doc_path(uri)
            if path is not None and is_python(path):
                await self.analyse(uri)

    async def forget_tree(self, path: Path) -> None:
        if self.index is not None:
            await self.in_worker(self.index.forget_tree, path)
            await self.in_worker(self.thaw)

    async def folders_changed(self, folders: list[tuple[Path, bool]]) -> bool:
        """Folders created (True) or deleted: whether a tree was dropped for them."""
        if self.index is None or not await self.in_worker(self.index.folders_changed, folders):
            return False
        await self.in_worker(self.thaw)
        return True

    async def disk_changed(self, paths: list[Path]) -> None:
        if self.index is not None:
            await self.in_worker(self.index.disk_changed, paths)

    def encoder(self, path: Path, text: str | None) -> Convert:
        """Positions in the client's units: in ``path`` from ``text``, in another file (a
        step of a path) from its open buffer or, closed, from the file on disk (as the
        analysis read them)."""
        codec = self.workspace.position_codec
        known: dict[Path, list[str] | None] = {path: _wide_lines(text)}
        buffers: dict[Path, tuple[str, int | None]] | None = None

        def lines_of(file: Path) -> list[str] | None:
            nonlocal buffers
            if file not in known:
                if buffers is None:
                    buffers = self.open_documents()
                if file in buffers:
                    known[file] = _wide_lines(buffers[file][0])
                else:  # decoded as the analysis decodes it (PEP 263: a `coding:` line)
                    try:
                        known[file] = _wide_lines(read_source(file, lambda: str(file)))
                    except BadInput:
                        known[file] = None
            return known[file]

        def convert(file: Path, position: lsp.Position) -> lsp.Position:
            lines = lines_of(file)
            return position if lines is None else codec.position_to_client_units(lines, position)

        return convert

    # ------------------------------------------------------------------ code actions

    async def code_actions(self, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        """The actions for the findings the request's range overlaps. LibCST's fix takes a
        second on a large module: it runs on a thread of its own, so edits go on being
        read and analysed meanwhile, and its result is kept until the findings change."""
        uri = params.text_document.uri
        doc = self.document(uri)
        path = self.doc_path(uri)
        if doc is None or path is None:
            self.log("warning", f"zerolint: textDocument/codeAction for {uri}, which is not open")
            return []
        shown = self.shown.get(path)
        if shown is None:
            return []
        result, _, settings = shown
        text = result.text
        if text is None or text != doc.source or settings is None:
            return []  # the buffer changed since: new diagnostics (and actions) are coming
        convert = self.encoder(path, text)
        wanted = params.context.only
        findings = []
        for finding in result.findings:
            diagnostic = to_diagnostic(finding, convert)
            if overlaps(diagnostic.range, params.range):
                findings.append((finding, diagnostic))
        fix_all_wanted = bool(result.findings) and wants(wanted, lsp.CodeActionKind.SourceFixAll)
        quick = wants(wanted, lsp.CodeActionKind.QuickFix)
        if not (findings and quick) and not fix_all_wanted:
            return []
        # Kept for these results: the text, and what other files and the settings made
        # of it (an edit of a helper or of the configuration publishes new ones).
        cached = self.fixes.get(path)
        if cached is None or cached[0] is not result or cached[1] is not settings:
            cached = (result, settings, {})
            self.fixes[path] = cached
        known = cached[2]

        def edits() -> list[lsp.CodeAction]:  # on the fixes' thread
            actions: list[lsp.CodeAction] = []
            for finding, diagnostic in findings if quick else ():
                key = (finding.code, finding.line, finding.col, finding.sink, finding.argument)
                if key not in known:
                    fixed = fix_edit(text, finding, settings)
                    known[key] = None if fixed is None else workspace_edit(uri, text, fixed)
                if known[key] is not None:
                    actions.append(
                        lsp.CodeAction(
                            title=f"Clamp the lengths at `{finding.sink}` to >= 1 ({finding.code})",
                            kind=lsp.CodeActionKind.QuickFix,
                            diagnostics=[diagnostic],
                            is_preferred=True,
                            edit=known[key],
                        )
                    )
                where = suppression_edit(text, finding.line, finding.end_line, finding.code)
                if where is not None:
                    line, old, new = where
                    width = self.workspace.position_codec.client_num_units(old)
                    # The comment goes on the first line of the call that can hold one.
                    on = "this line" if line + 1 == finding.line else f"line {line + 1}"
                    actions.append(
                        lsp.CodeAction(
                            title=f"Suppress {finding.code} on {on} (# noqa)",
                            kind=lsp.CodeActionKind.QuickFix,
                            diagnostics=[diagnostic],
                            edit=line_edit(uri, line, width, new),
                        )
                    )
            if fix_all_wanted:
                if "all" not in known:
                    fixed = fix_all(text, result.findings, settings)
                    known["all"] = None if fixed is None else workspace_edit(uri, text, fixed)
                if known["all"] is not None:
                    actions.append(
                        lsp.CodeAction(
                            title="zerolint: clamp the lengths at every reported sink",
                            kind=FIX_ALL,
                            edit=known["all"],
                        )
                    )
            return actions

        actions = await asyncio.get_running_loop().run_in_executor(self.fixer, edits)
        now = self.document(uri)
        if now is None or now.source != text:
            return []  # edited while the fixes were made: they are for the old text
        return actions


def _wide_lines(text: str | None) -> list[str] | None:
    """``text``'s lines where positions in them need converting (None: ASCII or unknown)."""
    return None if not text or text.isascii() else lsp_lines(text)


def wants(only: list[str] | None, kind: str) -> bool:
    return not only or any(kind == k or kind.startswith(f"{k}.") for k in only)


def path_of(uri: str) -> Path | None:
    if not uri.startswith("file:"):
        return None
    fs = to_fs_path(uri)
    return Path(os.path.abspath(fs)) if fs else None


def overlaps(a: lsp.Range, b: lsp.Range) -> bool:
    def key(p: lsp.Position) -> tuple[int, int]:
        return (p.line, p.character)

    return key(a.start) <= key(b.end) and key(b.start) <= key(a.end)


def rule_doc_uri(code: str) -> str | None:
    from zerolint.rules import rules_dir

    doc = rules_dir() / f"{code}.md"
    return doc.resolve().as_uri() if doc.is_file() else None


Convert = Callable[[Path, lsp.Position], lsp.Position]


def same(file: Path, position: lsp.Position) -> lsp.Position:
    return position


def to_diagnostic(finding: Finding, convert: Convert = same) -> lsp.Diagnostic:
    """The finding as the editor shows it; ``convert`` turns a position in characters into
    the client's units (UTF-16 by default) where the file's text is known."""
    here = absolute(finding.path)
    start = lsp.Position(max(finding.line - 1, 0), max(finding.col - 1, 0))
    if finding.end_line:
        end = lsp.Position(max(finding.end_line - 1, 0), max(finding.end_col - 1, 0))
    else:
        end = start
    start, end = convert(here, start), convert(here, end)
    verdict = finding.verdict
    message = finding.message
    if verdict is not None and verdict.witness:
        index = (verdict.flow_index or 0) + 1
        message += f"\nwitness (path {index}): {verdict.witness_text()}"
    elif verdict is not None and verdict.status == "unknown" and verdict.reason:
        message += f"\nnot decided: {verdict.reason}"
    related = []
    for i, flow in enumerate(finding.flows, 1):
        for step in flow.steps:
            file = absolute(step.path)
            where = convert(file, lsp.Position(max(step.line - 1, 0), max(step.col - 1, 0)))
            note = step_note(step)
            related.append(
                lsp.DiagnosticRelatedInformation(
                    location=lsp.Location(uri=file.as_uri(), range=lsp.Range(where, where)),
                    message=f"path {i}: {step_code(step)}" + (f"   {note}" if note else ""),
                )
            )
    href = rule_doc_uri(finding.code)
    return lsp.Diagnostic(
        range=lsp.Range(start, end),
        message=message,
        severity=lsp.DiagnosticSeverity.Error
        if verdict is None or verdict.status == "unsafe"
        else lsp.DiagnosticSeverity.Warning,
        code=finding.code,
        code_description=lsp.CodeDescription(href=href) if href else None,
        source=SOURCE,
        related_information=related,
    )


def from_engine_diagnostic(d: Diagnostic, convert: Convert = same) -> lsp.Diagnostic:
    where = convert(absolute(d.path), lsp.Position(max(d.line - 1, 0), max(d.col - 1, 0)))
    return lsp.Diagnostic(
        range=lsp.Range(where, where),
        message=d.message,
        severity=lsp.DiagnosticSeverity.Error,
        code=d.code,
        source=SOURCE,
    )


def invalid_suppressions(result: FileResult) -> list[tuple[int, str, str]]:
    """The suppression comments of the file that name no valid code where they left one of
    its findings shown (what the command line warns of on stderr): (line, the directive,
    the line's text)."""
    if result.text is None or not result.findings:
        return []
    from zerolint.suppression import invalid_directives, universal

    lines = universal(result.text).split("\n")
    return [
        (line, directive, lines[line - 1] if line <= len(lines) else "")
        for line, directive in invalid_directives(result.text, result.findings)
    ]


def invalid_diagnostic(
    path: Path, line: int, directive: str, text: str, convert: Convert = same
) -> lsp.Diagnostic:
    """A warning on the line of an invalid suppression comment, which suppresses nothing:
    the command line's warning (``check.warn_invalid_suppressions``), without the file and
    line the editor shows."""
    from zerolint.suppression import invalid_reason

    start = convert(path, lsp.Position(line - 1, 0))
    end = convert(path, lsp.Position(line - 1, len(text)))
    return lsp.Diagnostic(
        range=lsp.Range(start, end),
        message=f"invalid `{directive}` directive: {invalid_reason(directive)}",
        severity=lsp.DiagnosticSeverity.Warning,
        source=SOURCE,
    )


def describe(d: Diagnostic) -> str:
    where = f":{d.line}" if d.line else ""
    return f"{d.path}{where}: {d.code} {d.message}"


def line_edit(uri: str, line: int, width: int, new: str) -> lsp.WorkspaceEdit:
    """Replace line ``line`` (``width`` code units long, without its line break)."""
    edit = lsp.TextEdit(
        range=lsp.Range(lsp.Position(line, 0), lsp.Position(line, width)),
        new_text=new.rstrip("\r\n"),
    )
    return lsp.WorkspaceEdit(changes={uri: [edit]})


def workspace_edit(uri: str, before: str, after: str) -> lsp.WorkspaceEdit:
    """The edits turning ``before`` into ``after``: one per changed run of lines. The lines
    both share at the start and at the end are set aside before they are compared (a fix
    changes a few lines of a large module: the comparison's cost grows with the square of
    the lines it is given where many are alike, such as blank ones)."""
    old = lsp_lines(before)
    new = lsp_lines(after)
    head = 0
    while head < min(len(old), len(new)) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < min(len(old), len(new)) - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    edits = []
    matcher = difflib.SequenceMatcher(
        a=old[head : len(old) - tail], b=new[head : len(new) - tail], autojunk=False
    )
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        edits.append(
            lsp.TextEdit(
                range=lsp.Range(lsp.Position(head + i1, 0), lsp.Position(head + i2, 0)),
                new_text="".join(new[head + j1 : head + j2]),
            )
        )
    return lsp.WorkspaceEdit(changes={uri: edits})


# ---------------------------------------------------------------------- the features


def build(debounce: float = 0.05) -> ZerolintServer:
    """A server with every feature registered (not started)."""
    server = ZerolintServer(debounce)

    @server.feature(lsp.INITIALIZED)
    async def initialized(ls: ZerolintServer, params: lsp.InitializedParams) -> None:
        ls.loop = asyncio.get_running_loop()
        roots = ls.roots()
        ls.index = WorkspaceIndex(roots, ls.log)
        ls.log("info", f"zerolint {__version__}: checking {', '.join(map(str, roots)) or '-'}")
        warming = ls.in_worker(ls.warm)
        caps = ls.client_capabilities.workspace
        watch = caps.did_change_watched_files if caps else None
        if watch is not None and watch.dynamic_registration:
            ls.can_watch = True
            await ls.watch_configuration()
        await warming
        await ls.watch_rule_files()  # named by the configurations the index read

    @server.feature(lsp.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def folders_changed(
        ls: ZerolintServer, params: lsp.DidChangeWorkspaceFoldersParams
    ) -> None:
        # pygls has updated ls.workspace.folders before this runs.
        if ls.index is None:
            return
        roots = ls.roots()
        await ls.in_worker(ls.index.set_folders, roots)
        await ls.in_worker(ls.thaw)
        ls.log(
            "info",
            f"zerolint: workspace folders changed: checking {', '.join(map(str, roots)) or '-'}",
        )
        await ls.in_worker(ls.warm)
        await ls.refresh_open()

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: ZerolintServer, params: lsp.DidOpenTextDocumentParams) -> None:
        path = ls.doc_path(params.text_document.uri)
        if path is not None:  # published under the client's own spelling of the URI
            ls.uris[path] = params.text_document.uri
        ls.schedule(params.text_document.uri, 0)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(ls: ZerolintServer, params: lsp.DidChangeTextDocumentParams) -> None:
        ls.edited(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: ZerolintServer, params: lsp.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        path = ls.doc_path(uri)
        if ls.is_configuration(path):
            await ls.reload(f"{path} was saved")
        elif ls.document(uri) is not None:
            ls.schedule(uri, 0)
        else:
            ls.log("warning", f"zerolint: textDocument/didSave for {uri}, which is not open")

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    async def did_close(ls: ZerolintServer, params: lsp.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        waiting = ls.sleeping.pop(uri, None)
        if waiting is not None:
            waiting.cancel()
        ls.last_edit.pop(uri, None)
        path = ls.doc_path(uri)
        if path is not None and is_python(path):
            if not path.exists() and ls.index is not None:
                await ls.forget_tree(path)
            await ls.analyse(uri, closed=True)
        if path is not None:
            ls.fixes.pop(path, None)
            ls.uris.pop(path, None)

    @server.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    async def watched(ls: ZerolintServer, params: lsp.DidChangeWatchedFilesParams) -> None:
        # Each event once: a client may report one as often as watchers match it (one that
        # ignores the watchers' kinds: `**/*` and `**/*.py` both match a Python file).
        events = list(dict.fromkeys((c.uri, c.type) for c in params.changes))
        configs = [uri for uri, _ in events if ls.is_configuration(path_of(uri))]
        if configs:
            await ls.reload(f"{path_of(configs[0])} changed")
            return
        # A checkout changes many files in one notification: the trees are rebuilt or
        # re-read once for all of them, and the open files checked once after.
        changed: list[Path] = []
        folders: list[tuple[Path, bool]] = []
        refresh = False
        for uri, kind in events:
            path = ls.doc_path(uri)
            if path is None:
                continue
            if not is_python(path):  # a folder created, deleted or renamed, or another file
                if kind != lsp.FileChangeType.Changed:
                    folders.append((path, kind == lsp.FileChangeType.Created))
                continue
            is_open = ls.document(uri) is not None
            if kind == lsp.FileChangeType.Deleted and is_open:
                ls.log(
                    "warning",
                    f"zerolint: {path} was deleted while open; checking the editor's buffer",
                )
            elif kind in (lsp.FileChangeType.Created, lsp.FileChangeType.Deleted):
                await ls.forget_tree(path)
                refresh = True
            elif not is_open:
                changed.append(path)
        if folders and await ls.folders_changed(folders):
            refresh = True
        if changed:
            await ls.disk_changed(changed)
            refresh = True
        if refresh:
            await ls.refresh_open()

    @server.feature(
        lsp.TEXT_DOCUMENT_CODE_ACTION,
        lsp.CodeActionOptions(
            code_action_kinds=[lsp.CodeActionKind.QuickFix, FIX_ALL], resolve_provider=False
        ),
    )
    async def code_action(ls: ZerolintServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        try:
            return await ls.code_actions(params)
        except Exception as exc:  # noqa: BLE001 - answer nothing rather than fail
            ls.log("error", f"zerolint: code action failed: {type(exc).__name__}: {exc}")
            return []

    @server.feature(lsp.SHUTDOWN)
    def shutdown(ls: ZerolintServer, *args: Any) -> None:
        ls.shut_down = True
        for task in ls.sleeping.values():
            task.cancel()
        ls.sleeping.clear()
        if ls.collecting is not None:
            ls.collecting.cancel()
            ls.collecting = None
        ls.worker.shutdown(wait=False, cancel_futures=True)
        ls.fixer.shutdown(wait=False, cancel_futures=True)

    return server


def serve(debounce: float = 0.05) -> int:
    """Run the server on stdin/stdout until the client says exit; the exit status."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(name)s: %(message)s")
    server = build(debounce)
    server.start_io()
    # As the protocol says: 0 after a shutdown request, 1 for an exit (or the end of the
    # input) without one.
    return 0 if server.shut_down else 1
