"""`memvault context`: the recall block for a prompt, its budget, and recall feedback."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixtures.retrieval import support

from memvault.cli.main import cli
from memvault.store.embedding.model import count_tokens
from memvault.store.memory_store import MemoryStore
from memvault.store.retrieval.recall import HEADER, RecallItem, assemble

MESSAGE = "the checkout keeps failing with SSL handshake errors, what happened last time?"


@pytest.fixture(scope="module")
def labelled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return support.session_vault(tmp_path_factory.mktemp("labelled"))


@pytest.fixture
def own_vault(tmp_path: Path, memvault_env: Path) -> Path:
    """A private, writable copy of the labelled vault (vectors from the shipped cache)."""
    root = tmp_path / "vault"
    shutil.copytree(support.VAULT, root)
    support.build(root)
    return root


def run(root: Path, *args: str):
    return CliRunner().invoke(cli, ["--vault", str(root), "context", *args])


def test_block_has_the_relevant_memories_and_no_unrelated_identity(own_vault: Path) -> None:
    r = run(own_vault, MESSAGE, "--no-record")
    assert r.exit_code == 0, r.output
    lines = r.stdout.strip().splitlines()
    assert lines[0] == HEADER
    assert not any(line.startswith("- [identity]") for line in lines)  # neither relevant nor pinned
    body = "\n".join(lines[1:])
    assert "certificate had expired" in body and "(m-epi-outage)" in body  # a note by its name, not its folders
    assert "Renew the TLS certificates" in body
    assert "oat milk" not in r.stdout  # unrelated memories stay out


def test_budget_holds_in_tokens(own_vault: Path) -> None:
    for budget in (25, 40, 60, 120, 800):
        r = run(own_vault, MESSAGE, "--budget", str(budget), "--json", "--no-record")
        data = json.loads(r.stdout)
        assert data["budget"] == budget
        if data["text"]:
            assert count_tokens([data["text"]])[0] == data["tokens"] <= budget
        assert data["tokens"] <= budget
    small = json.loads(run(own_vault, MESSAGE, "--budget", "25", "--json", "--no-record").stdout)
    big = json.loads(run(own_vault, MESSAGE, "--budget", "800", "--json", "--no-record").stdout)
    assert len(small["items"]) < len(big["items"])


def test_nothing_relevant_prints_nothing(own_vault: Path) -> None:
    for message in ("who won the football world cup in 1998", "mortgage refinancing interest rates"):
        r = run(own_vault, message)
        assert r.exit_code == 0 and r.stdout == ""
        data = json.loads(run(own_vault, message, "--json").stdout)
        assert data == {"text": "", "tokens": 0, "budget": 800, "items": []}


def test_recall_feedback_updates_the_index_only(own_vault: Path) -> None:
    note = own_vault / "Memory" / "episodic" / "m-epi-outage.md"
    before = note.read_bytes(), note.stat().st_mtime_ns
    data = json.loads(run(own_vault, MESSAGE, "--json").stdout)
    ids = [i["id"] for i in data["items"]]
    assert "m-epi-outage" in ids
    run(own_vault, MESSAGE)
    v = MemoryStore.open(str(own_vault))
    count, last, strength = v.con.execute(
        "SELECT retrieval_count, last_access, strength FROM traces WHERE id = 'm-epi-outage'").fetchone()
    assert count == 2 and last and strength == pytest.approx(0.54)
    untouched = v.con.execute("SELECT retrieval_count FROM traces WHERE id = 'm-sem-coffee'").fetchone()[0]
    assert untouched == 0
    v.close()
    assert (note.read_bytes(), note.stat().st_mtime_ns) == before
    # --no-record leaves the counts alone
    run(own_vault, MESSAGE, "--no-record")
    v = MemoryStore.open(str(own_vault))
    assert v.con.execute("SELECT retrieval_count FROM traces WHERE id = 'm-epi-outage'").fetchone()[0] == 2
    v.close()


def test_strength_caps_at_one(own_vault: Path) -> None:
    from memvault.store.retrieval.recall import record_recall

    v = MemoryStore.open(str(own_vault))
    v.con.execute("UPDATE traces SET strength = 0.99 WHERE id = 'm-sem-db'")
    record_recall(v.con, ["m-sem-db", "m-sem-db"])
    assert v.con.execute("SELECT strength FROM traces WHERE id = 'm-sem-db'").fetchone()[0] == 1.0
    v.close()


def test_search_record_flag(own_vault: Path) -> None:
    r = CliRunner().invoke(cli, ["--vault", str(own_vault), "search", "which database do we use for new services",
                                 "--what", "memories", "--record", "--json"])
    assert r.exit_code == 0
    v = MemoryStore.open(str(own_vault))
    assert v.con.execute("SELECT retrieval_count FROM traces WHERE id = 'm-sem-db'").fetchone()[0] == 1
    v.close()


def test_assemble_cuts_a_long_item_at_a_word_boundary() -> None:
    long = RecallItem("a", "memory", "semantic", "t", "a.md", "word " * 200)
    short = RecallItem("b", "fact", "semantic", "Note > H", "n.md", "Deploys happen on Fridays.")
    text, items = assemble([], [long, short], 50)
    assert [i.id for i in items] == ["a"]  # the best item, cut to the room it has
    assert count_tokens([text])[0] <= 50
    line = text.splitlines()[1]
    assert line.startswith("- [semantic] word word") and line.endswith("word… (a)")
    text, items = assemble([], [long, short], 800)
    assert [i.id for i in items] == ["a", "b"]
    assert count_tokens([items[0].text])[0] <= 120  # no single item takes more than ITEM_MAX_TOKENS
    assert "- [fact] Deploys happen on Fridays. (Note > H)" in text


def test_assemble_skips_a_lesser_item_for_a_shorter_one_after_it() -> None:
    best = RecallItem("a", "fact", "semantic", "Note > H", "n.md", "Deploys happen on Fridays.")
    long = RecallItem("b", "memory", "semantic", "t", "Memory/semantic/a-long-winded-note-name.md", "word " * 200)
    short = RecallItem("c", "fact", "semantic", "Note > H", "n.md", "Rollback keeps the previous image.")
    head_and_best = count_tokens([f"{HEADER}\n- [fact] Deploys happen on Fridays. (Note > H)"])[0]
    # room for "c" whole, not for four words of "b" beside it
    budget = head_and_best + count_tokens(["- [fact] Rollback keeps the previous image. (Note > H)"])[0]
    text, items = assemble([], [best, long, short], budget)
    assert [i.id for i in items] == ["a", "c"]
    assert count_tokens([text])[0] <= budget


def test_identity_alone_is_not_relevance_but_a_relevant_identity_is() -> None:
    lang = RecallItem("m-lang", "memory", "identity", "t", "Memory/identity/lang.md", "Speaks Portuguese and English.")
    role = RecallItem("m-role", "memory", "identity", "t", "Memory/identity/role.md", "Works as a backend engineer.")
    assert assemble([lang, role], [], 800) == ("", [])
    text, items = assemble([lang, role], [lang], 800)
    assert [i.id for i in items] == ["m-lang", "m-role"]  # shown once, identity order kept
    assert text.splitlines()[1:] == [
        "- [identity] Speaks Portuguese and English. (lang)",
        "- [identity] Works as a backend engineer. (role)",
    ]


def test_context_for_a_message_only_an_identity_memory_answers(own_vault: Path) -> None:
    """The audit's bug: the identity memory was the only relevant hit (search
    has it at #1 over the floor) and context came back empty."""
    message = "which languages do I speak"
    hits = CliRunner().invoke(cli, ["--vault", str(own_vault), "search", message, "--what", "memories", "--json", "--explain"])
    top = json.loads(hits.stdout.splitlines()[0])
    assert top["id"] == "m-id-lang" and top["explain"]["vector_similarity"] >= 0.3
    data = json.loads(run(own_vault, message, "--json", "--no-record").stdout)
    assert "m-id-lang" in [i["id"] for i in data["items"]] and "- [identity] Speaks Portuguese" in data["text"]
    data = json.loads(run(own_vault, message, "--what", "memories", "--json", "--no-record").stdout)
    assert data["text"].startswith(HEADER + "\n- [identity] Speaks Portuguese")


def test_small_budget_keeps_the_relevant_item(own_vault: Path) -> None:
    """At --budget 45 identity took 40% first and the relevant 34-token line
    no longer fitted: the block came back empty."""
    message = "how do I deploy the billing service"
    for budget in (24, 30, 45, 60):  # 24: the header and "- [procedural] To… (its path)"
        data = json.loads(run(own_vault, message, "--budget", str(budget), "--json", "--no-record").stdout)
        assert "m-proc-deploy" in [i["id"] for i in data["items"]], budget
        assert count_tokens([data["text"]])[0] == data["tokens"] <= budget
    data = json.loads(run(own_vault, message, "--budget", "45", "--json", "--no-record").stdout)
    deploy = next(i for i in data["items"] if i["id"] == "m-proc-deploy")
    assert deploy["text"].startswith("- [procedural] To deploy the billing service")


def test_recall_strength_is_rounded_in_the_index(own_vault: Path) -> None:
    """0.56 + 0.02 in floating point is 0.5800000000000001; the index keeps 0.58."""
    from memvault.store.retrieval.recall import record_recall

    v = MemoryStore.open(str(own_vault))
    v.con.execute("UPDATE traces SET strength = 0.56 WHERE id = 'm-sem-db'")
    v.con.execute("UPDATE traces SET strength = NULL WHERE id = 'm-sem-coffee'")
    record_recall(v.con, ["m-sem-db", "m-sem-coffee"])
    strengths = dict(v.con.execute("SELECT id, strength FROM traces WHERE id IN ('m-sem-db', 'm-sem-coffee')"))
    v.close()
    assert strengths == {"m-sem-db": 0.58, "m-sem-coffee": 0.52}
    assert repr(strengths["m-sem-db"]) == "0.58"


def test_context_without_a_model_uses_content_words(own_vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """embedding.model = "none": every word of the message used to be
    required, stop words included, so "how should I test a capacitor" found
    nothing. Now the hybrid keyword lists decide (stop words dropped), ranked
    by BM25, each hit sharing at least half the message's content words."""
    from helpers import write

    monkeypatch.setenv("MEMVAULT_EMBEDDING_MODEL", "none")
    write(own_vault, "Memory/procedural/m-proc-capacitor.md", (
        "---\nid: m-proc-capacitor\ntype: procedural\nscope: user\nstrength: 0.5\n"
        "created: '2026-10-01T09:00:00+00:00'\nupdated: '2026-10-01T09:00:00+00:00'\nsource: manual\n---\n"
        "To test a capacitor, discharge it first, then measure it with the meter on its capacitance range.\n"
    ))
    v = MemoryStore.open(str(own_vault))
    v.sync()
    v.close()
    data = json.loads(run(own_vault, "how should I test a capacitor", "--json", "--no-record").stdout)
    ids = [i["id"] for i in data["items"]]
    assert ids[-1] == "m-proc-capacitor" and set(ids[:-1]) <= {"m-id-lang", "m-id-role"}
    data = json.loads(run(own_vault, "how do I deploy the billing service", "--json", "--no-record").stdout)
    assert "m-proc-deploy" in [i["id"] for i in data["items"]]
    # one shared word out of several, or stop words alone, is no relevance
    for message in ("how to change a flat tyre on a mountain bike", "what is it that you do", "mortgage refinancing interest rates"):
        r = run(own_vault, message, "--no-record")
        assert r.exit_code == 0 and r.stdout == "", message


def test_one_statement_from_several_sources_is_one_line(vault: Path) -> None:
    """Issue 19 (9): the same statement in three memory sources is three facts
    (one per source) but one line of the recall block."""
    for name in ("About me", "Profile", "Notes from onboarding"):
        (vault / f"{name}.md").write_text("---\nmemory: source\n---\n- Prefers green tea in the morning\n", "utf-8")
    (vault / "Other.md").write_text("---\nmemory: source\n---\n- Prefers green tea in the evening\n", "utf-8")
    CliRunner().invoke(cli, ["--vault", str(vault), "sync", "--no-embed"])
    out = run(vault, "green tea morning", "--what", "all")
    assert out.exit_code == 0, out.output
    lines = [ln for ln in out.output.splitlines() if "green tea in the morning" in ln]
    assert len(lines) == 1, out.output
    assert any("green tea in the evening" in ln for ln in out.output.splitlines())  # another statement stays
