"""Secret redaction: every format once, counts, and a Hypothesis property
that mixes several secrets in one line (the case that used to leak a
``password:`` value standing beside an already redacted token)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memvault.vault_io.facts import extract_facts
from memvault.vault_io.parser import parse_note
from memvault.vault_io.secrets import REDACTED, redact

# Fake credentials of each shape (not real keys). Built by concatenation so
# that secret scanners reading this file do not take them for leaks.
SK = "sk-proj-" + "abcdefghijklmnopqrstuvwxyz012345"
GHP = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"
GLPAT = "glpat-" + "Ab3dEf6hIj9kLm2nOp5q"
HF = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz01234567"
NPM = "npm_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
SLACK = "xoxb-" + "1234567890-0987654321-AbCdEfGhIjKlMnOp"
STRIPE = "sk_live_" + "51AbCdEfGhIjKlMnOp0123"
STRIPE_R = "rk_live_" + "51AbCdEfGhIjKlMnOp0123"
GOOGLE = "AIza" + "SyA-1234567890abcdefghijklmnopqrstu"
AWS_ID = "AKIA" + "IOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"
JWT = "eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0." + "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
BEARER = "abcDEF123ghiJKL456mno"


@pytest.mark.parametrize(
    ("text", "gone", "count"),
    [
        # A password value beside a token redacted first: both go.
        ("Staging server user: deploy password: hunter2horse key: " + SK, ["hunter2horse", SK], 2),
        ("- password: hunter2horse, api token " + GHP, ["hunter2horse", GHP], 2),
        (GHP + " and password: hunter2horse", ["hunter2horse", GHP], 2),
        ("password: hunter2horse " + SK, ["hunter2horse", SK], 2),
        # Markdown emphasis around the key.
        ("**password**: hunter2horse", ["hunter2horse"], 1),
        ("**Password:** hunter2horse", ["hunter2horse"], 1),
        ("`secret` = hunter2horse", ["hunter2horse"], 1),
        ("_pwd_: hunter2horse", ["hunter2horse"], 1),
        # URL passwords, also without a user and with '@' inside.
        ("redis://:mypassword@cache.local:6379/0", ["mypassword"], 1),
        ("postgres://app:p@ss@db.internal/app", ["p@ss"], 1),
        # Token formats.
        ("gitlab " + GLPAT + " here", [GLPAT], 1),
        ("hf " + HF + " here", [HF], 1),
        ("npm " + NPM + " here", [NPM], 1),
        ("slack " + SLACK + " here", [SLACK], 1),
        ("stripe " + STRIPE + " and " + STRIPE_R, [STRIPE, STRIPE_R], 2),
        ("google " + GOOGLE + " here", [GOOGLE], 1),
        ("aws " + AWS_ID + " here", [AWS_ID], 1),
        ("aws_secret_access_key = " + AWS_SECRET, [AWS_SECRET], 1),
        ("AWS secret access key: " + AWS_SECRET, [AWS_SECRET], 1),
        ("SecretAccessKey: " + AWS_SECRET, [AWS_SECRET], 1),
        ("jwt " + JWT, [JWT], 1),
        ("Authorization: Bearer " + BEARER, [BEARER], 1),
        ("authorization: bearer " + BEARER, [BEARER], 1),
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", ["dXNlcjpwYXNzd29yZA=="], 1),
        ("key: aB3dE5fG7hJ9kL1mN3pQ", ["aB3dE5fG7hJ9kL1mN3pQ"], 1),
    ],
)
def test_redacts_every_value_and_counts_each_once(text: str, gone: list[str], count: int) -> None:
    out, n = redact(text)
    for value in gone:
        assert value not in out, out
    assert n == count, out
    assert redact(out) == (out, 0)


@pytest.mark.parametrize(
    "text",
    [
        "password: ****", "password: <your password>", "token: see the wiki page",
        "The secret of good coffee is patience", "key: the main idea", "hf_hub_download is a function",
        "Authorization: required for admins", "password: [redacted]",
    ],
)
def test_placeholders_and_prose_are_left(text: str) -> None:
    assert redact(text) == (text, 0)


def test_other_keys_beside_a_password_stay_readable() -> None:
    out, n = redact("Staging server user: deploy password: hunter2horse key: " + SK)
    assert out == f"Staging server user: deploy password: {REDACTED} key: {REDACTED}" and n == 2


def test_the_repro_note_as_facts_and_its_count() -> None:
    note = "Staging server\nuser: deploy\npassword: hunter2horse\nkey: " + SK + "\n"
    ex = extract_facts(parse_note("N.md", note.encode()), "n")
    assert "hunter2horse" not in repr(ex) and SK not in repr(ex)
    assert ex.redacted == 2


def test_context_and_headings_are_redacted_and_counted() -> None:
    note = (
        "## Wifi password: hunter2horse\n"
        "- The office wifi password: correcthorse99 for guests\n"
        "  - Ask the front desk for the guest network\n"
        "> [!note] token: " + GHP + "\n"
        "> The callout body has enough words.\n\n"
        "Leaked lead-in " + SK + " here:\n"
        "- First item of the list here\n"
    )
    ex = extract_facts(parse_note("N.md", note.encode()), "n")
    text = repr(ex)
    for value in ("hunter2horse", "correcthorse99", GHP, SK, SK[:20]):
        assert value not in text, value
    # heading, parent item (once, as its own fact), callout title, lead-in
    assert ex.redacted == 4


# -- the property ------------------------------------------------------------------

_ALNUM = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
_body = st.text(alphabet=_ALNUM, min_size=36, max_size=40).filter(
    lambda s: any(c.isdigit() for c in s) and any(c.isalpha() for c in s)
)
# Passwords: one "word" that is neither a key name nor a placeholder, or
# several in quotes (an unquoted value is one token: white space ends it).
_pw_word = st.text(alphabet=_ALNUM + "!$%^&()+.?", min_size=6, max_size=14).filter(
    lambda s: any(c.isdigit() for c in s) and any(c.isalpha() for c in s)
)
_password = _pw_word | st.lists(_pw_word, min_size=2, max_size=3).map(lambda ws: '"' + " ".join(ws) + '"')
_key_markup = st.sampled_from(["{k}", "**{k}**", "**{k}:**", "`{k}`", "'{k}'", "_{k}_", "- {k}"])
_sep = st.sampled_from([": ", ":: ", " = ", "="])


@st.composite
def _secret(draw: st.DrawFn) -> tuple[str, str]:
    """(text holding one credential, the credential value that must vanish)."""
    kind = draw(st.integers(0, 9))
    body = draw(_body)
    if kind == 0:
        key = draw(st.sampled_from(["password", "passwd", "secret", "db_password", "PASSPHRASE", "pwd"]))
        markup = draw(_key_markup)
        value = draw(_password)
        if markup.endswith(":**"):
            return markup.format(k=key) + " " + value, value.strip('"')
        return markup.format(k=key) + draw(_sep) + value, value.strip('"')
    if kind == 1:
        prefix = draw(st.sampled_from(["sk-proj-", "sk-", "ghp_", "gho_", "glpat-", "hf_", "npm_", "xoxb-", "xoxp-"]))
        value = prefix + body
        return value, value
    if kind == 2:
        prefix = draw(st.sampled_from(["sk_live_", "rk_live_", "sk_test_"]))
        return prefix + body[:24], prefix + body[:24]
    if kind == 3:
        value = "AIza" + body[:35]
        return value, value
    if kind == 4:
        value = "AKIA" + body[:16].upper()
        return value, value
    if kind == 5:
        user = draw(st.sampled_from(["", "app", "admin"]))
        pw = draw(_pw_word).replace("/", "")
        scheme = draw(st.sampled_from(["postgres", "redis", "mongodb+srv", "https"]))
        return f"{scheme}://{user}:{pw}@db.internal:5432/x", pw
    if kind == 6:
        key = draw(st.sampled_from(["api_key", "AWS_SECRET_ACCESS_KEY", "access token", "client_secret", "token"]))
        return f"{key}{draw(_sep)}{body}", body
    if kind == 7:
        value = "eyJ" + body[:12] + ".eyJ" + body[12:24] + "." + body[24:]
        return value, value
    if kind == 8:
        return f"Authorization: Bearer {body}", body
    return f"the {body[:6]} bearer {body}", body


_filler = st.sampled_from(["", "Staging server", "user: deploy", "for the wiki", "host: db.internal", "and"])
_joiner = st.sampled_from([" ", ", ", "; ", " and ", "\n", " - ", " | "])


@st.composite
def _secret_lines(draw: st.DrawFn) -> tuple[str, list[str]]:
    secrets = draw(st.lists(_secret(), min_size=1, max_size=4))
    parts = [text for text, _ in secrets] + draw(st.lists(_filler, max_size=3))
    order = draw(st.permutations(parts))
    joined = ""
    for part in order:
        joined += (draw(_joiner) if joined else "") + part
    return joined, [value for _, value in secrets]


def _survivors(text: str, values: list[str]) -> list[str]:
    # Every word of every value must be gone (a multi-word password too).
    return [w for v in values for w in v.split() if len(w) >= 6 and w in text]


@given(_secret_lines())
def test_no_generated_secret_survives_redaction(case: tuple[str, list[str]]) -> None:
    text, values = case
    for line in text.split("\n"):
        out, _ = redact(line)
        assert redact(out) == (out, 0)
    out, n = redact(text)
    assert not _survivors(out, values), (text, out)
    assert n >= 1


@given(_secret_lines(), st.sampled_from(["{}", "- {}", "> {}", "| a | {} |", "- parent {}\n  - child item text"]))
def test_no_generated_secret_survives_extraction(case: tuple[str, list[str]], shape: str) -> None:
    text, values = case
    body = shape.format(text) if not shape.startswith("|") else "| h | v |\n|---|---|\n" + shape.format(text.replace("\n", " "))
    ex = extract_facts(parse_note("N.md", body.encode()), "n")
    for f in ex.facts:
        where = " ".join([f.text, *f.context, *f.headings])
        assert not _survivors(where, values), (body, where)


def test_a_long_run_of_spaces_after_a_password_key_is_not_quadratic() -> None:
    """The value scan once re-checked every following key at each space: 20 s
    for 8,000 spaces. A bound far above linear time, far below that."""
    import time

    start = time.monotonic()
    text, count = redact("password: x9" + " " * 50_000 + "rest of the line")
    assert count == 1 and "[redacted]" in text
    assert time.monotonic() - start < 5.0
