"""A consistent backup of memvault's databases, and restoring one.

``memvault export --format sqlite`` writes one file,
``memvault-backup-<vault>-<YYYYMMDD-HHMMSS>.zip``, holding

- ``state.db``: the durable state (what only memvault knows), copied with
  ``VACUUM INTO``: one read transaction, so the copy is a consistent
  snapshot even while a daemon writes (WAL readers never block writers);
- ``embeddings.db``: the vector cache, the same way (saves re-embedding);
- ``manifest.json``: format, vault, time, schema version, and the sha256 of
  each file.

The derived ``index.db`` is not in it: restoring rebuilds the index from
the vault and the restored state (nothing is lost by that, see
:mod:`memvault.store.index.rebuild`). Together with the vault (your notes),
a backup is everything.

``memvault restore-backup FILE`` (refused while a daemon serves the vault)
checks the archive and the databases in it, keeps the current ``state.db``
beside it as ``state.db.before-restore-<time>``, puts the backup's in its
place, merges the backup's vectors into the cache, and rebuilds the index.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import apsw

from memvault.store import location
from memvault.store.context import StoreContext
from memvault.store.db import records as rec
from memvault.store.db import state_schema
from memvault.store.db.connection import user_version
from memvault.store.embedding.cache import export_cache, import_cache
from memvault.store.embedding.vectors import CACHE_FILE
from memvault.vault_io import json_input
from memvault.vault_io.atomic import fsync_dir
from memvault.vault_io.errors import MemvaultError, UsageError
from memvault.vault_io.gate import data_file

if TYPE_CHECKING:
    from memvault.store.api_sync import SyncReport

FORMAT = "memvault-backup"
VERSION = 1
MANIFEST = "manifest.json"


class BackupError(MemvaultError):
    """A backup that cannot be made or restored (the message says why)."""


@dataclass
class RestoreReport:
    """What a restore did."""

    backup: str
    kept: str | None  # where the state.db it replaced was kept
    vectors: int = 0  # vectors merged into the cache
    sync: "SyncReport | None" = None
    manifest: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"backup": self.backup, "kept": self.kept, "vectors": self.vectors, "manifest": self.manifest,
                "rebuild": self.sync.as_dict() if self.sync is not None else None}


def backup_name(vault_name: str, when: datetime | None = None) -> str:
    """``memvault-backup-<vault>-<YYYYMMDD-HHMMSS>.zip``."""
    stamp = (when or datetime.now(timezone.utc)).strftime("%Y%m%d-%H%M%S")
    vault = re.sub(r"[^\w.-]+", "-", vault_name).strip("-.") or "vault"
    return f"memvault-backup-{vault}-{stamp}.zip"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def backup(ctx: StoreContext, output: Path | None = None) -> Path:
    """Write a backup archive; ``output`` is a file, or a folder (one that
    exists, or a name without a suffix; default: here) to hold a well-named one."""
    if output is None or output.is_dir() or not output.suffix:
        dest = (output or Path.cwd()) / backup_name(ctx.name)
    else:
        dest = output
    dest.parent.mkdir(parents=True, exist_ok=True)
    con = ctx.read_con()
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=".memvault-backup-") as tmp:
        work = Path(tmp)
        files = {location.STATE_FILE: work / location.STATE_FILE}
        # One statement, one read transaction: a consistent snapshot of the
        # state whatever the daemon commits meanwhile.
        con.execute("VACUUM state INTO ?", (str(files[location.STATE_FILE]),))
        if (ctx.data_dir / CACHE_FILE).exists():
            files[CACHE_FILE] = work / CACHE_FILE
            export_cache(ctx.data_dir, files[CACHE_FILE])
        manifest = {
            "format": FORMAT, "version": VERSION, "vault": ctx.name, "vault_path": str(ctx.root),
            "created": rec.now_iso(), "state_schema": user_version(con, "state"),
            "files": {name: _sha256(path) for name, path in files.items()},
        }
        partial = work / dest.name
        with zipfile.ZipFile(partial, "w") as archive:
            archive.writestr(MANIFEST, json.dumps(manifest, indent=2, sort_keys=True) + "\n")
            for name, path in files.items():
                compress = zipfile.ZIP_DEFLATED if name == location.STATE_FILE else zipfile.ZIP_STORED
                archive.write(path, name, compress_type=compress)
        os.chmod(partial, 0o600)  # the state is private, like the data dir it came from
        with partial.open("rb") as fh:
            os.fsync(fh.fileno())
        os.replace(partial, dest)
        fsync_dir(dest.parent)
    return dest


def read_manifest(archive: zipfile.ZipFile, name: str) -> dict[str, Any]:
    """The manifest of a backup archive, checked."""
    try:
        manifest = json_input.loads(archive.read(MANIFEST))
    except KeyError:
        raise BackupError(f"{name} is not a memvault backup (no {MANIFEST})") from None
    except ValueError as exc:
        raise BackupError(f"{name}: its {MANIFEST} is not JSON ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BackupError(f"{name} is not a memvault backup (format {manifest.get('format')!r})")
    if int(manifest.get("version", 0)) > VERSION:
        raise BackupError(f"{name} was made by a newer memvault (backup version {manifest['version']})")
    if location.STATE_FILE not in (manifest.get("files") or {}):
        raise BackupError(f"{name} holds no {location.STATE_FILE}")
    return manifest


def _check_database(path: Path, expected: str, name: str) -> apsw.Connection:
    if _sha256(path) != expected:
        raise BackupError(f"{name}: {path.name} does not match its checksum; the backup is damaged")
    con = apsw.Connection(str(path))
    try:
        result = con.execute("PRAGMA integrity_check").fetchall()
    except apsw.Error as exc:
        con.close()
        raise BackupError(f"{name}: {path.name} is not a readable database ({exc})") from None
    if result != [("ok",)]:
        con.close()
        raise BackupError(f"{name}: {path.name} fails SQLite's integrity check: {result[0][0]}")
    return con


def restore(ctx: StoreContext, file: Path, *, close: Callable[[], None],
            rebuild: Callable[[], "SyncReport"]) -> RestoreReport:
    """Put a backup's state (and vectors) in place and rebuild the index:
    ``close`` closes the store's connections before its state is replaced,
    ``rebuild`` (the store's) builds the index again from the restored state.
    The caller makes sure no daemon serves the vault."""
    if not file.is_file():
        raise UsageError(f"backup {file} does not exist or is not a file")
    try:
        archive = zipfile.ZipFile(file)
    except zipfile.BadZipFile:
        raise BackupError(f"{file} is not a memvault backup (not a zip archive)") from None
    data_dir = location.ensure_private_dir(ctx.data_dir)
    with archive, tempfile.TemporaryDirectory(dir=data_dir, prefix=".restore-") as tmp:
        manifest = read_manifest(archive, str(file))
        work = Path(tmp)
        for name in manifest["files"]:
            if name not in (location.STATE_FILE, CACHE_FILE):
                continue
            with archive.open(name) as src, (work / name).open("wb") as dst:
                shutil.copyfileobj(src, dst)
        state = _check_database(work / location.STATE_FILE, manifest["files"][location.STATE_FILE], str(file))
        try:
            if user_version(state) > len(state_schema.MIGRATIONS):
                raise BackupError(f"{file} was made by a newer memvault (state schema {user_version(state)})")
        finally:
            state.close()
        target = data_file(data_dir, location.STATE_FILE)  # the data dir's own file, not a symlink elsewhere
        close()
        kept = _set_aside(target)
        os.replace(work / location.STATE_FILE, target)
        os.chmod(target, 0o600)
        fsync_dir(data_dir)
        report = RestoreReport(str(file), str(kept) if kept else None, manifest=manifest)
        if CACHE_FILE in manifest["files"] and (work / CACHE_FILE).exists():
            report.vectors = _merge_vectors(data_dir, work / CACHE_FILE, manifest["files"][CACHE_FILE], str(file))
    report.sync = rebuild()
    return report


def _set_aside(state: Path) -> Path | None:
    """Fold the current state's WAL into it and move it beside, as
    ``state.db.before-restore-<time>``; None when there was none."""
    if not state.exists():
        return None
    con = apsw.Connection(str(state))
    try:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        con.close()
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    kept = state.with_name(f"{state.name}.before-restore-{stamp}")
    os.replace(state, kept)
    for suffix in ("-wal", "-shm"):
        Path(f"{state}{suffix}").unlink(missing_ok=True)
    return kept


def _merge_vectors(data_dir: Path, backup_cache: Path, expected: str, name: str) -> int:
    """Add the backup's vectors to the cache (keyed by model and text hash:
    merging never loses or confuses one)."""
    _check_database(backup_cache, expected, name).close()
    return import_cache(data_dir, backup_cache)
