"""Finding credentials in note text, so they never become searchable facts.

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
- the value after ``password``/``passwd``/``pwd``/``passphrase``/``secret``
  and ``:``, ``=`` or ``::``, the key possibly in Markdown emphasis or code
  (``**password**:``): always, up to ``;``, the end of the line, or another
  ``key:`` assignment on the same line (``user:``, ``host:``, ``token:``...);
- the value after ``api_key``/``token``/``access_token``/``client_secret``/
  ``aws_secret_access_key``/``key``... when it is long (16+ characters) and
  looks random (mixed character classes or high Shannon entropy), so
  ``token: see the wiki`` stays.

Placeholders (``****``, ``<your key>``, ``{{token}}``, ``xxx``, ``...``) and a
value that is itself an already redacted token are not counted; a value that
only *contains* a redacted token beside other text is a secret of its own
(``password: hunter2 ghp_...`` is two).
"""

from __future__ import annotations

import math
import re
from collections import Counter

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
_TOKEN_RE = re.compile("|".join(f"(?:{p})" for p in _TOKEN_PATTERNS))

# An HTTP Authorization header keeps its scheme: "Authorization: Bearer [redacted]".
# With a scheme any token-like value goes; without one only a random-looking value.
_AUTH_RE = re.compile(
    r"(?i)(\bauthorization['\"]?\s*(?:::|:|=)\s*['\"]?)(?:(bearer|basic|token|digest|apikey)\s+)?([A-Za-z0-9._~+/=-]+)"
)
_BEARER_RE = re.compile(r"(?i)(\bbearer\s+)([A-Za-z0-9._~+/-]{16,}=*)")

_PEM_RE = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    re.S,
)
_PEM_BEGIN_RE = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
_PEM_END_RE = re.compile(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")

# scheme://user:password@host: the password is everything between the first
# ":" after the (possibly empty: "redis://:pw@host") user and the last "@"
# before the host, so a password holding "@" goes whole.
_URL_PASSWORD_RE = re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]*:)([^\s/]+)(@)")

# Markdown around a key: "**password**:", "**password:**", "`secret` =", "_pwd_:".
_MARKUP = r"[*_`'\"]{0,2}"
# "password: value" (also "=" and Dataview's "::"). The key may carry a
# prefix ("db_password", "MY_SECRET").
_ALWAYS_KEY = r"(?:[A-Za-z0-9]+[_-])*(?:password|passwd|pwd|passphrase|secret)"
_TOKEN_KEY = (
    r"(?:[A-Za-z0-9]+[_-])*(?:api[_ -]?key|apikey|(?:secret[_ -]?)?access[_ -]?key|secret[_ -]?key"
    r"|account[_-]?key|access[_ -]?token|auth[_ -]?token|refresh[_ -]?token|token|client[_ -]?secret"
    r"|private[_ -]?key|credentials?|key)"
)
# Keys that start a new assignment on the same line ("user: deploy password:
# hunter2 key: ..."): a password value stops before them, so each value is
# judged (and counted) on its own and the other keys stay readable.
_NEXT_KEY = (
    rf"(?<![\s,])[\s,]+(?:-\s+|[\[(])?{_MARKUP}(?:{_ALWAYS_KEY}|{_TOKEN_KEY}|(?:[A-Za-z0-9]+[_-])*(?:user(?:[_ -]?name)?"
    rf"|login|e-?mail|host(?:name)?|port|url|uri|server|db|database|account|id|dsn|endpoint|region))"
    rf"{_MARKUP}\s*(?:::|:|=)"
)
_ALWAYS_RE = re.compile(
    rf"(?i)(?<![A-Za-z0-9])({_MARKUP}{_ALWAYS_KEY}{_MARKUP}\s*(?:::|:|=){_MARKUP}[ \t]*)"
    rf"(?:(['\"])([^'\"\n]*)\2|((?:(?!{_NEXT_KEY})[^;\n])+))"
)
_TOKEN_VALUE_RE = re.compile(
    rf"(?i)(?<![A-Za-z0-9])({_MARKUP}{_TOKEN_KEY}{_MARKUP}\s*(?:::|:|=){_MARKUP}\s*)(['\"]?)([^\s'\";,]+)"
)

_PLACEHOLDER_RE = re.compile(
    r"^(?:[*xX.•_-]{3,}|<[^>]*>|\{\{[^}]*\}\}|\$\{[^}]*\}|\[[^\]]*\]|(?i:none|null|empty|n/?a|tbd|todo|changeme"
    r"|example|redacted|your[-_ ]\w+.*))$"
)


# Every pattern above needs one of these (lower-cased); substring tests on a
# lower-cased copy skip most text far faster than a case-insensitive regex.
_HINTS = (
    "akia", "asia", "agpa", "aida", "aroa", "anpa", "anva", "aipa", "ghp_", "gho_", "ghu_", "ghs_", "ghr_",
    "github_pat", "glpat-", "gldt-", "glrt-", "glptt-", "glft-", "glcbt-", "glimt-", "gloas-", "glsoat-",
    "glagent-", "hf_", "npm_", "pypi-", "sk-", "xox", "xapp-", "aiza", "ya29.", "_live_", "_test_",
    "whsec_", "sg.", "eyj", "bearer", "authorization", "private key", "://", "pass", "pwd", "secret", "token",
    "key", "credential",
)


# The hints each costly pattern needs, so a text holding only "key" (common
# in technical prose) is not scanned for every token shape as well.
_TOKEN_HINTS = tuple(h for h in _HINTS if h not in (
    "bearer", "authorization", "private key", "://", "pass", "pwd", "secret", "token", "key", "credential",
)) + ("hooks.slack",)
# What "password: value" and "key: value" need before their (costly) full
# patterns are tried: one of their key words, and an assignment sign.
_ALWAYS_HINTS = ("pass", "pwd", "secret")
_TOKEN_KEY_HINTS = ("key", "token", "secret", "credential")
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


def _is_placeholder(value: str) -> bool:
    """An empty value, a placeholder (``****``, ``<your key>``), or one that
    *is* an already redacted secret. A value that merely contains
    ``[redacted]`` beside other text is not: that other text is the secret."""
    value = value.strip().strip("*_`")
    return not value or bool(_PLACEHOLDER_RE.match(value))


def redact(text: str) -> tuple[str, int]:
    """``text`` with every credential replaced by ``[redacted]``, and the count.

    Each credential counts once, also when one value holds another already
    replaced (``password: hunter2 ghp_...`` is two). Idempotent: redacting
    the output again finds nothing more.
    """
    if not text or not _may_hold_secret(text):
        return text, 0  # the common case: nothing that could start a credential
    count = 0

    def whole(m: re.Match[str]) -> str:
        nonlocal count
        count += 1
        return REDACTED

    low = text.lower()
    out = _PEM_RE.sub(whole, text) if "private key" in low else text
    if any(hint in low for hint in _TOKEN_HINTS):
        out = _TOKEN_RE.sub(whole, out)

    def auth(m: re.Match[str]) -> str:
        nonlocal count
        scheme, value = m.group(2), m.group(3)
        if _is_placeholder(value) or not (looks_random(value) or (scheme and len(value) >= 8)):
            return m.group(0)
        count += 1
        return m.group(1) + (scheme + " " if scheme else "") + REDACTED

    def bearer(m: re.Match[str]) -> str:
        nonlocal count
        count += 1
        return m.group(1) + REDACTED

    low = out.lower()
    if "authorization" in low:
        out = _AUTH_RE.sub(auth, out)
    if "bearer" in low:
        out = _BEARER_RE.sub(bearer, out)

    def url_password(m: re.Match[str]) -> str:
        nonlocal count
        if _is_placeholder(m.group(2)):
            return m.group(0)
        count += 1
        return m.group(1) + REDACTED + m.group(3)

    if "://" in out:
        out = _URL_PASSWORD_RE.sub(url_password, out)

    def always(m: re.Match[str]) -> str:
        nonlocal count
        quote = m.group(2)
        value = m.group(3) if quote else m.group(4)
        rest = value.lstrip()
        if _is_placeholder(value) or rest.startswith(REDACTED):
            # Nothing, a placeholder, or the value was itself a shaped token
            # replaced (and counted) above; words after it are prose.
            return m.group(0)
        count += 1
        return m.group(1) + (f"{quote}{REDACTED}{quote}" if quote else REDACTED + value[len(value.rstrip()):])

    assigns = ":" in out or "=" in out
    if assigns and any(hint in low for hint in _ALWAYS_HINTS):
        out = _ALWAYS_RE.sub(always, out)

    def token_value(m: re.Match[str]) -> str:
        nonlocal count
        value = m.group(3)
        if _is_placeholder(value) or REDACTED in value or not looks_random(value):
            return m.group(0)
        count += 1
        return m.group(1) + m.group(2) + REDACTED

    if assigns and any(hint in low for hint in _TOKEN_KEY_HINTS):
        out = _TOKEN_VALUE_RE.sub(token_value, out)
    return out, count


def always_value_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every ``password:``/``secret:`` value in ``text``.

    Such a value runs to the end of its line (or ``;``), so the sentence
    splitter must not cut it: ``password: Abc1! Def2`` split after ``!``
    would leave ``Def2`` outside the value that :func:`redact` replaces.
    """
    low = text.lower()
    if "pass" not in low and "pwd" not in low and "secret" not in low:
        return []
    return [m.span() for m in _ALWAYS_RE.finditer(text)]


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
