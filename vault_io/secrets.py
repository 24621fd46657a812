"""Finding credentials in text, so they are never stored, indexed, embedded, printed or handed to an agent.

:func:`redact` replaces every credential in a piece of text with
``[redacted]`` and says how many it replaced. It errs on the side of hiding:
a false positive costs one word, a false negative leaks a key into the
index, the vault's history logs, a file name or a model endpoint.

**The principle.** A credential is found in one of two ways.

1. *By its shape alone*: token formats with a recognisable prefix (GitHub,
   GitLab, Slack, Stripe, OpenAI, Anthropic, Google, AWS key ids and the
   40-character secret beside one, JWTs, npm, PyPI, Hugging Face and more:
   :data:`~memvault.vault_io.secrets_rules.TOKEN_PATTERNS`), PEM private key
   blocks, the password of a URL (``scheme://user:pass@host``), an
   ``Authorization`` header's or a ``Bearer`` token's value.
2. *By a word that names it, followed by its value*. The word is the last
   word of a key (``password``, ``passwd``, ``pwd``, ``passphrase``,
   ``passcode``, ``secret``, ``token``, ``api key``, ``key``, ``PIN``, a code
   that opens something: door, alarm, safe, recovery...; ``credentials``),
   also inside an identifier (``db_password``, ``DBPASSWORD``,
   ``githubToken``, ``MYSQL_PWD``). Its value follows within the sentence:
   after a sign (``:``, ``=``, ``::``, ``:=``, ``=>``, ``->``, a table's
   ``|``; the key possibly quoted or in Markdown: JSON, YAML, TOML, INI,
   .env), after a verb ("is", "was", "set to", "changed to"), possibly past
   a qualifier ("the password *for the NAS* is ..."), or right after the
   word ("wifi password hunter2"); or alone on the next line after a label
   ("Password:" then the value). The same reading covers command lines: an
   option that names a credential takes its value (``--password=x``,
   ``-storepass x``), a short option by the tool's own meaning (``-pX`` for
   mysql, ``-p X`` for sshpass and ``docker login``, ``-u user:pass`` for
   curl, ``-U user%pass`` for smbclient: :data:`~memvault.vault_io.secrets_rules.SHORT_FLAGS`), ``pass:X``,
   and a value piped into a command that reads a password (``echo x |
   sudo -S``); and user/password pairs ("user admin pass s3cret", "login
   bob / hunter2", "creds: alice:Tr0ub4dor").

**Whether a value is a secret depends on what the word names**, not on a
list of sentences. A *password* is chosen by a person: any value assigned
to it goes, and in prose any value that is not a plain word, or a plain
word that ends its clause ("my password is sunshine"); a plain word that
goes on as a sentence ("the password is required for login") stays. A
*passphrase* is several words: it runs to its clause's end when those are
content words ("purple monkey dishwasher seven"), not a sentence with
function words ("the passphrase is long and hard to remember"). A *PIN* or
a *code* holds digits ("PIN 4821", "the safe combination is 12-34-56"),
never a version's dots; "pin 13" is too short. A *token*, *API key* or
*secret* is generated: assigned or said, it is not a plain word (it has a
digit, a symbol or mixed case: :func:`looks_secret`); right after the word
with nothing between, it must look generated (:func:`looks_random` or long
and mixed) so "token budget 800" stays. A bare *key* is an idea as often as
a credential: only a generated-looking value goes ("key insight" stays).
Placeholders (``****``, ``<your key>``, ``{{token}}``, ``$DB_PASSWORD``,
``CLIENT_SECRET``) and already redacted values are never counted. Only the
value goes: the key, the punctuation closing the value, the rest of the
sentence and every other line stay.

**Linear time.** A prefilter (one pattern of every rule's cue, on the
lower-cased text) finds the few lines that hold a cue; every other line is
never read again. On a cue line each rule is one scan of patterns that start
at a literal cue and cannot backtrack over more than a constant number of
characters (:mod:`~memvault.vault_io.secrets_rules` says how), and a key's
value is read at most 256 characters past its cue before the code judges
it. So a 64 KiB line of nothing but cue words costs milliseconds.

:func:`redact_tree` redacts every string of an answer on its way out.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from memvault.vault_io import secrets_rules as R
from memvault.vault_io.lazy_pattern import LazyPattern
from memvault.vault_io.secrets_rules import REDACTED, Span

__all__ = ["REDACTED", "always_value_spans", "find_secrets", "looks_random", "looks_secret", "private_key_lines",
           "redact", "redact_tree"]

def looks_random(value: str) -> bool:
    """Whether ``value`` looks like a generated key (:func:`.secrets_judge.looks_random`)."""
    from memvault.vault_io.secrets_judge import looks_random as judge

    return judge(value)


def looks_secret(value: str) -> bool:
    """Whether ``value``, said to be a password, token or PIN, looks like one (:func:`.secrets_judge.looks_secret`)."""
    from memvault.vault_io.secrets_judge import looks_secret as judge

    return judge(value)


def _pem_spans(text: str) -> list[Span]:
    spans: list[Span] = []
    pos = 0
    while True:
        b = R.PEM_BEGIN_RE.search(text, pos)
        if b is None:
            return spans
        e = R.PEM_END_RE.search(text, b.end())
        end = e.end() if e else len(text)
        spans.append((b.start(), end))
        pos = end


def find_secrets(text: str, *, prefilter: bool = True) -> list[Span]:
    """The spans of ``text`` that hold a credential, sorted and merged.

    ``prefilter=False`` reads every line with every rule (tests check both agree).
    """
    if not text:
        return []
    low = text.lower()
    lines = _cue_lines(text, low, prefilter)
    if not lines:
        return []  # the common case: nothing that could start a credential
    # The rules are imported on the first text with a cue: a process that
    # redacts only plain text (most searches) never loads them.
    from memvault.vault_io.secrets_scan import Line, label_kind

    spans: list[Span] = []
    if "-----begin" in low:
        spans += _pem_spans(text)
    if ("akia" in low or "asia" in low) and R.AWS_ID_RE.search(text) is not None:
        # An AWS key id: a 40-character secret anywhere in the text is its secret key.
        found = Line(text)
        found._aws_secrets(anywhere=True)
        spans += found.spans
    for start, end in lines:
        line = text[start:end]
        found = Line(line, low[start:end] if len(low) == len(text) else None)
        found.scan()
        spans += [(start + s, start + e) for s, e in found.spans]
        if not found.spans or found.spans[-1][1] < len(line.rstrip()):
            label = label_kind(line)
            if label is not None:
                spans += _label_value_after(text, end, label)
    return _merge(spans)


def _cue_lines(text: str, low: str, prefilter: bool) -> list[Span]:
    """(start, end) of every line of ``text`` that holds a cue (every line without the prefilter)."""
    if not prefilter or len(low) != len(text):
        # (A lower-cased text of another length, rare: offsets differ; read line by line.)
        out, start = [], 0
        for line in text.split("\n"):
            end = start + len(line)
            if not prefilter or R.find_cue(line.lower()) >= 0:
                out.append((start, end))
            start = end + 1
        return out
    out = []
    pos = 0
    while True:
        at = R.find_cue(low, pos)
        if at < 0:
            return out
        start = low.rfind("\n", 0, at) + 1
        end = low.find("\n", at)
        end = len(low) if end < 0 else end
        out.append((start, end))
        pos = end + 1


def _label_value_after(text: str, end: int, label: tuple[str, str]) -> list[Span]:
    """The value of a label ending at ``end`` on the next line (past one blank or fence line)."""
    from memvault.vault_io.secrets_scan import Line, label_value

    pos = end + 1
    for _ in range(2):
        if pos > len(text):
            return []
        nxt = text.find("\n", pos)
        nxt = len(text) if nxt < 0 else nxt
        line = text[pos:nxt]
        stripped = line.strip()
        if stripped and not stripped.startswith(("```", "~~~")):
            found = Line(line)
            label_value(found, label)
            return [(pos + s, pos + e) for s, e in found.spans]
        pos = nxt + 1
    return []


def _merge(spans: list[Span]) -> list[Span]:
    merged: list[Span] = []
    for s, e in sorted(spans):
        if merged and s < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        else:
            merged.append((s, e))
    return merged


def redact(text: str) -> tuple[str, int]:
    """``text`` with every credential replaced by ``[redacted]``, and the count.

    Only the secret goes: the rest of the sentence and every other line stay
    (a private key block becomes ``[redacted]`` and as many line breaks as
    it had). Each credential counts once, also when two rules find it.
    Idempotent: redacting the output again finds nothing more.
    """
    spans = find_secrets(text)
    if not spans:
        return text, 0
    out: list[str] = []
    last = 0
    for s, e in spans:
        out.append(text[last:s])
        out.append(REDACTED + "\n" * text.count("\n", s, e))
        last = e
    out.append(text[last:])
    return "".join(out), len(spans)


def redact_tree(data: Any, key: str | None = None) -> Any:
    """``data`` (an answer: dicts, lists, strings) with every string redacted.

    A string under a dict key is read as ``key: value``, so a property
    ``password: hunter2`` loses its value; a percent-encoded string (an
    ``obsidian://`` link's file name) is read decoded, and given back decoded
    and redacted when it held a secret. Other values are returned as they are.
    """
    if isinstance(data, str):
        return _redact_value(data, key)
    if isinstance(data, dict):
        return {k: redact_tree(v, k if isinstance(k, str) else None) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [redact_tree(v, key) for v in data]
    return data


_EXTENSION_RE = LazyPattern(r"\.[a-z]{1,8}$")


def _redact_value(value: str, key: str | None) -> str:
    if "%" in value:
        decoded = unquote(value)
        if decoded != value and redact(decoded)[1]:
            value = decoded
    ext = _EXTENSION_RE.search(value)
    if ext and redact(value[: ext.start()])[1]:
        # A file name keeps its extension: "Wifi pin is [redacted].md", not "[redacted]" swallowing ".md".
        return _redact_value(value[: ext.start()], key) + ext.group()
    if key:
        prefix = f"{key}: "
        out, n = redact(prefix + value)
        if n:
            return out[len(prefix):] if out.startswith(prefix) else REDACTED
    return redact(value)[0]


def always_value_spans(text: str) -> list[Span]:
    """(start, end) of every credential in ``text``, so the sentence splitter
    does not cut one: a quoted ``password: "Abc1! Def2"`` split after ``!``
    would leave ``Def2`` outside the value that :func:`redact` replaces.
    """
    return find_secrets(text)


def private_key_lines(lines: list[str]) -> set[int]:
    """Indexes of the lines that belong to a PEM private key block.

    A key block spans lines, so the line-by-line segmenter asks for these up
    front and never turns them into facts (they are counted as one secret).
    """
    found: set[int] = set()
    start: int | None = None
    for i, line in enumerate(lines):
        if start is None and R.PEM_BEGIN_RE.search(line):
            start = i
        if start is not None:
            found.add(i)
            if R.PEM_END_RE.search(line):
                start = None
    return found

