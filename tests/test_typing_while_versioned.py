"""Typing in Obsidian while memvault versions the note (issue 20).

Obsidian saves a note in place a moment after each pause in typing (Node's
``fs.writeFile``: open the existing path with ``O_TRUNC``, write, close; no
rename), so a save can land while the daemon reads the note or writes its
next ``version`` line into it (:func:`~memvault.vault_io.replace.replace_if_unchanged`).
A typist thread appends words to a memory note that way (and, as an
editor that never truncates first, with ``r+b``) while a real daemon
versions it; its last save is opened the moment memvault's temp file for a
version appears, so that it holds the old file open across the swap.
Afterwards every word must be in the note, nothing typed may be lost, the
note must stay still, and every version the history holds must be a text
the typist saved.

The unit tests below hold an in-place writer's descriptor of the note open
across a version write: what it writes must reach the note, never an
unlinked file. A note read between a save's truncation and its write
(found by the typist test) makes no version of the empty text.
"""

from __future__ import annotations

import os
import random
import threading
import time
from pathlib import Path

import pytest
from helpers import wait_for, write
from two_devices import Device, read_rows

from memvault.vault_io.frontmatter import file_frontmatter_id, split_frontmatter
from memvault.vault_io.note import content_hash

#: How long the typist types (s), and the quiet window asked of the settled note (s).
TYPING_S = 3.0
QUIET_S = 1.0

OPENING = "The typist writes:"


def save_in_place(path: Path, data: bytes, how: str, hold: float = 0.0) -> None:
    """One save as an editor makes it in place, ``hold`` s between the open
    and the write: ``wb`` truncates at open (Node's ``fs.writeFile``);
    ``r+b`` writes over the old bytes and cuts the rest (an editor that
    never truncates first)."""
    with open(path, how) as fh:
        if hold:
            time.sleep(hold)
        fh.write(data)
        if how == "r+b":
            fh.truncate()


def body_of(text: str) -> str:
    return split_frontmatter(text)[1]


def content_of(text: str) -> str:
    """The memory's text as memvault reads it from a note (no front-matter)."""
    return body_of(text).strip()


class Typist(threading.Thread):
    """Appends words to the note's body, saving in place after each one.

    ``reloads``: as Obsidian, the editor takes in a change made on disk by
    someone else (memvault's front-matter lines) before its next save and
    keeps its own body; otherwise it saves its own text blindly, front-matter
    and all."""

    def __init__(self, path: Path, seed: int, how: str, reloads: bool) -> None:
        super().__init__(name="typist", daemon=True)
        self.path, self.how, self.reloads = path, how, reloads
        self.rng = random.Random(seed)
        self.text = path.read_text(encoding="utf-8")
        self.saved: list[str] = [self.text]  # every text the typist wrote, in order
        self.words: list[str] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            end = time.monotonic() + TYPING_S
            n = 0
            while time.monotonic() < end:
                word = f"w{n:03d}{self.rng.choice('abcdefgh')}"
                n += 1
                self.save(word, hold=self.rng.uniform(0, 0.002) if self.how == "r+b" else 0.0)
                # a few ms between keystroke pauses, now and then a longer one
                pause = self.rng.uniform(0.001, 0.012)
                if self.rng.random() < 0.15:
                    pause = self.rng.uniform(0.03, 0.09)
                time.sleep(pause)
            self.race_the_version_write(n)
        except BaseException as exc:  # noqa: BLE001  (reported by the test)
            self.error = exc


    def reload(self) -> None:
        if self.reloads:
            on_disk = self.path.read_text(encoding="utf-8")
            if on_disk != self.saved[-1]:  # memvault wrote its lines: take them, keep the body
                fm_end = len(on_disk) - len(body_of(on_disk))
                self.text = on_disk[:fm_end] + body_of(self.text)

    def race_the_version_write(self, n: int) -> None:
        """The last save, opened the moment memvault's temp file for the
        version of the save before appears (before the swap), written a
        moment later: it must be the one the note ends with. A version
        write the typist did not see begin (it takes a millisecond) is let
        go, and another save made."""
        end = time.monotonic() + 10
        while True:
            assert time.monotonic() < end, "the typist never saw memvault write a version"
            self.save(f"w{n:03d}y")
            n += 1
            if self.saw_a_version_write_begin():
                self.save(f"w{n:03d}z", hold=0.005)
                return

    def save(self, word: str, hold: float = 0.0) -> None:
        self.reload()
        self.words.append(word)
        self.text = self.text.rstrip("\n") + f" {word}\n"
        save_in_place(self.path, self.text.encode("utf-8"), self.how, hold)
        self.saved.append(self.text)

    def saw_a_version_write_begin(self) -> bool:
        """Wait for memvault's temp file beside the note (True), or for the
        note to change (False: the version was written unseen)."""
        end = time.monotonic() + 5
        saved = self.saved[-1].encode("utf-8")
        while time.monotonic() < end:
            if any(name.endswith(".memvault-tmp") for name in os.listdir(self.path.parent)):
                return True
            if self.path.read_bytes() != saved:
                return False
            time.sleep(0)
        return False


def index_rows(d: Device, sql: str, params: tuple = ()) -> list[tuple]:
    return read_rows(d.data_dir, "index.db", sql, params)


def settled(d: Device, rel: str) -> bool:
    """Queue empty, the note indexed as it is on disk, and its version line
    naming its text (no version write pending)."""
    if not d.idle():
        return False
    data = (d.root / rel).read_bytes()
    if dict(index_rows(d, "SELECT path, hash FROM files WHERE path = ?", (rel,))).get(rel) != content_hash(data):
        return False
    return version_current(data.decode("utf-8"))


def version_current(text: str) -> bool:
    from memvault.vault_io.memory_note import read_memory, text_fingerprint
    from memvault.vault_io.parser import parse_note
    from memvault.vault_io.secrets import redact

    note = parse_note("Memory/semantic/x.md", text.encode("utf-8"))
    doc = read_memory(note.frontmatter, note.body)
    return doc.version_hash == text_fingerprint(redact(doc.content)[0], "semantic", doc.tags)


def quiet(path: Path, seconds: float) -> bytes:
    """The file's bytes, after checking they stay the same for ``seconds``."""
    before = path.read_bytes()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        assert path.read_bytes() == before, "the settled note changed again"
        time.sleep(0.02)
    return before


def frontmatter_lines(text: str) -> dict[str, str]:
    fm = split_frontmatter(text)[0] or ""
    return dict(line.split(":", 1) for line in fm.splitlines() if ":" in line and not line.startswith(" "))


@pytest.mark.parametrize(("how", "reloads", "seed"), [
    ("wb", True, 1), ("wb", False, 2), ("r+b", True, 3), ("r+b", False, 4),
], ids=["writeFile-reloads", "writeFile-blind", "r+b-reloads", "r+b-blind"])
def test_typing_into_a_memory_note_while_the_daemon_versions_it(
        tmp_path: Path, how: str, reloads: bool, seed: int) -> None:
    root = tmp_path / "vault"
    root.mkdir()
    device = Device("laptop", root, tmp_path / "data")
    device.start()
    try:
        assert device.cli is not None
        made = device.cli.memories.add(OPENING, "semantic")
        assert made.path is not None
        note = root / made.path
        wait_for(lambda: settled(device, made.path), timeout=30)
        typist = Typist(note, seed, how, reloads)
        typist.start()
        typist.join(timeout=TYPING_S + 10)
        assert not typist.is_alive() and typist.error is None, typist.error
        last = typist.saved[-1]
        wait_for(lambda: settled(device, made.path), timeout=30)
        final = quiet(note, QUIET_S).decode("utf-8")

        # every word typed is in the note, in order: the typist's last text
        if body_of(final) != body_of(last):
            trash = root / ".trash"
            kept = [p.read_text(encoding="utf-8")[-40:] for p in trash.iterdir()] if trash.exists() else []
            history = [(h.id, h.content[-24:]) for h in device.cli.history(made.id)[:4]]
            pytest.fail(f"the last save is lost: the note ends {final[-24:]!r}, the typist's {last[-24:]!r}; "
                        f"trash: {kept}; history: {history}; versions seen: {frontmatter_lines(final)}")
        assert content_of(final) == OPENING + "".join(f" {w}" for w in typist.words)
        # ...with at most memvault's own lines changed in its front-matter
        mine, ours = frontmatter_lines(last), frontmatter_lines(final)
        changed = {k for k in set(mine) | set(ours) if mine.get(k) != ours.get(k)}
        assert changed <= {"version", "version_hash", "updated"}, changed  # updated: the time of the last edit
        assert file_frontmatter_id(note) == made.id
        # nothing left beside the note, and anything memvault set aside is a text the typist saved
        saved = {content_of(t) for t in typist.saved}
        assert sorted(p.name for p in note.parent.iterdir()) == [note.name]
        trash = root / ".trash"
        for kept in sorted(trash.rglob("*")) if trash.exists() else []:
            assert content_of(kept.read_text(encoding="utf-8")) in saved, f"{kept} holds text nobody typed"
        # every version in the history is a text the typist saved
        assert device.cli is not None
        history = device.cli.history(made.id)
        assert history[0].id == made.id and history[0].content == content_of(last)
        # For r+b a read in the middle of a save may find any mix of the old
        # bytes and the new; fs.writeFile's empty moment makes no version.
        if how == "wb":
            strange = [h.content for h in history if h.content not in saved]
            assert not strange, f"versions no save ever held: {strange[:3]}"
        assert len(history) >= 2, "the daemon made no version while the typist typed"
    finally:
        device.stop()


# -- an in-place writer holding the note open across a version write -------------------------


@pytest.fixture
def note(tmp_path: Path) -> Path:
    return write(tmp_path / "vault", "Memory/semantic/n.md", "---\nid: m-1\n---\nread\n")


@pytest.mark.parametrize("exchange", [True, False], ids=["exchange", "aside"])
def test_a_write_through_a_descriptor_opened_before_the_version_write_reaches_the_note(
        note: Path, monkeypatch: pytest.MonkeyPatch, exchange: bool) -> None:
    """The editor opened the note (``r+b``: no truncation yet) just before
    memvault swapped its version in, and writes just after: that save must
    end at the note's path, never in an unlinked file."""
    import memvault.vault_io.replace as replace
    from memvault.vault_io.replace import replace_if_unchanged

    if not exchange:
        monkeypatch.setattr(replace, "_exchange", lambda a, b: None)
    trash = note.parents[2] / ".trash"
    before = note.read_bytes()
    held = open(note, "r+b")  # noqa: SIM115  (held across the write)
    try:
        replace_if_unchanged(note, content_hash(before), b"---\nid: m-1\nversion: 2\n---\nread\n", trash)
        held.write(b"---\nid: m-1\n---\nread, and the words typed meanwhile\n")
        held.truncate()
    finally:
        held.close()
    assert b"the words typed meanwhile" in note.read_bytes(), "a save went into a file memvault unlinked"
    assert not trash.exists()
    assert [p.name for p in note.parent.iterdir()] == ["n.md"]


def test_a_reader_holding_the_note_open_does_not_stop_the_version_write_for_long(note: Path) -> None:
    """A descriptor open only to read (a sync tool hashing the note) is no
    save: once it is closed, the version write goes through."""
    from memvault.vault_io.replace import replace_if_unchanged

    trash = note.parents[2] / ".trash"
    before = note.read_bytes()
    reader = open(note, "rb")  # noqa: SIM115
    closer = threading.Timer(0.05, reader.close)
    closer.start()
    try:
        assert replace_if_unchanged(note, content_hash(before), b"---\nid: m-1\nversion: 2\n---\nread\n", trash)
    finally:
        closer.join()
        reader.close()
    assert note.read_bytes() == b"---\nid: m-1\nversion: 2\n---\nread\n"
    assert not trash.exists()



def test_a_note_read_mid_save_makes_no_version(tmp_path: Path) -> None:
    """Obsidian's save truncates the note, then writes it: a read in between
    finds it empty. That is no text anyone saved, and no version of it may
    be kept (the write's own event follows at once)."""
    from memvault.store.memory_store import MemoryStore
    from memvault.store.settings import load_settings

    root = tmp_path / "vault"
    root.mkdir()
    s = MemoryStore(root, load_settings({"vault": str(root)}), data_dir=tmp_path / "data")
    try:
        made = s.memories.add(OPENING, "semantic")
        assert made.path is not None
        note = root / made.path
        text = note.read_text(encoding="utf-8").rstrip("\n") + " w000a\n"
        with open(note, "wb") as fh:  # truncated at open...
            s.sync_paths([made.path])  # ...read by the daemon's event
            fh.write(text.encode("utf-8"))  # ...and written
        s.sync_paths([made.path])
        contents = [h.content for h in s.history(made.id)]
        assert contents[0] == content_of(text)
        assert "" not in contents, contents
    finally:
        s.close()


def test_an_open_of_the_swapped_out_note_while_it_is_let_go_is_seen(note: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An editor's open that found the old note just before the swap and
    reaches it only as memvault unlinks it (under its lease): memvault sees
    the open, lets that save finish and keeps it in the trash."""
    import fcntl

    import memvault.vault_io.replace as replace

    trash = note.parents[2] / ".trash"
    before = note.read_bytes()
    real = replace._SwappedOut.unlink
    writers: list[threading.Thread] = []

    def opened_meanwhile(self: replace._SwappedOut, before: bytes, name: str, trash: Path) -> None:
        def save() -> None:
            with open(self.file, "r+b") as fh:  # waits for the lease to be let go
                fh.write(b"---\nid: m-1\n---\nread, and a save that found the old file\n")
                fh.truncate()

        writers.append(threading.Thread(target=save))
        writers[0].start()
        assert self.fd is not None
        wait_for(lambda: fcntl.fcntl(self.fd, fcntl.F_GETLEASE) == fcntl.F_UNLCK, timeout=5)  # the lease is breaking
        real(self, before, name, trash)

    monkeypatch.setattr(replace._SwappedOut, "unlink", opened_meanwhile)
    assert replace.replace_if_unchanged(note, content_hash(before), b"---\nid: m-1\nversion: 2\n---\nread\n", trash)
    writers[0].join(timeout=5)
    assert note.read_bytes() == b"---\nid: m-1\nversion: 2\n---\nread\n"
    assert [p.read_bytes() for p in trash.iterdir()] == [b"---\nid: m-1\n---\nread, and a save that found the old file\n"]



def test_an_open_of_the_swapped_out_note_before_it_is_let_go_lands_in_the_note(
        note: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same open reaching the old note while memvault checks it (under
    its lease), before the unlink: the old note goes back to the path, and
    the save lands in it."""
    import fcntl

    import memvault.vault_io.replace as replace

    trash = note.parents[2] / ".trash"
    before = note.read_bytes()
    real = replace._SwappedOut.read
    writers: list[threading.Thread] = []
    saved = b"---\nid: m-1\n---\nread, and a save that found the old file\n"

    def opened_while_read(self: replace._SwappedOut) -> bytes:
        data = real(self)
        if not writers:
            def save() -> None:
                with open(self.file, "r+b") as fh:  # waits for the lease to be let go
                    fh.write(saved)
                    fh.truncate()

            writers.append(threading.Thread(target=save))
            writers[0].start()
            assert self.fd is not None
            wait_for(lambda: fcntl.fcntl(self.fd, fcntl.F_GETLEASE) == fcntl.F_UNLCK, timeout=5)
        return data

    monkeypatch.setattr(replace._SwappedOut, "read", opened_while_read)
    assert not replace.replace_if_unchanged(note, content_hash(before), b"---\nid: m-1\nversion: 2\n---\nread\n", trash)
    writers[0].join(timeout=5)
    assert note.read_bytes() == saved
    assert not trash.exists()
    assert [p.name for p in note.parent.iterdir()] == ["n.md"]

def test_two_saves_straddling_a_version_write_end_with_the_second_in_the_note(
        note: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One save lands in the old note just before the swap, the editor's
    next one in memvault's new file just after: the second is the newer,
    it stays in the note, and the first is kept in the trash."""
    import memvault.vault_io.replace as replace

    trash = note.parents[2] / ".trash"
    before = note.read_bytes()
    real = replace._exchange
    first, second = b"---\nid: m-1\n---\nread, one\n", b"---\nid: m-1\n---\nread, one, two\n"

    def two_saves(a: Path, b: Path) -> bool | None:
        done = real(a, b)
        monkeypatch.setattr(replace, "_exchange", real)
        a.write_bytes(first)  # the old file, swapped out
        save_in_place(b, second, "wb")  # the path, ours now
        return done

    monkeypatch.setattr(replace, "_exchange", two_saves)
    assert not replace.replace_if_unchanged(note, content_hash(before), b"---\nid: m-1\nversion: 2\n---\nread\n", trash)
    assert note.read_bytes() == second
    assert [p.read_bytes() for p in trash.iterdir()] == [first]
    assert [p.name for p in note.parent.iterdir()] == ["n.md"]
