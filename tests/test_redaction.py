"""Redaction of secrets in prose and in ordinary notes (issue 19, items 2 and 3).

What :func:`redact` cuts (only the value: the rest of the sentence and of the
line stay, and nothing crosses a line), what it leaves (prose that merely
names a password or a key), and, end to end, that a credential in an
ordinary note, in a memory source or in a note's file name never leaves
memvault: not from CLI ``search --json``, ``context --what all``, ``show``
(unless ``--reveal``), ``list``/``recent``, the prompt hook, nor from the
MCP tools and resources (a real MCP client); and the note's file is never
rewritten for it.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from helpers import opened, write
from hypothesis import assume, given
from hypothesis import strategies as st

from memvault.cli.main import cli
from memvault.store.embedding import vectors
from memvault.store.queries.search import SearchQuery
from memvault.vault_io.facts import extract_facts
from memvault.vault_io.parser import parse_note
from memvault.vault_io.secrets import REDACTED, looks_secret, redact, redact_tree

# Fake credentials (not real keys), built by concatenation so that secret
# scanners reading this file do not take them for leaks.
GHP = "ghp_" + "Zy4xWv7uTs0rQp3oNm6lKj9iHg2fEd5cBa8Z"
AWS_SECRET = "q7Lm2Np9Rs4Tv6Wx8Yz1/" + "Ab3Cd5Ef7Gh9Ij0Kl2M"  # 40 characters
SUDO = "Tr0ub4dor&3"


# -- the issue's examples, word for word ------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("my sudo password is Tr0ub4dor&3", "my sudo password is [redacted]"),
        ("my email password is sunshine", "my email password is [redacted]"),  # a plain word, said to be one
        ("The wifi passcode was lighthouse.", "The wifi passcode was [redacted]."),
        ("The db password: Pa55w0rd-xyz. The release branch is called rel/2026.",
         "The db password: [redacted]. The release branch is called rel/2026."),
        ("api key: " + "k3y-" + "9d8c7b6a5f", "api key: [redacted]"),
        ("the password is " + "hunter2!x", "the password is [redacted]"),
        ("AWS secret " + AWS_SECRET + " is in the vault", "AWS secret [redacted] is in the vault"),
        (GHP, REDACTED),
    ],
)
def test_the_issues_examples(text: str, expected: str) -> None:
    assert redact(text)[0] == expected


@pytest.mark.parametrize("token", [
    GHP, "github_pat_" + "11ABCDEFG0123456789_abcdefghijKLMNOPQRSTuvwxyz0123456789",
    "sk-" + "Xy12Ab34Cd56Ef78Gh90Ij12Kl34", "AKIA" + "Z7Y6X5W4V3U2T1S0", "xoxb-" + "2468013579-Ab12Cd34Ef56",
    "eyJhbGciOiJFUzI1NiJ9." + "eyJzdWIiOiJhbGljZSJ9." + "c2lnbmF0dXJlLWZha2UtMDEy",
])
def test_well_known_token_shapes_anywhere_in_a_sentence(token: str) -> None:
    assert redact(f"Paste ({token}) into the runner, then restart it.") == (
        "Paste ([redacted]) into the runner, then restart it.", 1)


def test_a_private_key_block_keeps_the_lines_around_it_and_its_line_count() -> None:
    text = ("Deploy key below.\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nQUJDREVGRw==\n"
            "-----END OPENSSH PRIVATE KEY-----\nRotate it yearly.")
    out, n = redact(text)
    assert n == 1 and out.split("\n") == ["Deploy key below.", REDACTED, "", "", "", "Rotate it yearly."]


def test_a_label_takes_one_value_on_the_next_line_never_a_sentence() -> None:
    """A label ending its line ("Password:", "api_key =") takes a value standing
    alone on the next line (issue 32: values on the next line leaked); a
    sentence there is prose and stays. (This test pinned the second case as
    left alone before the redactor read next lines.)"""
    text = "The deploy token:\nSecondline words stay here"
    assert redact(text) == (text, 0)
    assert redact("api_key =\n9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a") == ("api_key =\n[redacted]", 1)
    assert redact("Password:\n  - hunter2\nnext line") == ("Password:\n  - [redacted]\nnext line", 1)


# -- the same shapes in other words ------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # "<key> is <value>" in prose, a qualifier before the key.
        ("Her laptop password is Qm7#vvLp and nobody knows it.", "Her laptop password is [redacted] and nobody knows it."),
        ("The garage PIN is 4821.", "The garage PIN is [redacted]."),
        ("Our staging token was zX81-mmQ2 until Monday", "Our staging token was [redacted] until Monday"),
        ("the passphrase is: Blue7Horse!", "the passphrase is: [redacted]!"),  # the sentence's end stays
        # "<key> for <something> is <value>".
        ("The password for the old NAS is h0rse-Battery, ask Ana.",
         "The password for the old NAS is [redacted], ask Ana."),
        ("the pin to the bike lock is 0937", "the pin to the bike lock is [redacted]"),
        # "<key>: <value>": only the value, the next sentence stays.
        ("Wifi password: KqP-77x. Guests use the other network.",
         "Wifi password: [redacted]. Guests use the other network."),
        ("- token: tk_9Ab8Cd7Ef6 (rotated in May)", "- token: [redacted] (rotated in May)"),
        ("Stripe api_key = rk9-Ab3 for tests", "Stripe api_key = [redacted] for tests"),
        # An AWS secret access key after "aws" or "secret", wherever in the line.
        ("aws creds for the backup user: " + AWS_SECRET, "aws creds for the backup user: [redacted]"),
        ("secret access key " + AWS_SECRET + ".", "secret access key [redacted]."),
        # A token of a known shape anywhere.
        ("clone with " + GHP + " then push", "clone with [redacted] then push"),
        # A passphrase is words: it runs to its sentence's end.
        ("passphrase: purple monkey dishwasher. Then press enter.", "passphrase: [redacted]. Then press enter."),
        # A quoted value goes whole.
        ('password: "two words7"', 'password: "[redacted]"'),
        # A secret set or changed to a value, in prose.
        ("I set the password to Xk9#mPq2 for the router", "I set the password to [redacted] for the router"),
        ("The gmail password was changed to qwerty123 yesterday",
         "The gmail password was changed to [redacted] yesterday"),
        ("the password has been set to Tr0ub4dor&3.", "the password has been set to [redacted]."),
        ("changed my PIN to 4821 today", "changed my PIN to [redacted] today"),
        # An environment variable's PASS.
        ("DB_PASS=s3cr3tpw99", "DB_PASS=[redacted]"),
        # "<key> for <something>: <value>" is an assignment, also of a plain word.
        ("Password for wifi: BlueSky#77", "Password for wifi: [redacted]"),
        ("- Password for the router: sunshine", "- Password for the router: [redacted]"),
        ("PIN for the gate: 4821 (ask Ana)", "PIN for the gate: [redacted] (ask Ana)"),
        # A code that opens something.
        ("I set the alarm code to Kq8#2zzp.", "I set the alarm code to [redacted]."),
        ("The door code is 4821, ask Ana.", "The door code is [redacted], ask Ana."),
        ("Recovery codes: abcd-1234-efgh", "Recovery codes: [redacted]"),
        # Words joined into one are a passphrase, not a word.
        ("the password is correct-horse-battery-staple.", "the password is [redacted]."),
    ],
)
def test_only_the_value_is_cut(text: str, expected: str) -> None:
    out, n = redact(text)
    assert (out, n) == (expected, 1)
    assert redact(out) == (out, 0)  # idempotent


@pytest.mark.parametrize(
    "text",
    [
        "the key is to stay calm",
        "the password policy is strict",
        "The token is valid until Friday.",
        "The secret is patience, and the key is practice.",
        "Your PIN is required at the door",
        "The private key was compromised last year",
        "The password for the guest network is posted on the fridge",
        "key: the main idea",
        "token: see the wiki page",
        "`passwd` : Stores user account information",
        "the api key is <your key here>",
        "client_secret=CLIENT_SECRET",
        "the key is 42",
        "Shortcut key: Ctrl+Shift+P",
        "The token is JWT-based",
        "the password is in 1Password",
        "the key for this host is ~/.ssh/id_ed25519",
        "The key is https://example.com/keys",
        "the secret is café crème",
        "the password was changed to meet policy",
        "The PIN was reset to the default",
        "Set the token to expire in 2025",
        "my password is set to expire on 2026-01-01",
        "Boarding pass: 12B",
        "Password for the guest network: posted on the fridge",
        "Token for the API: see the wiki",
        "the password is up-to-date",
        "the password is required for every login",
        "The secret of good bread is patience",
        "error code: 1234",
        "zip code: 90210",
        "The gate code is on the fridge",
        "the source code is clean",
    ],
)
def test_prose_that_names_a_secret_is_left(text: str) -> None:
    assert redact(text) == (text, 0)


@pytest.mark.parametrize(
    ("value", "secret"),
    [("Tr0ub4dor&3", True), ("4821", True), ("pAssw0rd", True), ("hunter2", True), ("JavaScript", True),
     ("strict", False), ("Calm", False), ("well-known", False), ("NASA", False), ("abc", False), ("****", False)],
)
def test_looks_secret_is_about_character_classes(value: str, secret: bool) -> None:
    assert looks_secret(value) is secret


def test_a_remember_that_beside_a_password_is_still_a_fact() -> None:
    note = "---\nmemory: source\n---\n- Router password: Qx7-pl0p. Remember that the router reboots at 4am.\n"
    ex = extract_facts(parse_note("Home.md", note.encode()), "n")
    texts = " | ".join(f.text for f in ex.facts)
    assert "Qx7-pl0p" not in texts and "router reboots at 4am" in texts, texts


def test_redact_tree_reads_a_key_as_a_label_and_decodes_links() -> None:
    data = {"properties": {"password": "hunter22", "wifi": ["pin is 4821"], "n": 3},
            "path": "Notes/Router password is Zq9!mmx.md",
            "uri": "obsidian://open?vault=v&file=Notes%2FRouter%20password%20is%20Zq9%21mmx"}
    out = redact_tree(data)
    assert out["properties"] == {"password": REDACTED, "wifi": ["pin is [redacted]"], "n": 3}
    assert "Zq9" not in json.dumps(out) and "Router password is [redacted]" in out["path"]


# -- properties ------------------------------------------------------------------------

_PLAIN = st.sampled_from([
    "the", "key", "password", "token", "secret", "pin", "passphrase", "is", "was", "for", "to", "of", "policy",
    "calm", "strict", "valid", "Monday", "Ana", "garage", "and", "we", "NASA", "well-known", "don't", "aws",
])
_SEP = st.sampled_from([" ", " ", " ", ", ", ". ", "\n", "; ", " - ", "? "])


@st.composite
def _prose(draw: st.DrawFn, min_size: int = 1) -> str:
    """Prose of plain words (secret words among them, but no secret-shaped value)."""
    words = draw(st.lists(_PLAIN, min_size=min_size, max_size=14))
    out = words[0]
    for w in words[1:]:
        out += draw(_SEP) + w
    return out


# "my password is sunshine" is a password said in prose (a plain word ending
# its clause after "password is"), and "the passphrase is purple monkey" a
# passphrase of content words (issue 32): generated prose may say either by chance.
_SAID_PASSWORD = re.compile(
    r"(?i)pass(?:word|phrase)(?: |, )(?:is|was)(?: |, )\w+(?:$|[.?;\n]|, )|passphrase(?: |, )(?:is|was|-)(?: |, )\S+ \S+"
)


@given(_prose())
def test_text_without_a_secret_shape_is_never_changed(text: str) -> None:
    assume(not _SAID_PASSWORD.search(text))
    assert redact(text) == (text, 0)


_SECRET_SHAPES = st.sampled_from([
    "password: {v}", "my password is {v}", "the PIN for the gate is {v}", "api key: {v}", "token = {v}",
    "secret is {v}", "{gh}", "aws {aws}", "I set the wifi password to {v}", "Password for the NAS: {v}",
])
_VALUE = st.text(alphabet="abcdefghkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789!#%&-", min_size=6, max_size=14).filter(
    lambda s: any(c.isdigit() for c in s) and any(c.isalpha() for c in s) and s[-1] not in "!"
)


@given(st.lists(st.one_of(_prose().map(lambda t: ("plain", t.replace("\n", " "))),
                          st.tuples(_prose(), _SECRET_SHAPES, _VALUE, _prose()).map(
                              lambda p: ("secret", p[0].replace("\n", " "), p[1], p[2], p[3].replace("\n", " ")))),
                min_size=1, max_size=6))
def test_a_secret_never_costs_text_on_another_line_or_around_it(lines: list[tuple[str, ...]]) -> None:
    assume(not any(_SAID_PASSWORD.search(" . ".join(line[1:])) for line in lines))
    texts, values = [], []
    for line in lines:
        if line[0] == "plain":
            texts.append(line[1])
            continue
        _, before, shape, value, after = line
        secret = shape.format(v=value, gh=GHP, aws=AWS_SECRET)
        values.append(value if "{v}" in shape else GHP if "{gh}" in shape else AWS_SECRET)
        texts.append(f"{before}. {secret} . {after}")
    out, n = redact("\n".join(texts))
    out_lines = out.split("\n")
    assert len(out_lines) == len(texts)
    assert n == len(values)
    for text, got, line in zip(texts, out_lines, lines):
        if line[0] == "plain":
            assert got == text  # a line without a secret is untouched
        else:
            before, after = line[1], line[4]
            assert got.startswith(before + ". ") and got.endswith(" . " + after), (text, got)
    for value in values:
        assert value not in out
    assert redact(out) == (out, 0)  # nothing left to find


# -- end to end: a credential in notes never leaves memvault -----------------------------

ORDINARY = f"# Deploy notes\n\nThe CI pushes with {GHP} every night.\nThe release branch is rel/2026.\n"
SOURCE = (
    "---\nmemory: source\n---\n# Home admin\n\n"
    f"- The NAS admin token is {GHP} for the backup job.\n"
    f"- My sudo password is {SUDO} on the workstation.\n"
    "- The backup job runs every night at two.\n"
)
NAMED = "Notes/Router password is Zq9!mmx.md"
SECRETS = (GHP, SUDO, "Zq9!mmx", "Zq9%21mmx")


def run(vault: Path, *args: str, input: str | None = None) -> Any:
    r = CliRunner().invoke(cli, ["--vault", str(vault), *args], input=input)
    assert r.exit_code == 0, r.output
    return r


def assert_no_secret(where: str, text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, (where, secret, text[:2000])


@pytest.fixture
def secret_vault(vault: Path) -> Path:
    write(vault, "Ops/Deploy.md", ORDINARY)
    write(vault, "Home admin.md", SOURCE)
    write(vault, NAMED, "---\nmemory: source\nwifi: guests\n---\n- The router sits in the hall cupboard.\n")
    run(vault, "sync", "--no-embed")
    return vault


def test_the_index_holds_no_credential(secret_vault: Path) -> None:
    typed = {p: p.read_bytes() for p in secret_vault.rglob("*.md")}
    with opened(secret_vault) as store:
        con = store.con
        vectors.rechunk(con, [r[0] for r in con.execute("SELECT rowid FROM traces")])
        # A note's properties are indexed (a fact's metadata holds its source's
        # path, an identifier like the files table's; answers redact it).
        texts = [" ".join(str(c) for c in row) for row in con.execute(
            "SELECT title, content, CASE WHEN kind = 'note' THEN metadata END FROM traces")]
        fact_titles = [t for (t,) in con.execute("SELECT title FROM traces WHERE kind = 'fact'")]
        assert "Router password is [redacted]" in fact_titles  # a fact's title: its note's file name
        texts += [" ".join(str(c) for c in row) for row in con.execute("SELECT * FROM traces_fts")]
        texts += [t for _, t in vectors.chunk_texts(con, [r[0] for r in con.execute("SELECT id FROM chunks")]).values()]
        assert texts and any("rel/2026" in t for t in texts)  # the rest of the note is there
        assert_no_secret("index", "\n".join(texts))
        facts = [f for f in store.facts("Home admin.md").facts]
        assert any("backup job runs" in f.text for f in facts)
    assert {p: p.read_bytes() for p in secret_vault.rglob("*.md")} == typed  # never rewritten


def test_the_cli_never_prints_a_credential_unless_revealed(secret_vault: Path) -> None:
    for query in ("CI pushes every night", "NAS admin token backup", "sudo password workstation", "router hall"):
        r = run(secret_vault, "search", query, "--json", "--mode", "keyword")
        assert r.output.strip(), query
        assert_no_secret(f"search {query}", r.output)
    hits = [json.loads(line) for line in run(secret_vault, "search", "CI pushes", "--json").output.splitlines()]
    assert any("[redacted]" in h["snippet"] + h["passage"] for h in hits)
    for message in ("how does the CI push every night?", "what is the sudo password on the workstation?",
                    "where is the router?"):
        r = run(secret_vault, "context", message, "--what", "all", "--json")
        assert_no_secret(f"context {message}", r.output)
    for args in (("list", "--what", "all", "--json"), ("recent", "--json"), ("show", "Ops/Deploy.md"),
                 ("show", "Home admin.md", "--json"), ("show", NAMED, "--json"), ("backlinks", "Ops/Deploy.md")):
        assert_no_secret(" ".join(args), run(secret_vault, *args).output)
    assert "[redacted]" in run(secret_vault, "show", "Ops/Deploy.md").output
    revealed = run(secret_vault, "show", "Ops/Deploy.md", "--reveal").output
    assert GHP in revealed and "rel/2026" in revealed
    assert SUDO in json.loads(run(secret_vault, "show", "Home admin.md", "--reveal", "--json").output)["content"]


def test_the_prompt_hook_never_prints_a_credential(secret_vault: Path) -> None:
    prompt = {"session_id": "s1", "hook_event_name": "UserPromptSubmit", "cwd": str(secret_vault)}
    printed = ""
    for message in ("what token does the CI push with every night?", "sudo password on the workstation",
                    "NAS admin token for the backup job"):
        r = run(secret_vault, "hook", "prompt", "--what", "all", "--timeout", "120",
                input=json.dumps(dict(prompt, prompt=message)))
        printed += r.output
    assert "[redacted]" in printed  # something was recalled, redacted
    assert_no_secret("hook prompt", printed)


def test_mcp_tools_and_resources_never_answer_a_credential(secret_vault: Path) -> None:
    pytest.importorskip("mcp")
    from mcp import Client

    from memvault.cli.mcp_server import build_server

    with opened(secret_vault) as store:
        async def main() -> list[str]:
            out: list[str] = []
            async with Client(build_server(store), mode="legacy") as c:
                calls = [("search", {"query": q, "mode": "keyword"}) for q in ("CI pushes", "sudo password", "router")]
                calls += [("read", {"path": p}) for p in ("Ops/Deploy.md", "Home admin.md", NAMED)]
                calls += [("recent", {}), ("list", {"what": "all"}), ("links", {"id": "Ops/Deploy.md"}),
                          ("context", {"message": "what token does the CI push with?", "what": "all"})]
                for name, args in calls:
                    result = await c.call_tool(name, args)
                    assert not result.is_error, (name, result.content)
                    out.append(result.content[0].text + json.dumps(result.structured_content))
                ids = []
                for query in ("sudo password", "router hall cupboard"):
                    found = await c.call_tool("search", {"query": query, "mode": "keyword"})
                    ids += [h["id"] for h in found.structured_content["hits"]]
                assert any(i.startswith("f-") for i in ids)
                for i in ids:
                    out.append(json.dumps((await c.call_tool("read", {"id": i})).structured_content))
                resource = await c.read_resource("memvault://note/Ops/Deploy.md")
                out.append(json.dumps([getattr(x, "text", "") for x in resource.contents]))
            return out

        answers = asyncio.run(main())
    assert any("[redacted]" in a for a in answers) and any("rel/2026" in a for a in answers)
    for answer in answers:
        assert_no_secret("mcp", answer)


def test_exports_made_to_share_hold_no_credential(vault: Path, tmp_path: Path) -> None:
    # With its id and created, as memvault leaves a memory note after it first reads one.
    typed = ("---\nid: m-0a1b2c3d4e5f\ncreated: '2026-01-02T03:04:05+00:00'\ntype: semantic\napi_key: k3y-9d8c7b6a5f\n"
             "---\nThe office wifi password is Qm7#vvLp for guests.\n")
    write(vault, "Memory/semantic/Office pin is 4821x.md", typed)
    run(vault, "sync", "--no-embed")
    secrets = ("k3y-9d8c7b6a5f", "Qm7#vvLp", "4821x")
    csv_text = run(vault, "export", "--format", "csv").output
    assert "for guests" in csv_text
    for fmt in ("markdown", "obsidian"):
        folder = tmp_path / fmt
        run(vault, "export", "--format", fmt, "--output", str(folder))
        notes = list(folder.rglob("*.md"))
        assert len(notes) == 1 and notes[0].name == "Office pin is [redacted].md"
        shared = csv_text + notes[0].read_text() + notes[0].name
        for secret in secrets:
            assert secret not in shared, (fmt, secret)
    # The lossless export is a backup: it keeps the note as typed (and says so in its docs).
    assert typed in json.loads(run(vault, "export", "--format", "json").output)["memory"][0]["note"]
    assert (vault / "Memory/semantic/Office pin is 4821x.md").read_text() == typed


def test_a_remember_that_beside_a_password_in_a_conversation_is_kept(vault: Path, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    said = f"My sudo password is {SUDO}. Remember that the NAS backs up at 2am."
    monkeypatch.setenv("MEMVAULT_TRANSCRIPT_DIRS", str(tmp_path))  # the end hook reads only the clients' folders
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(json.dumps({
        "type": "user", "sessionId": "s-redact", "timestamp": "2026-11-23T10:00:00Z",
        "message": {"role": "user", "content": said}}) + "\n")
    end = {"session_id": "s-redact", "hook_event_name": "SessionEnd", "transcript_path": str(transcript)}
    run(vault, "hook", "session-end", "--timeout", "120", input=json.dumps(end))
    notes = list(vault.rglob("*.md"))
    assert len(notes) == 1 and "the NAS backs up at 2am" in notes[0].read_text()
    assert SUDO not in notes[0].read_text()  # redacted before it was written
    with opened(vault) as store:
        store.sync()
        facts = store.facts(notes[0].relative_to(vault).as_posix()).facts
    assert any("NAS backs up at 2am" in f.text for f in facts), facts


def test_an_index_from_before_reads_its_notes_again_redacted(vault: Path) -> None:
    """m012: an index built when ordinary notes were indexed as typed."""
    from memvault.store.db.connection import write_transaction
    from memvault.store.db.index_schema import MIGRATIONS, m012_redact_notes

    write(vault, "Ops/Deploy.md", ORDINARY)
    body = ORDINARY  # no front-matter: the body is the file
    with opened(vault) as store:
        store.sync()
        with write_transaction(store.con):  # as the older version indexed it
            store.con.execute("UPDATE traces SET content = ? WHERE path = 'Ops/Deploy.md'", (body,))
        store.con.execute(f"PRAGMA user_version = {MIGRATIONS.index(m012_redact_notes)}")  # m012 not applied
    with opened(vault) as store:
        store.sync()
        content = store.con.execute("SELECT content FROM traces WHERE path = 'Ops/Deploy.md'").fetchone()[0]
        assert GHP not in content and "rel/2026" in content
        assert store.search(SearchQuery(GHP[4:], mode="keyword")).to_json()["hits"] == []
