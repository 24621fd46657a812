"""Finding credentials in note text, so they never become searchable facts.

:func:`redact` replaces every credential-looking value in a piece of text
with ``[redacted]`` and says how many it replaced. It errs on the side of
hiding: a false positive costs one word of a fact, a false negative leaks a
key into the index (and, with the llm extractor, to a model endpoint).

What counts as a credential:

- token formats with a recognisable shape: AWS access key ids (``AKIA...``),
  GitHub tokens (``ghp_``, ``gho_``, ``ghs_``, ``ghu_``, ``ghr_``,
  ``github_pat_``), OpenAI-style keys (``sk-...``, ``sk-proj-...``), Slack
  tokens (``xox[abposr]-``) and webhooks, Google API keys (``AIza...``),
  Stripe keys, JWTs (``eyJ....eyJ....sig``), ``Bearer`` tokens;
- PEM private key blocks (``-----BEGIN ... PRIVATE KEY-----`` to ``END``);
- the password in a URL (``postgres://user:pass@host`` keeps the user and
  host: ``postgres://user:[redacted]@host``);
- the value after ``password``/``passwd``/``pwd``/``passphrase``/``secret``
  and ``:``, ``=`` or ``::`` (always, up to ``;`` or the end of the text);
- the value after ``api_key``/``token``/``access_token``/``client_secret``...
  when it is long (16+ characters) and looks random (mixed character classes
  or high Shannon entropy), so ``token: see the wiki`` stays.

Placeholders (``****``, ``<your key>``, ``{{token}}``, ``xxx``, ``...``) and an
already redacted value are not counted.
"""

from __future__ import annotations

import math
import re
from collections import Counter

REDACTED = "[redacted]"

# Shaped tokens: each is matched as a whole word and replaced whole.
_TOKEN_PATTERNS: tuple[str, ...] = (
    r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b",
    r"\bgh[pousr]_[A-Za-z0-9]{30,}\b",
    r"\bgithub_pat_[A-Za-z0-9_]{22,}\b",
    r"\bsk-(?:proj-|svcacct-|admin-|ant-(?:api\d\d-)?)?[A-Za-z0-9_-]{20,}",
    r"\bxox[abposr]-[A-Za-z0-9-]{10,}",
    r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+",
    r"\bAIza[0-9A-Za-z_-]{35}\b",
    r"\b(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}\b",
    r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    r"(?<=\bBearer )[A-Za-z0-9._~+/-]{16,}=*",
)
_TOKEN_RE = re.compile("|".join(f"(?:{p})" for p in _TOKEN_PATTERNS))

_PEM_RE = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    re.S,
)
_PEM_BEGIN_RE = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
_PEM_END_RE = re.compile(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")

# scheme://user:password@host: the password is everything between the first
# ":" after the user and the last "@" before the host.
_URL_PASSWORD_RE = re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]+:)([^\s@/]+)(@)")

# "password: value" (also "=" and Dataview's "::"). The key may be quoted
# and may carry a prefix ("db_password", "MY_SECRET").
_ALWAYS_KEY = r"(?:[A-Za-z0-9]+[_-])*(?:password|passwd|pwd|passphrase|secret)"
_ALWAYS_RE = re.compile(
    rf"(?i)(?<![A-Za-z0-9])(['\"]?{_ALWAYS_KEY}['\"]?\s*(?:::|:|=)[ \t]*)(?:(['\"])([^'\"\n]*)\2|([^;\n]+))"
)
_TOKEN_KEY = (
    r"(?:[A-Za-z0-9]+[_-])*(?:api[_-]?key|apikey|access[_-]?key|secret[_-]?key|access[_-]?token"
    r"|auth[_-]?token|refresh[_-]?token|token|client[_-]?secret|private[_-]?key|credentials?)"
)
_TOKEN_VALUE_RE = re.compile(
    rf"(?i)(?<![A-Za-z0-9])(['\"]?{_TOKEN_KEY}['\"]?\s*(?:::|:|=)\s*)(['\"]?)([^\s'\";,]+)"
)

_PLACEHOLDER_RE = re.compile(
    r"^(?:[*xX.•_-]{3,}|<[^>]*>|\{\{[^}]*\}\}|\$\{[^}]*\}|\[[^\]]*\]|(?i:none|null|empty|n/?a|tbd|todo|changeme"
    r"|example|redacted|your[-_ ]\w+.*))$"
)


# Every pattern above needs one of these (lower-cased); substring tests on a
# lower-cased copy skip most text far faster than a case-insensitive regex.
_HINTS = (
    "akia", "asia", "agpa", "aida", "aroa", "anpa", "anva", "aipa", "ghp_", "gho_", "ghu_", "ghs_", "ghr_",
    "github_pat", "sk-", "xox", "aiza", "_live_", "_test_", "eyj", "bearer", "private key", "://",
    "pass", "pwd", "secret", "token", "key", "credential",
)


def _may_hold_secret(text: str) -> bool:
    low = text.lower()
    return any(hint in low for hint in _HINTS)


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
    return not value.strip() or bool(_PLACEHOLDER_RE.match(value.strip())) or REDACTED in value


def redact(text: str) -> tuple[str, int]:
    """``text`` with every credential replaced by ``[redacted]``, and the count.

    Idempotent: redacting the output again finds nothing more.
    """
    if not text or not _may_hold_secret(text):
        return text, 0  # the common case: nothing that could start a credential
    count = 0

    def whole(m: re.Match[str]) -> str:
        nonlocal count
        count += 1
        return REDACTED

    out = _PEM_RE.sub(whole, text)
    out = _TOKEN_RE.sub(whole, out)

    def url_password(m: re.Match[str]) -> str:
        nonlocal count
        if _is_placeholder(m.group(2)):
            return m.group(0)
        count += 1
        return m.group(1) + REDACTED + m.group(3)

    out = _URL_PASSWORD_RE.sub(url_password, out)

    def always(m: re.Match[str]) -> str:
        nonlocal count
        quote = m.group(2)
        value = m.group(3) if quote else m.group(4)
        if _is_placeholder(value):
            return m.group(0)
        count += 1
        return m.group(1) + (f"{quote}{REDACTED}{quote}" if quote else REDACTED)

    out = _ALWAYS_RE.sub(always, out)

    def token_value(m: re.Match[str]) -> str:
        nonlocal count
        value = m.group(3)
        if _is_placeholder(value) or not looks_random(value):
            return m.group(0)
        count += 1
        return m.group(1) + m.group(2) + REDACTED

    out = _TOKEN_VALUE_RE.sub(token_value, out)
    return out, count


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
