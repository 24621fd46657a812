"""Finding credentials in text, so they are never indexed, embedded or handed to an agent.

:func:`redact` replaces every credential-looking value in a piece of text
with ``[redacted]`` and says how many it replaced. It errs on the side of
hiding: a false positive costs one word of a fact, a false negative leaks a
key into the index (and, with the llm extractor, to a model endpoint).

What counts as a credential:

- token formats with a recognisable shape: AWS access key ids (``AKIA...``),
  GitHub tokens (``ghp_``, ``gho_``, ``ghs_``, ``ghu_``, ``ghr_``,
  ``github_pat_``), GitLab tokens (``glpat-``, ``gldt-``...), Hugging Face
  (``hf_``), npm (``npm_``) and PyPI (``pypi-``) tokens, OpenAI-style keys
  (``sk-...``, ``sk-proj-...``), Slack tokens (``xox?-``, ``xapp-``) and
  webhooks, Google API keys (``AIza...``) and OAuth tokens (``ya29.``),
  Stripe keys (``sk_live_``, ``rk_live_``, ``whsec_``...), SendGrid keys,
  JWTs (``eyJ....eyJ....sig``), ``Bearer`` tokens and the value of an
  ``Authorization:`` header (its scheme kept);
- PEM private key blocks (``-----BEGIN ... PRIVATE KEY-----`` to ``END``);
- the password in a URL (``postgres://user:pass@host`` keeps the user and
  host: ``postgres://user:[redacted]@host``; also ``redis://:pass@host``);
- an AWS secret access key (40 characters of base64) after "aws" or
  "secret" on its line;
- the value of a secret's key, in an assignment (``password: v``,
  ``api_key = v``, ``**Token**:: v``, the key possibly in Markdown emphasis
  or code; an environment variable's ``DB_PASS``) or in prose ("my sudo
  password is v", "the PIN for the safe was v", "the API key is: v", "the
  password was changed to v", "I set the wifi password to v"; "Password
  for the wifi: v" counts as assigned). The value is one token (white space ends it; a
  quoted value goes whole); punctuation closing it ("v." at a sentence's
  end) is kept, and so is the rest of the sentence and of the line: a
  value never runs across a line break. An assigned ``password``,
  ``passphrase``, ``passcode`` or ``secret`` is always cut; any other value
  only when it looks like a secret (:func:`looks_secret`: not a plain word,
  so "the password policy is strict" and "token: see the wiki" stay), and
  the value of a bare ``key`` only when it looks generated
  (:func:`looks_random`: "the key is to stay calm" stays). A code that
  opens something (alarm, door, gate, access, recovery... code) is a key
  of its own; "error code" and "zip code" are not.

:func:`redact_tree` redacts every string of an answer (search hits, a read
note, its properties, paths and links) on its way out to an agent.

Placeholders (``****``, ``<your key>``, ``{{token}}``, ``xxx``, ``...``) and a
value that is itself an already redacted token are not counted; a value that
only *contains* a redacted token beside other text is a secret of its own
(``password: hunter2 ghp_...`` is two).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any
from urllib.parse import unquote

from memvault.vault_io.lazy_pattern import LazyPattern

REDACTED = "[redacted]"

# Shaped tokens: each is matched as a whole word and replaced whole. The
# tails use "(?![A-Za-z0-9_-])" rather than "\b" where a token may end in
# "-" or "_" (Google keys do), so the last characters are not left behind.
_TOKEN_PATTERNS: tuple[str, ...] = (
    r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b",
    r"\bgh[pousr]_[A-Za-z0-9]{30,}\b",
    r"\bgithub_pat_[A-Za-z0-9_]{22,}\b",
    r"\bgl(?:pat|dt|rt|ptt|ft|cbt|imt|oas|soat|agent)-[A-Za-z0-9_-]{20,}",  # GitLab
    r"\bhf_[A-Za-z0-9]{30,}\b",  # Hugging Face
    r"\bnpm_[A-Za-z0-9]{30,}\b",
    r"\bpypi-[A-Za-z0-9_-]{50,}",
    r"\bsk-(?:proj-|svcacct-|admin-|ant-(?:api\d\d-)?)?[A-Za-z0-9_-]{20,}",
    r"\bxox[a-z]-[A-Za-z0-9-]{10,}",  # Slack bot, user, app... tokens
    r"\bxapp-\d-[A-Za-z0-9-]{10,}",
    r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+",
    r"\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])",
    r"\bya29\.[0-9A-Za-z_-]{20,}",  # Google OAuth access tokens
    r"\b(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}\b",  # Stripe
    r"\bwhsec_[0-9A-Za-z]{24,}\b",
    r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}",  # SendGrid
    r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",  # JWT
)
_TOKEN_RE = LazyPattern("|".join(f"(?:{p})" for p in _TOKEN_PATTERNS))

# An HTTP Authorization header keeps its scheme: "Authorization: Bearer [redacted]".
# With a scheme any token-like value goes; without one only a random-looking value.
_AUTH_RE = LazyPattern(
    r"(?i)(\bauthorization['\"]?[ \t]*(?:::|:|=)[ \t]*['\"]?)(?:(bearer|basic|token|digest|apikey)[ \t]+)?([A-Za-z0-9._~+/=-]+)"
)
_BEARER_RE = LazyPattern(r"(?i)(\bbearer[ \t]+)([A-Za-z0-9._~+/-]{16,}=*)")

_PEM_RE = LazyPattern(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    re.S,
)
_PEM_BEGIN_RE = LazyPattern(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
_PEM_END_RE = LazyPattern(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")

# scheme://user:password@host: the password is everything between the first
# ":" after the (possibly empty: "redis://:pw@host") user and the last "@"
# before the host, so a password holding "@" goes whole.
_URL_PASSWORD_RE = LazyPattern(r"\b([a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]*:)([^\s/]+)(@)")

# Markdown around a key: "**password**:", "**password:**", "`secret` =", "_pwd_:".
_MARKUP = r"[*_`'\"]{0,2}"
# Emphasis before a value ("password: **hunter2**"); a quote there starts a quoted value.
_EMPHASIS = r"[*_`]{0,2}"
# A key may carry a prefix ("db_password", "MY_SECRET", "sudo-password").
_PREFIX = r"(?:[A-Za-z0-9]+[_-])*"
# Keys whose assigned value is always a secret: "password: value" (also
# "=" and Dataview's "::").
_ALWAYS_KEY = rf"{_PREFIX}(?:password|passwd|pwd|passphrase|passcode|secret)"
# Keys whose value is a secret when it looks like one (:func:`looks_secret`;
# a bare "key" only when it looks generated, :func:`looks_random`).
_TOKEN_KEY = (
    rf"{_PREFIX}(?:api[_ -]?key|apikey|(?:secret[_ -]?)?access[_ -]?key|secret[_ -]?key"
    r"|account[_-]?key|access[_ -]?token|auth[_ -]?token|refresh[_ -]?token|token|client[_ -]?secret"
    r"|private[_ -]?key|credentials?|pin|key"
    # A code that opens something: "the alarm code is X", "door code: X", "recovery codes: X".
    r"|(?:alarm|door|gate|access|security|entry|lock|safe|garage|unlock|verification|backup|recovery|pin|wifi"
    r"|2fa|mfa|otp|one[_ -]time)[_ -]?codes?)"
)
# The value of a key: a quoted string whole, else one token (it stops at
# white space, so the rest of the sentence and of the line stays).
_VALUE = (
    r"""(?:(?P<q>['"])(?P<quoted>[^'"\n]*)(?P=q)"""
    # A placeholder in brackets ("<your key>", "{{token}}", "[see below]") is
    # never a secret, spaces and all.
    r"|(?P<held><[^>\n]*>|\{\{[^}\n]*\}\}|\$\{[^}\n]*\}|\[\[?[^\]\n]*\]\]?)(?=[\s.,;:!?)]|$)"
    r"|(?P<value>\S+))"
)
# "password: value", "api_key = value", "**Token**:: value". Only spaces and
# tabs around the sign: a key that ends a line never takes the next line's word.
# An environment variable's "pass" ("DB_PASS=...", "smtp_pass: ..."): only
# with a prefix joined by "_", so a boarding pass stays a pass.
_ENV_PASS_KEY = r"(?:[A-Za-z0-9]+_)+pass"
_ASSIGN_RE = LazyPattern(
    rf"(?i)(?<![A-Za-z0-9])(?P<head>{_MARKUP}(?P<key>{_ALWAYS_KEY}|{_ENV_PASS_KEY}|{_TOKEN_KEY}){_MARKUP}[ \t]*(?:::|:|=)"
    rf"{_EMPHASIS}[ \t]*){_VALUE}"
)
# A passphrase is several words by nature: an assigned one runs to the end
# of its sentence (or line), not to the first space.
_PASSPHRASE_RE = LazyPattern(
    rf"(?im)(?<![A-Za-z0-9])(?P<head>{_MARKUP}{_PREFIX}passphrase{_MARKUP}[ \t]*(?:::|:|=){_EMPHASIS}[ \t]*)"
    r"(?P<value>[^\s'\"\[<{][^\n;]*?)(?=[.!?]?[ \t]*$|[.!?;][ \t])"
)
# A change of a secret: "the password was changed to X", "the PIN is set to X".
_CHANGE_VERB = r"set|change[ds]?|reset|update[ds]?"
_CHANGED_TO = rf"(?:(?:is|was|has[ \t]+been|had[ \t]+been|got)[ \t]+)?(?:{_CHANGE_VERB})[ \t]+to"
# Prose: "my sudo password is X", "the PIN for the safe was X", "the API key
# is: X", "Password for the wifi: X" (read as assigned). What lies between
# the key and "is" is a "for/to/of/on/at ..." phrase inside one sentence.
_PROSE_RE = LazyPattern(
    rf"(?i)(?<![A-Za-z0-9])(?P<head>(?P<key>{_ALWAYS_KEY}|{_TOKEN_KEY})"
    r"(?:[ \t]+(?:for|to|of|on|at)[ \t]+[^\n.!?;:=]{1,60}?)?"
    rf"(?:[ \t]+(?:{_CHANGED_TO}|is|was|are|were|=)(?:[ \t]*:)?|(?P<colon>:))[ \t]+"
    rf"{_EMPHASIS}){_VALUE}"
)
# "I set the router password to X", "changed my PIN to X".
_SET_RE = LazyPattern(
    rf"(?i)(?<![A-Za-z0-9])(?P<head>(?:{_CHANGE_VERB})[ \t]+(?:[^\s.!?;:=]+[ \t]+){{0,3}}?"
    rf"(?P<key>{_ALWAYS_KEY}|{_TOKEN_KEY})[ \t]+to[ \t]+{_EMPHASIS}){_VALUE}"
)
# An AWS secret access key (40 characters of base64) after "aws" or
# "secret" on its line: it has no prefix of its own.
_AWS_SECRET_RE = LazyPattern(
    r"(?i:\b(?:aws|secret))[^\n]{0,200}?(?<![A-Za-z0-9/+=])(?P<value>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
)
# Characters that may close a value's token without being part of it: a
# sentence's end, a closing bracket or quote, Markdown emphasis.
_TRAILING = ".,;:!?)]}>\"'*_`"
# After a value: more words on its line (the value began a sentence).
_PROSE_GOES_ON_RE = LazyPattern(r"[ \t]+[A-Za-z]")
# A value that says where something is: a URL (its password, if any, is
# the URL pattern's) or a relative or home path.
_LOCATION_RE = LazyPattern(r"(?:[A-Za-z][A-Za-z0-9+.-]*://|~/|\.\.?/)")
# A file name's extension, at the end of a path.
_EXTENSION_RE = LazyPattern(r"\.[a-z]{1,8}$")
# What joins the parts of one word: "well-known", "don't".
_WORD_JOINS_RE = LazyPattern(r"['’-]")

_PLACEHOLDER_RE = LazyPattern(
    r"^(?:[*xX.•_-]{3,}|<[^>]*>|\{\{[^}]*\}\}|\$\{[^}]*\}|\[[^\]]*\]|(?i:none|null|empty|n/?a|tbd|todo|changeme"
    r"|example|redacted|your[-_ ]\w+.*)"
    # A constant's name standing in for the value: CLIENT_SECRET, API_TOKEN.
    r"|[A-Z]+(?:_[A-Z]+)+)$"
)


# Every pattern above needs one of these (lower-cased); substring tests on a
# lower-cased copy skip most text far faster than a case-insensitive regex.
_HINTS = (
    "akia", "asia", "agpa", "aida", "aroa", "anpa", "anva", "aipa", "ghp_", "gho_", "ghu_", "ghs_", "ghr_",
    "github_pat", "glpat-", "gldt-", "glrt-", "glptt-", "glft-", "glcbt-", "glimt-", "gloas-", "glsoat-",
    "glagent-", "hf_", "npm_", "pypi-", "sk-", "xox", "xapp-", "aiza", "ya29.", "_live_", "_test_",
    "whsec_", "sg.", "eyj", "bearer", "authorization", "private key", "://", "pass", "pwd", "secret", "token",
    "key", "credential", "pin", "aws", "code",
)


# The hints each costly pattern needs, so a text holding only "key" (common
# in technical prose) is not scanned for every token shape as well.
_TOKEN_HINTS = tuple(h for h in _HINTS if h not in (
    "bearer", "authorization", "private key", "://", "pass", "pwd", "secret", "token", "key", "credential",
    "pin", "aws", "code",
)) + ("hooks.slack",)
# What the keyed patterns need before they are tried: one of their key words.
_KEY_HINTS = ("pass", "pwd", "secret", "key", "token", "credential", "pin", "code")
# One scan of the text for all hints at once beats a substring test per hint.
_HINT_RE = re.compile("|".join(re.escape(h) for h in _HINTS))


def _may_hold_secret(text: str) -> bool:
    return _HINT_RE.search(text.lower()) is not None


def _entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(value)
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def looks_random(value: str) -> bool:
    """Whether ``value`` looks like a generated key rather than a word.

    Long (16+), and either mixes letters with digits or has high entropy.
    """
    if len(value) < 16:
        return False
    has_digit = any(ch.isdigit() for ch in value)
    has_alpha = any(ch.isalpha() for ch in value)
    return (has_digit and has_alpha) or _entropy(value) >= 3.5


def looks_secret(value: str) -> bool:
    """Whether ``value``, said to be a password, token or PIN, looks like one.

    A secret is not a plain word: it has a digit or a symbol, or mixes case
    inside a word ("Tr0ub4dor&3", "4821", "hunter2", "pAssw0rd"), or looks
    generated (:func:`looks_random`). So "the password is strict" and "the
    token is valid" are prose; very short values (under 4 characters: "3",
    "a") are too. Placeholders (``****``, ``<your key>``) are not secrets.
    """
    if len(value) < 4 or _is_placeholder(value):
        return False
    if looks_random(value):
        return True
    return not _is_plain_word(value)


def _is_plain_word(value: str) -> bool:
    """A word of prose in any script ("strict", "Calm", "well-known", "don't",
    "NASA", "café"): letters only, each part lower case, upper case or
    capitalised. A digit, a symbol or a capital inside a word ("pAssw0rd")
    makes it something else."""
    parts = _WORD_JOINS_RE.split(value)
    return all(p.isalpha() and (p.islower() or p.isupper() or p.istitle()) for p in parts)


def _is_placeholder(value: str) -> bool:
    """An empty value, a placeholder (``****``, ``<your key>``), or one that
    *is* an already redacted secret. A value that merely contains
    ``[redacted]`` beside other text is not: that other text is the secret."""
    value = value.strip().strip("*_`")
    return not value or bool(_PLACEHOLDER_RE.match(value))


def _strong(key: str) -> bool:
    """Whether a key names a secret outright (password, token, PIN, API key...)
    rather than being a bare ``key``, which in prose is as often an idea."""
    words = re.split(r"[\s_-]+", key.lower())
    return words[-1] != "key" or any(w in ("api", "apikey", "secret", "access", "private", "account") for w in words)


def _always(key: str) -> bool:
    """Whether an assigned value of ``key`` is a secret whatever it looks like."""
    last = re.split(r"[\s_-]+", key.lower())[-1]
    return last.startswith("pass") or last in ("pwd", "secret")


def _password_word(key: str, value: str) -> bool:
    """Whether a plain word said to be a password in prose ("my password is
    sunshine") is read as one: the key is a password (not a "secret", which in
    prose is as often a knack: "the secret of good coffee is patience") and
    the value is one word of four letters or more ("up-to-date" is prose)."""
    last = re.split(r"[\s_-]+", key.lower())[-1]
    return (last.startswith("pass") or last == "pwd") and len(value) >= 4 and not _WORD_JOINS_RE.search(value)


def _token_end(value: str) -> int:
    """Where the secret in one token ends: before trailing punctuation that
    closes a sentence, a bracket or emphasis ("Pa55w0rd-xyz." keeps its period)."""
    end = len(value)
    while end > 0 and value[end - 1] in _TRAILING:
        end -= 1
    return end


class _Redactor:
    """One redaction of one text: the passes in order, and the count."""

    def __init__(self) -> None:
        self.count = 0

    def whole(self, m: re.Match[str]) -> str:
        """The match replaced whole (a private key block keeps its line count)."""
        self.count += 1
        return REDACTED + "\n" * m.group(0).count("\n")

    def auth(self, m: re.Match[str]) -> str:
        """An Authorization header's value, its scheme kept."""
        scheme, value = m.group(2), m.group(3)
        if _is_placeholder(value) or not (looks_random(value) or (scheme and len(value) >= 8)):
            return m.group(0)
        self.count += 1
        return m.group(1) + (scheme + " " if scheme else "") + REDACTED

    def bearer(self, m: re.Match[str]) -> str:
        """A Bearer token."""
        if _is_placeholder(m.group(2)):
            return m.group(0)
        self.count += 1
        return m.group(1) + REDACTED

    def url_password(self, m: re.Match[str]) -> str:
        """The password of ``scheme://user:password@host``."""
        if _is_placeholder(m.group(2)):
            return m.group(0)
        self.count += 1
        return m.group(1) + REDACTED + m.group(3)

    def aws_secret(self, m: re.Match[str]) -> str:
        """A 40-character AWS secret access key after "aws" or "secret"."""
        value = m.group("value")
        if not looks_random(value) or value.isalpha() or value.isdigit():
            return m.group(0)
        self.count += 1
        return m.group(0)[: m.start("value") - m.start()] + REDACTED

    def passphrase(self, m: re.Match[str]) -> str:
        """An assigned passphrase, to the end of its sentence."""
        value = m.group("value")
        if _is_placeholder(value) or REDACTED in value:
            return m.group(0)
        self.count += 1
        return m.group("head") + REDACTED + value[_token_end(value):]

    def keyed(self, m: re.Match[str], *, assigned: bool) -> str:
        """The value of ``key: value`` (``assigned``) or ``key is value``,
        cut when it is a secret: only the value, its closing punctuation kept."""
        key, quote = m.group("key"), m.group("q")
        if m.group("held"):
            return m.group(0)
        raw = m.group("quoted") if quote else m.group("value")
        value = raw if quote else raw[: _token_end(raw)]
        if _is_placeholder(value) or REDACTED in raw:
            return m.group(0)  # nothing, a placeholder, or a shaped token replaced above
        if _LOCATION_RE.match(value) and not (assigned and _always(key)):
            return m.group(0)  # "the key is ~/.ssh/id_ed25519": where a key is, not the key
        if _always(key) and (assigned or _password_word(key, value)):
            # Always a secret, unless it is a plain word that goes on as a
            # sentence ("`passwd`: Stores user ids" describes the file; "the
            # password is required for login"). "My password is sunshine"
            # ends there: the word is the password (a rare "the password is
            # strong." loses one word of prose, never a secret).
            secret = not _is_plain_word(value) or not _PROSE_GOES_ON_RE.match(m.string, m.end())
        else:
            secret = looks_secret(value) if _strong(key) else looks_random(value)
        if not secret and _always(key) and len(_WORD_JOINS_RE.split(value)) >= 4:
            secret = True  # words joined into one: "correct-horse-battery-staple"
        if not secret:
            return m.group(0)
        self.count += 1
        if quote:
            return m.group("head") + quote + REDACTED + quote
        return m.group("head") + REDACTED + raw[len(value):]


def redact(text: str) -> tuple[str, int]:
    """``text`` with every credential replaced by ``[redacted]``, and the count.

    Only the secret goes: the rest of the sentence and every other line stay
    (a private key block becomes ``[redacted]`` and as many line breaks as
    it had). Each credential counts once, also when one value holds another
    already replaced. Idempotent: redacting the output again finds nothing more.
    """
    if not text or not _may_hold_secret(text):
        return text, 0  # the common case: nothing that could start a credential
    r = _Redactor()
    out = _PEM_RE.sub(r.whole, text) if "private key" in text.lower() else text
    # Every other pattern lies within one line: only the lines holding a
    # hint are read (a whole note's text seldom has more than a few).
    lines = out.split("\n")
    for i, line in enumerate(lines):
        low = line.lower()
        if _HINT_RE.search(low):
            lines[i] = _redact_line(line, low, r)
    return "\n".join(lines), r.count


def _redact_line(line: str, low: str, r: _Redactor) -> str:
    """One line through every pass but the private key block's."""
    out = line
    if any(hint in low for hint in _TOKEN_HINTS):
        out = _TOKEN_RE.sub(r.whole, out)
        low = out.lower()
    if "authorization" in low:
        out = _AUTH_RE.sub(r.auth, out)
    if "bearer" in low:
        out = _BEARER_RE.sub(r.bearer, out)
    if "://" in out:
        out = _URL_PASSWORD_RE.sub(r.url_password, out)
    if "aws" in low or "secret" in low:
        out = _AWS_SECRET_RE.sub(r.aws_secret, out)
    if any(hint in low for hint in _KEY_HINTS):
        if ":" in out or "=" in out:
            if "passphrase" in low:
                out = _PASSPHRASE_RE.sub(r.passphrase, out)
            out = _ASSIGN_RE.sub(lambda m: r.keyed(m, assigned=True), out)
        out = _PROSE_RE.sub(lambda m: r.keyed(m, assigned=m.group("colon") is not None), out)
        if " to" in low:
            out = _SET_RE.sub(lambda m: r.keyed(m, assigned=False), out)
    return out


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


def always_value_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every keyed value in ``text`` (``password: value``,
    ``api key is value``), so the sentence splitter does not cut one: a
    quoted ``password: "Abc1! Def2"`` split after ``!`` would leave ``Def2``
    outside the value that :func:`redact` replaces.
    """
    low = text.lower()
    if not any(hint in low for hint in _KEY_HINTS):
        return []
    spans = [m.span("value") for m in _PASSPHRASE_RE.finditer(text)] if "passphrase" in low else []
    for regex in (_ASSIGN_RE, _PROSE_RE, _SET_RE):
        for m in regex.finditer(text):
            if m.group("held"):
                continue
            if m.group("q"):
                spans.append(m.span("quoted"))
            else:
                start = m.start("value")
                spans.append((start, start + _token_end(m.group("value"))))
    return sorted(spans)


def private_key_lines(lines: list[str]) -> set[int]:
    """Indexes of the lines that belong to a PEM private key block.

    A key block spans lines, so the line-by-line segmenter asks for these up
    front and never turns them into facts (they are counted as one secret).
    """
    found: set[int] = set()
    start: int | None = None
    for i, line in enumerate(lines):
        if start is None and _PEM_BEGIN_RE.search(line):
            start = i
        if start is not None:
            found.add(i)
            if _PEM_END_RE.search(line):
                start = None
    return found
