"""Walking a vault: which files memvault looks at, and which it skips and why.

The rules follow Obsidian: hidden files and folders (``.obsidian``, ``.trash``,
``.git``, ...) are not part of the vault, nor are the paths listed under
"Excluded files" (``userIgnoreFilters`` in ``.obsidian/app.json``). On top of
that come the user's own ignore globs, a size cap, and protection against
symlink loops. A symlink whose real path leaves the vault is never
followed: it is skipped with a warning and listed in
:attr:`ScanResult.outside` (see :mod:`.confine`).
"""

from __future__ import annotations

import os
import re
import stat
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memvault.vault_io import json_input
from memvault.vault_io.confine import is_inside, outside_target, real_root
from memvault.vault_io.globs import vault_globs

#: Default cap on the size of a note memvault will read.
DEFAULT_MAX_FILE_SIZE = 5 * 1024 * 1024

NOTE_SUFFIX = ".md"

#: The name ending of memvault's own temporary files (see :mod:`.atomic`);
#: they are hidden, so the scan skips them, but it reports them so that one
#: left behind by a writer that died can be cleaned up.
TEMP_SUFFIX = ".memvault-tmp"


@dataclass(frozen=True)
class FileStat:
    """What the scan learns about one file without reading it."""

    path: str  # vault-relative POSIX path
    mtime_ns: int
    size: int
    is_note: bool
    ctime_ns: int = 0  # inode change time: a rename onto the path changes it
    #: The inode number: a file renamed onto the path (a sync tool's temp
    #: file) is another inode even when its timestamps fall in the same tick.
    inode: int = 0
    #: When the stat was taken (time.time_ns()): a file whose timestamps are
    #: this close to it may change again without them moving ("racy").
    seen_ns: int = 0


@dataclass(frozen=True)
class ScanWarning:
    """A file or folder the scan skipped, with a reason a person can act on."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass
class ScanResult:
    """The files of a vault, plus everything that was skipped."""

    files: dict[str, FileStat] = field(default_factory=dict)
    warnings: list[ScanWarning] = field(default_factory=list)
    #: Paths that exist but were skipped (too large, unreadable): their
    #: earlier index entries must be kept, not treated as deleted.
    skipped: set[str] = field(default_factory=set)
    #: Folders that could not be listed ("" is the vault itself): what the
    #: index holds under them is unknown this time, not deleted.
    unlisted: set[str] = field(default_factory=set)
    #: memvault's own temporary files found on the way (vault-relative).
    temp_files: list[str] = field(default_factory=list)
    #: Symlinks (to files or folders) whose real path leaves the vault: not
    #: read, and not part of the vault (an earlier index entry is dropped).
    outside: set[str] = field(default_factory=set)
    #: Names that are not valid UTF-8 (as shown, with U+FFFD): never indexed.
    bad_names: list[str] = field(default_factory=list)

    def covers(self, path: str) -> bool:
        """Whether the scan can vouch for ``path`` being absent (its folder was listed)."""
        return not any(d == "" or path.startswith(d + "/") for d in self.unlisted)


#: Where Obsidian keeps its excluded-files filters (``userIgnoreFilters``).
APP_JSON = ".obsidian/app.json"


class IgnoreRules:
    """Obsidian's excluded-files filters plus memvault's own ignore globs.

    Obsidian treats a filter written as ``/regex/`` as a regular expression
    searched in the vault-relative path, and any other filter as a path
    prefix (``Templates/`` excludes that folder, ``Daily`` also ``Daily
    notes/``). memvault's own ``ignore`` patterns are gitignore-style
    (:mod:`.globs`); a pattern that matches a folder excludes everything under it.

    A regex filter runs on RE2, in time linear in the path whatever the
    pattern: on Python's backtracking engine one catastrophic filter
    (``/^(a+)+$/``) took time exponential in a path's length and hung the
    scan. One RE2 cannot run (a backreference, a lookaround) or that is no
    regex at all is not applied, and :attr:`problems` says so (a full scan
    reports it once, naming app.json).
    """

    def __init__(self, obsidian_filters: Iterable[str] = (), globs: Iterable[str] = ()) -> None:
        self.prefixes: list[str] = []
        self.regexes: list[Any] = []  # RE2 patterns: .search(text) as re's
        #: Filters not applied, and why (one line each, for the scan's warnings).
        self.problems: list[str] = []
        for f in obsidian_filters:
            if not isinstance(f, str) or not f:
                continue
            if len(f) > 2 and f.startswith("/") and f.endswith("/"):
                regex, problem = linear_regex(f[1:-1])
                if regex is not None:
                    self.regexes.append(regex)
                else:
                    self.problems.append(f"the excluded-files filter {f!r} {problem}; it is not applied")
            else:
                self.prefixes.append(f.lstrip("/"))
        self.globs = vault_globs(tuple(globs))

    def __bool__(self) -> bool:
        return bool(self.prefixes or self.regexes or self.globs)

    def ignored(self, rel: str, is_dir: bool = False) -> bool:
        """Whether the vault-relative path ``rel`` is excluded."""
        probe = rel + "/" if is_dir else rel
        if any(probe.startswith(p) for p in self.prefixes):
            return True
        if any(r.search(probe) for r in self.regexes):
            return True
        return self.globs.matches(rel, is_dir=is_dir)


def linear_regex(pattern: str) -> tuple[Any, str]:
    """``pattern`` compiled for RE2 (linear-time matching), or (None, why not)."""
    import re2  # only for a vault with regex filters

    options = re2.Options()
    options.log_errors = False  # RE2 would print its own report on stderr
    try:
        return re2.compile(pattern, options), ""
    except re2.error:
        pass
    try:
        re.compile(pattern)
    except re.error:
        return None, "is not a valid regex"
    return None, ("needs a backtracking regex engine (a backreference or a lookaround), which can take "
                  "forever on a path; memvault matches filters in linear time")


def excluded(rules: IgnoreRules, rel: str, is_dir: bool = False) -> bool:
    """Whether a full scan would skip ``rel``: hidden, or it or a folder above it ignored."""
    if is_hidden(rel):
        return True
    if not rules:
        return False
    parts = rel.split("/")
    for i in range(1, len(parts)):
        if rules.ignored("/".join(parts[:i]), is_dir=True):
            return True
    return rules.ignored(rel, is_dir=is_dir)


def vault_rules(root: Path, ignore: Sequence[str] = ()) -> IgnoreRules:
    """The vault's Obsidian excluded files plus memvault's own ignore globs."""
    return IgnoreRules(obsidian_ignore_filters(root), ignore)


def obsidian_ignore_filters(root: Path) -> list[str]:
    """The ``userIgnoreFilters`` of the vault's ``.obsidian/app.json``, if any.

    A missing or malformed file means no filters (Obsidian behaves the same).
    """
    try:
        data = json_input.loads((root / ".obsidian" / "app.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):  # json_input: nested too deeply is malformed too, not a RecursionError
        return []
    filters = data.get("userIgnoreFilters") if isinstance(data, dict) else None
    return [f for f in filters if isinstance(f, str)] if isinstance(filters, list) else []


def scan_vault(
    root: Path,
    *,
    ignore: Sequence[str] = (),
    max_file_size: int = DEFAULT_MAX_FILE_SIZE,
) -> ScanResult:
    """List the notes and attachments of the vault at ``root``.

    Follows symlinks (Obsidian does) but visits each real folder once, by
    device and inode, so a symlink loop cannot make the walk endless. Files
    over ``max_file_size``, names that are not valid UTF-8 and symlinks that
    lead outside the vault are skipped with a warning naming them.
    """
    rules = vault_rules(root, ignore)
    result = _VaultWalk(root, rules, max_file_size).run()
    result.warnings[:0] = [ScanWarning(APP_JSON, problem) for problem in rules.problems]
    return result


class _VaultWalk:
    """One walk of a vault (:func:`scan_vault`): the folders seen (by device
    and inode), the folders still to list, and what was found."""

    def __init__(self, root: Path, rules: IgnoreRules, max_file_size: int) -> None:
        self.rules = rules
        self.max_file_size = max_file_size
        self.result = ScanResult()
        self.root_real = real_root(os.fspath(root))
        root_st = os.stat(root)
        self.seen_dirs = {(root_st.st_dev, root_st.st_ino)}
        self.stack: list[tuple[str, str]] = [(os.fspath(root), "")]
        # Folders reached through a symlink are walked only after every real
        # folder, so a symlink can never claim files under its own name first.
        self.linked: list[tuple[str, str]] = []

    def run(self) -> ScanResult:
        """Walk every folder, each one's entries in turn."""
        while self.stack or self.linked:
            folder = self._next_folder()
            if folder is None:
                continue
            entries = self._list(*folder)
            if entries is None:
                continue
            for entry in entries:
                self._visit(entry, folder[1])
        return self.result

    def _next_folder(self) -> tuple[str, str] | None:
        """The next folder to list (its path and vault path): the real ones
        first, then those reached through a symlink. None: a linked folder
        gone, or already walked (a loop), is skipped."""
        if self.stack:
            return self.stack.pop()
        abs_dir, rel_dir = self.linked.pop(0)
        try:
            st = os.stat(abs_dir)
        except OSError:
            return None
        if (st.st_dev, st.st_ino) in self.seen_dirs:
            self.result.warnings.append(
                ScanWarning(rel_dir, "symlink to a folder already in the vault (a loop?); not followed")
            )
            return None
        self.seen_dirs.add((st.st_dev, st.st_ino))
        return abs_dir, rel_dir

    def _list(self, abs_dir: str, rel_dir: str) -> list[os.DirEntry[str]] | None:
        """The entries of one folder (None: it cannot be listed, and says so)."""
        try:
            with os.scandir(abs_dir) as it:
                return list(it)
        except OSError as exc:
            self.result.warnings.append(ScanWarning(rel_dir or ".", f"cannot list folder: {exc.strerror}"))
            self.result.unlisted.add(rel_dir)
            return None

    def _visit(self, entry: os.DirEntry[str], rel_dir: str) -> None:
        """One entry of a folder: a file found, a folder to walk, or skipped."""
        result = self.result
        name = entry.name
        if name.startswith("."):
            if name.endswith(TEMP_SUFFIX):
                result.temp_files.append(f"{rel_dir}/{name}" if rel_dir else name)
            return
        rel = f"{rel_dir}/{name}" if rel_dir else name
        try:
            rel.encode("utf-8")
        except UnicodeEncodeError:
            shown = rel.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            result.warnings.append(ScanWarning(shown, "file name is not valid UTF-8; skipped"))
            result.bad_names.append(shown)
            return
        seen = time.time_ns()
        try:
            st = entry.stat()  # follows symlinks
        except OSError as exc:
            what = "broken symlink" if entry.is_symlink() else f"cannot stat: {exc.strerror}"
            result.warnings.append(ScanWarning(rel, f"{what}; skipped"))
            return
        is_dir = stat.S_ISDIR(st.st_mode)
        if self.rules and self.rules.ignored(rel, is_dir=is_dir):
            return
        if entry.is_symlink() and _leaves(self.root_real, entry.path, rel, result):
            return
        if is_dir:
            if entry.is_symlink():
                self.linked.append((entry.path, rel))
            elif (st.st_dev, st.st_ino) not in self.seen_dirs:  # else a bind mount seen twice
                self.seen_dirs.add((st.st_dev, st.st_ino))
                self.stack.append((entry.path, rel))
            return
        if not stat.S_ISREG(st.st_mode):
            return
        is_note = name.lower().endswith(NOTE_SUFFIX)
        if is_note and st.st_size > self.max_file_size:
            result.warnings.append(
                ScanWarning(rel, f"larger than the {_human_size(self.max_file_size)} limit ({_human_size(st.st_size)}); skipped")
            )
            result.skipped.add(rel)
            return
        result.files[rel] = FileStat(rel, st.st_mtime_ns, st.st_size, is_note, st.st_ctime_ns, st.st_ino, seen)

def _leaves(root_real: str, abs_path: str, rel: str, result: ScanResult) -> bool:
    """Whether the symlink at ``abs_path`` leads outside the vault; if so it
    is recorded in ``result`` (one warning per path per scan)."""
    real = os.path.realpath(abs_path)
    if is_inside(root_real, real):
        return False
    result.outside.add(rel)
    result.warnings.append(ScanWarning(rel, f"symlink leads outside the vault (to {real}); skipped"))
    return True


def stat_file(root: Path, rel: str) -> FileStat | None:
    """Stat one vault file the way :func:`scan_vault` would; None if absent
    or (through a symlink) outside the vault."""
    if outside_target(root, rel) is not None:
        return None
    seen = time.time_ns()
    try:
        st = os.stat(root / rel)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return FileStat(rel, st.st_mtime_ns, st.st_size, rel.lower().endswith(NOTE_SUFFIX), st.st_ctime_ns,
                    st.st_ino, seen)


def is_hidden(rel: str) -> bool:
    """Whether any component of ``rel`` is hidden (starts with a dot)."""
    return any(part.startswith(".") for part in rel.split("/"))


def _human_size(n: int) -> str:
    if n >= 1024 * 1024:
        return f"{n / (1024 * 1024):.1f} MiB"
    if n >= 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n} B"
