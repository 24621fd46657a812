"""Writing conversations as session notes, once, and growing them in place.

Every conversation has one session note (:mod:`memvault.vault_io.session_note`),
found again by its id (derived from client and session id) through the
durable import keys (:mod:`.keys`), the index, or its planned file name.
What was written is remembered per turn (a digest of each, and the number
of its block id ``^tN``), so

- the same conversation again writes nothing ("skipped");
- a conversation that grew keeps every byte of the turns already written
  and gets the new ones at the end of its transcript; only the
  front-matter's managed keys (a person's tags kept), the title,
  memvault's digest lines and digest block (:mod:`.digest`: what the
  session came to, a person's ticks kept) are rewritten
  ("updated");
- a conversation whose turns changed at the source after the last turn both
  agree on (a regenerated answer, an edited message, another branch, a
  message that was still being written) keeps the changed turns, marked
  superseded in place, and gets the turns that replace them appended with
  new block ids ("updated", with how many were superseded); the facts of
  superseded turns are retired with their history, as for any edited
  source. The note is a record: nothing in it is ever deleted.

When the durable state is lost but the note is found, the turns already in
it are recognised by their exact Markdown.

A batch of new notes is written with one flush (:meth:`~memvault.vault_io.gate.Gate.write_many`),
a grown one by exchange-and-check (an edit a person saved meanwhile is
never lost: the note is revised again with it),
indexed at once (keyword search and facts work when the call returns), and
only then are the import keys recorded: a writer that dies in between finds
its notes again by id next time, instead of writing them twice.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from memvault.store.context import StoreContext
from memvault.store.db.connection import write_transaction
from memvault.store.flows import keys as ik
from memvault.store.flows import unindexed
from memvault.store.flows.conversation import Conversation, digest_lines
from memvault.vault_io.atomic import fit_name, free_path
from memvault.vault_io.confine import outside_target
from memvault.vault_io.errors import MemvaultError
from memvault.vault_io.frontmatter import file_frontmatter_id
from memvault.vault_io.gate import SESSIONS, Kind
from memvault.vault_io.note import content_hash
from memvault.vault_io.secrets import REDACTED
from memvault.vault_io.session_digest import SessionDigest, block_maker
from memvault.vault_io.session_note import (
    SessionHead,
    Turn,
    live_turns,
    render_session,
    render_turn,
    revise_session,
    session_filename,
    session_note_id,
    text_says_memory_off,
    written_ids,
)

if TYPE_CHECKING:
    from memvault.store.api_sync import SyncReport

#: The store's whole-vault sync (what a flow calls to index the vault first).
Sync = Callable[[], "SyncReport"]
#: The store's sync of the given vault paths (what a flow calls to index what it wrote).
SyncPaths = Callable[[Iterable[str]], "SyncReport"]

#: The import-key detail holding the hash of the note as memvault last wrote it, while no one
#: else wrote in it (:mod:`memvault.store.consolidation.retention` trashes only such notes).
NOTE_HASH = "note_hash"
#: The import-key source of session notes.
SESSION_SOURCE = "session"
SESSIONS_FOLDER = SESSIONS
#: How often a grown conversation's note, changed while being revised, is read and revised again.
REVISE_TRIES = 3


@dataclass
class SessionPlan:
    """What writing one conversation will do."""

    conv: Conversation
    note_id: str
    action: str  # imported | updated | skipped
    path: str | None = None
    data: bytes | None = None  # the note's new bytes (None: nothing to write)
    key: ik.ImportKey | None = None  # the row to record once written
    why: str = ""
    new_turns: int = 0  # turns written (appended)
    superseded: int = 0  # turns written before that changed at the source (kept, marked superseded)
    expected: str | None = None  # the hash of the note revised ("updated"): replaced only while it still has it
    digest_warning: str | None = None  # why the digest block is the rules' when the llm was to write it

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form (``ingest --json``)."""
        return {
            "id": self.note_id, "action": self.action, "path": self.path, "session": self.conv.session_id,
            "client": self.conv.client, "title": self.conv.title, "turns": len(self.conv.turns),
            "new_turns": self.new_turns, "superseded": self.superseded, "redacted": self.conv.redacted,
            "why": self.why,
        }


def _common_prefix(old: Sequence[str], turns: Sequence[Turn], written: dict[int, str] | None = None,
                   ids: Sequence[int] = ()) -> int:
    """How many turns, from the first, are the ones written before (by
    digest; a turn written before speakers' names were kept matches its
    digest without the name, so such a note is not superseded whole; a turn
    whose note block (``written`` by block id) differs from it only where
    one of them says ``[redacted]`` is the same turn, redacted by another
    version of the redactor)."""
    n = 0
    for a, turn in zip(old, turns):
        if a != turn.digest and (not turn.name or a != replace(turn, name=None).digest):
            block = (written or {}).get(ids[n]) if n < len(ids) else None
            if block is None or not same_but_redacted(block, render_turn(ids[n], turn).rstrip("\n")):
                break
        n += 1
    return n


def same_but_redacted(written: str, new: str) -> bool:
    """Whether two renderings of a turn differ only where one of them says
    ``[redacted]`` (each stands for any text within its line): redaction
    found more, or less, than when the turn was written."""
    if REDACTED not in written and REDACTED not in new:
        return False
    return any(_wildcards(a).fullmatch(b) is not None for a, b in ((written, new), (new, written))
               if REDACTED in a and _keyed(a))


def _keyed(text: str) -> bool:
    """Whether each ``[redacted]`` of ``text`` follows words on its line
    (a key: "password: [redacted]"), so a wildcard never stands for a whole
    line: a regenerated answer is never taken for a redacted one."""
    for line in text.split("\n"):
        if REDACTED in line and not line.split(REDACTED, 1)[0].removeprefix(">").strip():
            return False
    return True


def _wildcards(text: str) -> re.Pattern[str]:
    return re.compile("[^\n]*?".join(re.escape(part) for part in text.split(REDACTED)))


def _written(row: ik.ImportKey | None, existing: str, conv: Conversation) -> tuple[list[str], list[int]]:
    """(digest, block id number) of each turn of the conversation as last
    written in its note: from the durable state, else (state lost) read
    from the note itself, a turn counting as written when its Markdown is
    exactly what ``conv``'s turn at that place renders to."""
    if row is not None and isinstance(row.detail.get("turns"), list):
        digests = [str(d) for d in row.detail["turns"]]
        ids = row.detail.get("ids")
        if not isinstance(ids, list) or len(ids) != len(digests):
            ids = list(range(1, len(digests) + 1))  # written before ids were kept: numbered in order
        return digests, [int(n) for n in ids]
    found = live_turns(existing)
    digests = []
    for (n, block), turn in zip(found, conv.turns):
        rendered = render_turn(n, turn).rstrip("\n")
        if block != rendered and not same_but_redacted(block, rendered):
            break
        digests.append(turn.digest)
    digests += ["?"] * (len(found) - len(digests))  # turns that differ: they changed at the source
    return digests, [n for n, _ in found]


@dataclass
class SessionWriter:
    """Plans and writes session notes for one store (module docstring):
    ``sync`` finds a note a person moved, ``sync_paths`` indexes what it wrote."""

    ctx: StoreContext
    sync: Sync
    sync_paths: SyncPaths
    claimed: set[str] = field(default_factory=set)  # paths planned in this batch
    rescanned: bool = False  # the vault was synced to find a note that moved
    #: An ingest of one session (CLI, end hooks): the configured llm (``extractor = "llm"``) writes
    #: the digest block, one call per session, and an unchanged note without one gets it. Not a
    #: daemon's per-turn ingest nor a bulk import, which use the rules and leave an unchanged note be.
    llm_digest: bool = False

    @property
    def _llm(self) -> bool:
        return self.llm_digest and self.ctx.settings.extractor == "llm"

    def _digest(self, conv: Conversation) -> "tuple[SessionDigest, str | None]":
        """The digest block of ``conv`` (:mod:`.digest`): the llm's when it is to write it, else the rules'."""
        from memvault.store.flows.digest import llm_digest, rules_digest

        return llm_digest(conv, self.ctx.settings) if self._llm else (rules_digest(conv), None)

    def _digest_due(self, path: str) -> bool:
        """Whether an unchanged conversation's note, ingested again (not by a
        per-turn ingest or an import, which leave an unchanged note unread),
        still wants its digest block written: it has none (written before
        digests), or the llm is to write it and the rules did."""
        if not self.llm_digest:
            return False
        maker = block_maker((self.ctx.root / path).read_bytes().decode("utf-8", "surrogateescape"))
        return maker is None or (self._llm and maker != "llm")

    @property
    def folder(self) -> str:
        """The vault folder of session notes."""
        return f"{self.ctx.settings.memory_folder}/{SESSIONS_FOLDER}"

    def plan(self, conv: Conversation) -> SessionPlan:
        """What writing ``conv`` would do (nothing is written)."""
        if not conv.turns:
            return SessionPlan(conv, session_note_id(conv.client, conv.session_id), "skipped", why="no turns to write")
        digests = [t.digest for t in conv.turns]
        self._adopt_alias(conv, digests)
        note_id = session_note_id(conv.client, conv.session_id)
        khash = ik.item_hash([conv.title, digests])
        row = ik.get_key(self.ctx.con, SESSION_SOURCE, note_id)
        head = SessionHead(
            id=note_id, session_id=conv.session_id, client=conv.client, title=conv.title, started=conv.started,
            ended=conv.ended, turns=len(conv.turns), digest=digest_lines(conv),
        )
        key = ik.ImportKey(SESSION_SOURCE, note_id, note_id, khash)
        path = self._locate(note_id, row, conv)
        if path is None and row is not None and not self.rescanned:
            # Written before and not where the index saw it: a person may have
            # moved it while nothing watched the vault. One sync finds it, so
            # the conversation is not written a second time beside it.
            self.rescanned = True
            self.sync()
            path = self._locate(note_id, row, conv)
        if path is not None:
            key.path = path
            if row is not None and row.hash == khash and row.path == path and not self._digest_due(path):
                return SessionPlan(conv, note_id, "skipped", path, why="unchanged")
            # surrogateescape: a byte that is not UTF-8 (a person's, from another editor) is written back as it was
            existing = (self.ctx.root / path).read_bytes().decode("utf-8", "surrogateescape")
            if text_says_memory_off(existing):  # the person turned memory off for this session
                return SessionPlan(conv, note_id, "skipped", path, why="its session note says memory: off")
            head.summary, digest_warning = self._digest(conv)
            old_digests, old_ids = _written(row, existing, conv)
            keep = _common_prefix(old_digests, conv.turns, dict(live_turns(existing)), old_ids)
            first = max([*old_ids, *written_ids(existing)], default=0) + 1  # block ids are never reused
            new = list(zip(range(first, first + len(digests) - keep), conv.turns[keep:]))
            key.detail = {"turns": digests, "ids": old_ids[:keep] + [n for n, _ in new]}
            data = revise_session(existing, head, old_ids[keep:], new).encode("utf-8", "surrogateescape")
            if row is not None and row.detail.get(NOTE_HASH) == content_hash(existing.encode("utf-8", "surrogateescape")):
                # Still all memvault's own writing: so is the revision. A note a person
                # wrote in never gets the mark again (retention keeps it: .retention).
                key.detail[NOTE_HASH] = content_hash(data)
            if data == existing.encode("utf-8", "surrogateescape"):
                return SessionPlan(conv, note_id, "skipped", path, key=key, why="unchanged")
            return SessionPlan(conv, note_id, "updated", path, data, key, new_turns=len(new),
                               superseded=len(old_ids) - keep, digest_warning=digest_warning,
                               expected=content_hash(existing.encode("utf-8", "surrogateescape")))
        if row is not None and row.hash == khash:
            return SessionPlan(conv, note_id, "skipped", why="its note was deleted in the vault; unchanged at the source")
        target = self._new_path(conv)
        key.path = target
        key.detail = {"turns": digests, "ids": list(range(1, len(digests) + 1))}
        head.summary, digest_warning = self._digest(conv)
        data = render_session(head, conv.turns).encode("utf-8")
        key.detail[NOTE_HASH] = content_hash(data)
        return SessionPlan(conv, note_id, "imported", target, data, key, new_turns=len(conv.turns),
                           digest_warning=digest_warning)

    def write(self, plans: Sequence[SessionPlan]) -> "SyncReport | None":
        """Write the planned notes (the new ones with one flush; a grown one
        by exchange-and-check, :meth:`_revise`), index them, record their keys."""
        todo = [p for p in plans if p.data is not None and p.path is not None]
        paths = [p.path for p in todo if p.path]
        if todo:
            unindexed.will_write(self.ctx.con, paths)  # a writer killed before the sync: the next command indexes them
            self.ctx.gate.write_many([(p.path, p.data) for p in todo if p.path and p.data is not None
                                      and p.expected is None], Kind.SESSION)
            for p in todo:
                if p.expected is not None:
                    self._revise(p)
        report = self.sync_paths(paths) if todo else None
        unindexed.indexed(self.ctx.con, paths)
        keyed = [p.key for p in plans if p.key is not None]
        if keyed:
            with write_transaction(self.ctx.con):
                for k in keyed:
                    ik.put_key(self.ctx.con, k)
        self.claimed.clear()
        return report

    def _revise(self, plan: SessionPlan) -> None:
        """Replace a grown conversation's note only while it is as planned
        (exchange-and-check, :meth:`~memvault.vault_io.gate.Gate.replace`): a
        person's edit saved since it was read is never lost; the note is
        read and revised again (a few times) with it. ``plan`` ends as what
        was written."""
        for _ in range(REVISE_TRIES):
            assert plan.path is not None and plan.data is not None and plan.expected is not None
            if self.ctx.gate.replace(plan.path, plan.expected, plan.data):
                return
            again = self.plan(plan.conv)
            if again.data is None or again.path is None:
                plan.action, plan.data = again.action, None
                return
            if again.expected is None:  # gone meanwhile: written as a new note (the path was claimed)
                if self.ctx.gate.create(again.path, again.data, Kind.SESSION):
                    plan.path, plan.key = again.path, again.key
                    return
                continue  # made again meanwhile: read and revised once more
            plan.path, plan.data, plan.expected, plan.key = again.path, again.data, again.expected, again.key
        raise MemvaultError(f"{plan.path}: changed each time it was about to be written; "
                            "not written (the next ingest tries again)")

    # -- finding the note ----------------------------------------------------

    def _adopt_alias(self, conv: Conversation, digests: list[str]) -> None:
        """Give ``conv`` the id an earlier memvault gave it (one of its
        ``aliases``) when it has no note of its own yet and the note written
        under that id holds exactly the turns it begins with: the same
        conversation, grown, rather than another one that begins alike."""
        if not conv.aliases or ik.get_key(self.ctx.con, SESSION_SOURCE, session_note_id(conv.client, conv.session_id)):
            return
        for alias in conv.aliases:
            row = ik.get_key(self.ctx.con, SESSION_SOURCE, session_note_id(conv.client, alias))
            old = row.detail.get("turns") if row is not None else None
            if isinstance(old, list) and old and len(old) <= len(digests) and _common_prefix(old, conv.turns) == len(old):
                conv.session_id = alias
                return

    def _locate(self, note_id: str, row: ik.ImportKey | None, conv: Conversation) -> str | None:
        """The vault path of the conversation's note, if it is in the vault:
        where it was written, where the index saw it last (renamed), or at
        its planned name (a writer died before recording its key)."""
        if row is not None and row.path and self._holds(row.path, note_id):
            return row.path
        found = self.ctx.con.execute(
            "SELECT path FROM files WHERE trace_id = ? AND kind = 'note'", (note_id,)
        ).fetchone()
        if found and self._holds(found[0], note_id):
            return str(found[0])
        planned = f"{self.folder}/{session_filename((conv.started or '')[:10] or None, conv.title)}"
        if self._holds(planned, note_id):
            return planned
        return None

    def _holds(self, rel: str, note_id: str) -> bool:
        """Whether vault path ``rel`` is the session note ``note_id``; never
        when it leads (by a symlink) outside the vault: that file is not read,
        nor revised and copied into the vault."""
        root = self.ctx.root
        return outside_target(root, rel) is None and file_frontmatter_id(root / rel, head=4096) == note_id

    def _new_path(self, conv: Conversation) -> str:
        root = self.ctx.root
        name = session_filename((conv.started or "")[:10] or None, conv.title)
        path = free_path(root / self.folder / name)
        n = 2
        while path.relative_to(root).as_posix() in self.claimed:
            path = free_path(root / self.folder / fit_name(Path(name).stem, f" {n}.md"))
            n += 1
        rel = path.relative_to(root).as_posix()
        self.claimed.add(rel)
        return rel
