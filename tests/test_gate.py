"""One gate for every write (issue 32): no module writes a vault file but
:mod:`memvault.vault_io.gate`, every write a command makes passed it, and it
keeps each kind of file to its place (never a hidden part of the vault,
never through a symlink out of it, the history folder for logs alone)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from gate_audit import WriteLog, raw_writes
from helpers import FIXTURES, opened, write

from memvault.cli.main import cli
from memvault.vault_io.confine import OutsideVaultError
from memvault.vault_io.gate import Gate, Kind, WriteRefused

REPO = Path(__file__).resolve().parent.parent
TYPES = ("identity", "semantic", "episodic", "procedural", "prospective")

#: The modules that write by themselves, and why none of them writes a vault
#: file. Any other module writes through the gate.
WRITERS_OUTSIDE_THE_VAULT = {
    "vault_io/gate.py": "the gate itself",
    "vault_io/atomic.py": "the gate's tools: atomic writes, appends and moves of the paths it checked",
    "vault_io/replace.py": "the gate's tools: exchange-and-check",
    "store/consolidation/journal.py": "the consolidation lock in the data dir",
    "store/db/connection.py": "the databases in the data dir",
    "store/embedding/cache.py": "`cache export`: the file the person names",
    "store/embedding/model.py": "the model cache in memvault's data home",
    "store/flows/backup.py": "a backup the person names; a restored state.db in the data dir (gate.data_file)",
    "store/flows/export.py": "an export the person names (gate.export_target refuses a hidden part of the vault)",
    "store/flows/ingest.py": "the ingest lock in the data dir",
    "store/location.py": "the data dir's folders",
    "store/memory_store.py": "rebuild deletes the data dir's index",
    "cli/clients/client_config.py": "MCP clients' own config files",
    "cli/clients/mcp_boot.py": "the MCP tool list cache in the data home; stdout",
    "cli/clients/mcp_serve.py": "the HTTP bearer token in the data dir",
    "cli/turn_hook.py": "hooks.log in the data home",
    "daemon/lock.py": "the daemon's lock in the data dir",
    "daemon/serve.py": "the daemon's socket in the data dir",
    "daemon/status.py": "daemon.json in the data dir",
    "daemon/systemd.py": "the systemd user unit",
}


def test_no_module_but_the_gate_writes_by_itself() -> None:
    """Every raw write (open for writing, rename, unlink, mkdir, a write
    primitive imported) is in a module listed above; the rest pass the gate."""
    found = {}
    for folder in ("store", "vault_io", "cli", "daemon"):
        for path in sorted((REPO / folder).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            module = "memvault." + ".".join(path.relative_to(REPO).with_suffix("").parts)
            writes = raw_writes(path, module)
            if writes and rel not in WRITERS_OUTSIDE_THE_VAULT:
                found[rel] = writes
    assert not found, f"modules that write without the gate: {found}"
    gone = [rel for rel in WRITERS_OUTSIDE_THE_VAULT if not raw_writes(REPO / rel, "memvault.x.y")]
    assert not gone, f"listed as writers but write nothing (take them off the list): {gone}"


def test_the_audit_finds_raw_writes(tmp_path: Path) -> None:
    """The check above can fail: each shape of write is found."""
    module = tmp_path / "m.py"
    module.write_text(
        "import os, shutil\nfrom pathlib import Path\n"
        "from memvault.vault_io.atomic import atomic_write\n"
        "open('x', 'w')\nPath('x').write_text('y')\nos.replace('a', 'b')\nPath('a').unlink()\n"
        "shutil.copy('a', 'b')\nos.open('x', os.O_WRONLY | os.O_CREAT)\nPath('a').rename('b')\n"
        "'text'.replace('a', 'b')\nopen('x')\nPath('x').open('rb')\n", "utf-8")
    found = [w.split(": ", 1)[1] for w in raw_writes(module, "memvault.store.m")]
    assert found == ["imports memvault.vault_io.atomic.atomic_write", "open(..., write mode)", ".write_text()",
                     "os.replace", ".unlink()", "shutil.copy", "os.open(..., write flags)", ".rename(target)"], found


# -- every write a command makes passed the gate ----------------------------------------


class Approvals:
    """What the gate let through in a run: the folders it placed files in
    (and the files), the files it moved or removed, the trash."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.files: set[str] = set()
        self.folders: set[str] = set()
        place, source, trash = Gate.place, Gate._source, Gate._trash

        def placed(gate: Gate, rel: str, *args: object, **kw: object):  # type: ignore[no-untyped-def]
            where = place(gate, rel, *args, **kw)  # type: ignore[arg-type]
            self.folders.add(where.folder_real)
            self.files.add(os.path.join(where.folder_real, where.path.name))
            return where

        def sourced(gate: Gate, rel: str) -> None:
            source(gate, rel)
            real = os.path.realpath(gate.root / rel)
            self.files.add(real)
            self.folders.add(os.path.dirname(real))

        def trashed(gate: Gate) -> Path:
            folder = trash(gate)
            self.folders.add(os.path.realpath(folder))
            return folder

        monkeypatch.setattr(Gate, "place", placed)
        monkeypatch.setattr(Gate, "_source", sourced)
        monkeypatch.setattr(Gate, "_trash", trashed)

    def explains(self, event: str, path: str) -> bool:
        own_temp = path.startswith(".") and path.endswith((".memvault-tmp", ".memvault-swap"))
        if not os.path.isabs(path):  # opened by name in a folder held open: the gate's tools do that
            return own_temp or any(os.path.basename(f) == path for f in self.files)
        folder, name = os.path.split(path)
        if path in self.files:
            return True
        if event == "os.mkdir":  # a folder of a place
            return any(f == path or f.startswith(path + "/") for f in self.folders)
        own_temp = name.startswith(".") and name.endswith((".memvault-tmp", ".memvault-swap"))
        in_trash = os.path.basename(folder) == ".trash" and folder in self.folders
        return folder in self.folders and (own_temp or in_trash)


def _run(vault: Path, *args: str, stdin: str | None = None) -> object:
    r = CliRunner().invoke(cli, ["--vault", str(vault), *args], input=stdin)
    assert r.exit_code == 0, (args, r.output)
    return r


def test_every_write_of_the_commands_passed_the_gate(vault: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Commands that write every kind of file (memory notes, an in-place
    update, a move, a conflict copy and settling it, keyed facts, a merge,
    consolidation, a pause, the trash and back, views, a memory source, a
    session note grown, imports, an export into the vault, the history log):
    each file written, renamed, removed or made under the vault is one the
    gate let through (or memvault's temp file beside it)."""
    monkeypatch.setenv("MEMVAULT_EMBEDDING_MODEL", "none")
    approvals = Approvals(monkeypatch)
    write(vault, "About me.md", "# About me\n- I live in Porto\n")
    transcript = tmp_path / "t.jsonl"
    lines = (FIXTURES / "imports" / "claude-code-session.jsonl").read_text("utf-8").splitlines(keepends=True)
    transcript.write_text("".join(lines[:5]), "utf-8")
    with WriteLog(vault) as log:
        _run(vault, "sync", "--no-embed")
        mid = json.loads(_run(vault, "add", "Deploys go out on Tuesdays", "--type", "procedural", "--json").stdout)["id"]
        _run(vault, "update", mid, "--content", "Deploys go out on Wednesdays")
        _run(vault, "update", mid, "--type", "semantic")
        other = json.loads(_run(vault, "add", "Drinks tea", "--json").stdout)
        with opened(vault) as store:  # a person's edit racing a store change: a conflict copy
            store.memories.before_write = lambda rel: (vault / rel).write_text(
                (vault / rel).read_text("utf-8").replace("tea", "green tea"), "utf-8")
            assert store.update(other["id"], content="Drinks coffee").action == "conflict"
            copy = store.con.execute("SELECT conflict_path FROM state.conflicts").fetchone()[0]
        _run(vault, "conflicts", "--copy", copy, "--take", "copy")
        _run(vault, "add", "The editor theme is dark", "--key", "editor.theme", "--json")
        _run(vault, "add", "The editor theme is light", "--key", "editor.theme", "--reason", "changed", "--json")
        third = json.loads(_run(vault, "add", "Drinks oolong", "--json").stdout)
        _run(vault, "merge", other["id"], third["id"])
        _run(vault, "consolidate")
        _run(vault, "pause", "--reason", "a meeting")
        _run(vault, "resume")
        (tmp_path / "m.csv").write_text("content,tags\nLikes long walks,outdoors\n", "utf-8")
        _run(vault, "import", "csv", str(tmp_path / "m.csv"))
        _run(vault, "forget", mid)
        _run(vault, "restore", mid)
        _run(vault, "views", "install")
        _run(vault, "source", "add", "About me.md")
        _run(vault, "source", "remove", "About me.md")
        _run(vault, "ingest", str(transcript))
        transcript.write_text("".join(lines), "utf-8")
        _run(vault, "ingest", str(transcript))
        _run(vault, "export", "-o", str(tmp_path / "e.json"))
        _run(vault, "export", "--format", "markdown", "-o", str(vault / "Exports"))
        _run(vault, "views", "remove")
    other_vault = tmp_path / "other"
    other_vault.mkdir()
    with WriteLog(other_vault) as imported:
        _run(other_vault, "import", "json", str(tmp_path / "e.json"))
    events = log.events + imported.events
    kinds = {e for e, _ in events}
    assert {"open", "os.rename", "os.mkdir", "os.remove"} <= kinds, kinds  # the log saw writes of every kind
    unexplained = [(e, p) for e, p in events if not approvals.explains(e, p)]
    assert not unexplained, unexplained
    assert any(p.endswith(".jsonl") for _, p in events)  # the history log too


def test_a_write_around_the_gate_is_caught(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above can fail: a note written without the gate is unexplained."""
    approvals = Approvals(monkeypatch)
    with WriteLog(vault) as log:
        Gate(vault, "Memory", "Memory/.memvault/history", TYPES).write("Memory/semantic/a.md", b"a\n", Kind.MEMORY)
        (vault / "Memory/semantic/b.md").write_text("b\n", "utf-8")
    unexplained = [p for e, p in log.events if not approvals.explains(e, p)]
    assert unexplained == [os.path.realpath(vault / "Memory/semantic/b.md")]


# -- the rules ----------------------------------------------------------------------------


@pytest.fixture
def gate(vault: Path) -> Gate:
    return Gate(vault, "Memory", "Memory/.memvault/history", TYPES)


@pytest.mark.parametrize(("rel", "kind", "why"), [
    (".obsidian/plugins/x/main.js", Kind.EXPORT, "hidden"),
    (".obsidian/community-plugins.md", Kind.NOTE, "hidden"),
    (".git/hooks/pre-commit.md", Kind.NOTE, "hidden"),
    ("Notes/.hidden.md", Kind.NOTE, "hidden"),
    ("Memory/.memvault/history/evil.jsonl", Kind.MEMORY, "history"),
    ("Memory/.memvault/history/evil.md", Kind.NOTE, "history"),
    ("Memory/.memvault/other.md", Kind.NOTE, "hidden"),
    ("Memory/semantic/x.jsonl", Kind.MEMORY, ".md"),
    ("Memory/x.md", Kind.MEMORY, "<type>"),
    ("Memory/semantic/sub/x.md", Kind.MEMORY, "<type>"),
    ("Projects/x.md", Kind.MEMORY, "<type>"),
    ("Memory/recipes/x.md", Kind.MEMORY, "<type>"),
    ("Memory/episodic/x.md", Kind.SESSION, "sessions"),
    ("Memory/semantic/Memories.base", Kind.VIEW, "view"),
    ("Other/x (conflict).md", Kind.CONFLICT, "beside"),
    (".trash/sub/x.md", Kind.TRASH, "trash"),
    ("Memory/.memvault/history/sub/x.jsonl", Kind.HISTORY, "history"),
    ("Memory/.memvault/history/.x.jsonl", Kind.HISTORY, "history"),
    ("Imports/../x.md", Kind.IMPORTED, "plain"),
    ("../outside.md", Kind.NOTE, "plain"),
    ("/etc/passwd.md", Kind.NOTE, "inside the vault"),
    ("a//b.md", Kind.NOTE, "plain"),
    ("Other/doc.md", Kind.IMPORTED, "import folder"),
])
def test_a_path_out_of_its_place_is_refused(gate: Gate, vault: Path, rel: str, kind: Kind, why: str) -> None:
    with pytest.raises(WriteRefused, match="not written") as raised:
        gate.write(rel, b"x\n", kind, near="Notes/x.md", folder="Imports")
    assert why in str(raised.value) and str(raised.value).startswith(rel if rel.strip("/") else "")
    assert [p for p in vault.rglob("*")] == []  # not even a folder


@pytest.mark.parametrize(("rel", "kind"), [
    ("Memory/semantic/a.md", Kind.MEMORY),
    ("Projects/deep/a.md", Kind.NOTE),
    ("Projects/deep/a (conflict 1).md", Kind.CONFLICT),
    ("Memory/episodic/sessions/2026 chat.md", Kind.SESSION),
    ("Imports/Claude/doc.md", Kind.IMPORTED),
    ("Memory/Memories.base", Kind.VIEW),
    (".trash/a.md", Kind.TRASH),
    ("Memory/.memvault/history/dev.jsonl", Kind.HISTORY),
    ("Exports/a.csv", Kind.EXPORT),
])
def test_each_kind_in_its_place_is_written(gate: Gate, vault: Path, rel: str, kind: Kind) -> None:
    assert gate.write(rel, b"x\n", kind, near="Projects/deep/a.md", folder="Imports")
    assert (vault / rel).read_bytes() == b"x\n"


def test_a_folder_symlinked_out_of_the_vault_is_refused(gate: Gate, vault: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (vault / "Linked").symlink_to(outside, target_is_directory=True)
    (vault / "Memory").symlink_to(outside, target_is_directory=True)
    for rel, kind in (("Linked/a.md", Kind.NOTE), ("Linked/new/deeper/a.md", Kind.NOTE),
                      ("Memory/semantic/a.md", Kind.MEMORY), ("Memory/.memvault/history/d.jsonl", Kind.HISTORY)):
        with pytest.raises(WriteRefused, match="leads outside the vault|history folder"):
            gate.write(rel, b"x\n", kind)
    assert list(outside.iterdir()) == []


def test_a_symlink_inside_the_vault_to_a_hidden_folder_is_refused(gate: Gate, vault: Path) -> None:
    (vault / ".git" / "hooks").mkdir(parents=True)
    (vault / "Hooks").symlink_to(vault / ".git" / "hooks", target_is_directory=True)
    (vault / "Logs").symlink_to(vault / "Memory" / ".memvault" / "history", target_is_directory=True)
    with pytest.raises(WriteRefused, match="'.git' is hidden"):
        gate.write("Hooks/pre-commit.md", b"x\n", Kind.NOTE)
    with pytest.raises(WriteRefused, match="history"):
        gate.write("Logs/x.md", b"x\n", Kind.NOTE)
    assert list((vault / ".git" / "hooks").iterdir()) == []


def test_a_history_log_is_never_appended_through_a_symlink(gate: Gate, vault: Path, tmp_path: Path) -> None:
    target = tmp_path / "bashrc"
    target.write_text("original\n", "utf-8")
    (vault / "Memory/.memvault/history").mkdir(parents=True)
    (vault / "Memory/.memvault/history/dev.jsonl").symlink_to(target)
    with pytest.raises((WriteRefused, OSError)):
        gate.append_log("Memory/.memvault/history/dev.jsonl", [b"{}\n"])
    assert target.read_text("utf-8") == "original\n"


def test_a_folder_swapped_for_a_symlink_after_the_check_is_caught(gate: Gate, vault: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The primitive checks its temp file's real folder again: a folder
    replaced by a symlink out of the vault between the gate's look and the
    write is refused, and nothing lands outside."""
    from memvault.vault_io import atomic

    outside = tmp_path / "outside"
    outside.mkdir()
    (vault / "Notes").mkdir()
    real = atomic.atomic_write

    def swapped(path: Path, data: bytes, **kw: object) -> bool:
        (vault / "Notes").rename(vault / "Moved")
        (vault / "Notes").symlink_to(outside, target_is_directory=True)
        return real(path, data, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(atomic, "atomic_write", swapped)
    with pytest.raises(OutsideVaultError, match="leads outside the vault"):
        gate.write("Notes/a.md", b"x\n", Kind.NOTE)
    assert list(outside.iterdir()) == []


def test_create_writes_a_new_file_and_never_replaces_one(gate: Gate, vault: Path) -> None:
    """``create`` is for a name memvault chose as free: a file there (also a
    symlink, even one leading nowhere) keeps its bytes, and nothing is left."""
    assert gate.create("Memory/semantic/new.md", b"new\n", Kind.MEMORY)
    assert (vault / "Memory/semantic/new.md").read_bytes() == b"new\n"
    mine = write(vault, "Memory/semantic/mine.md", "mine\n")
    assert not gate.create("Memory/semantic/mine.md", b"ours\n", Kind.MEMORY)
    assert mine.read_bytes() == b"mine\n"
    (vault / "Memory/semantic/link.md").symlink_to(vault / "Notes" / "nowhere.md")
    assert not gate.create("Memory/semantic/link.md", b"ours\n", Kind.MEMORY)
    assert not (vault / "Notes").exists()
    assert sorted(p.name for p in (vault / "Memory/semantic").iterdir()) == ["link.md", "mine.md", "new.md"]
    with pytest.raises(WriteRefused):
        gate.create(".obsidian/x.md", b"x", Kind.NOTE)


def test_a_move_never_replaces_a_file_made_after_its_look(gate: Gate, vault: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A move looks for a file at its destination, then renames: a note made
    there in between (the look is made to miss it) keeps its bytes."""
    from memvault.vault_io import atomic

    src = write(vault, "Memory/semantic/a.md", "ours\n")
    mine = write(vault, "Memory/procedural/a.md", "mine\n")
    monkeypatch.setattr(atomic.Folder, "mode", lambda self, name: None)
    with pytest.raises(FileExistsError):
        gate.move("Memory/semantic/a.md", "Memory/procedural/a.md", Kind.NOTE)
    assert mine.read_bytes() == b"mine\n" and src.read_bytes() == b"ours\n"
