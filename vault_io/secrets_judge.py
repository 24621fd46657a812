"""Judging what follows a key word: what the key names, and whether its value is a secret.

The principle is written in :mod:`memvault.vault_io.secrets`; this module is
its two questions. :func:`key_kind`: what does a key word name here (a
password, a passphrase, a PIN, a secret, a token, a bare key), or is it no
key at all ("keyboard", "boarding pass", "the key insight")? :func:`judge`:
given that kind and how the value is given (assigned, said in prose, right
after the word, on the next line, as a command's option), is the value a
secret? Both read bounded windows only (a few dozen characters back, a value
of at most 256), so they add constant work per key word.
"""

from __future__ import annotations

import math
from collections import Counter

from memvault.vault_io import secrets_rules as R
from memvault.vault_io.lazy_pattern import LazyPattern
from memvault.vault_io.secrets_rules import REDACTED

# What a key's last word names.
PASSWORD, PASSPHRASE, PIN, SECRET, TOKEN, KEY = "password", "passphrase", "pin", "secret", "token", "key"
# How its value is given: a sign ("password: v"), a verb ("password is v"),
# a table cell, nothing ("password v"), the next line, a command's option.
ASSIGNED, PROSE, TABLE, BARE, LABEL, OPTION = "assigned", "prose", "table", "bare", "label", "option"

# Words before "code" that make it a code that opens something.
_CODE_OPENERS = frozenset(
    "alarm door gate access security entry lock safe garage unlock verification backup recovery pin wifi 2fa mfa "
    "otp one-time keypad lockbox locker padlock sim puk admin master vault entrance".split()
)
# Words before "key" that make it a credential, not an idea.
_KEY_STRONG = frozenset(
    "api access secret private account license licence master encryption signing deploy product activation auth "
    "client app service subscription storage shared ssh gpg pgp decryption root session webhook x-api".split()
)
_KEY_PASSWORD = frozenset("wifi wi-fi wpa wpa2 wlan network".split())
_PHRASE_OPENERS = frozenset("seed recovery secret backup wallet pass mnemonic".split())
_WORD_RE = LazyPattern(r"[a-z0-9][a-z0-9-]*")
SET_VERBS_RE = LazyPattern(r"(?i)\b(?:set|setting|changed?|changing|reset|update[ds]?|updating)\b")
_PREV_WORD_RE = LazyPattern(r"([A-Za-z0-9][A-Za-z0-9-]*)[ \t_.-]*$")
_PROSE_GOES_ON_RE = LazyPattern(r"(?:[ \t]+[-–—])?[ \t]+[A-Za-z]")
_DOTTED_NUMBER_RE = LazyPattern(r"^v?\d+(?:\.\d+)+$")
_TRAILING = ".,;:!?)]}>\"'*_`"
_CLOSERS = {")": "(", "]": "[", "}": "{", ">": "<"}
_NEXT_FIELD_RE = LazyPattern(r";|[&,](?=[A-Za-z0-9_.-]{1,40}=)")
_DIGIT_RE = LazyPattern(r"\d")
_LETTER_RE = LazyPattern(r"[^\W\d_]")


# -- judging values --------------------------------------------------------------------


def entropy(value: str) -> float:
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
    value = value[:256]
    return (_DIGIT_RE.search(value) is not None and _LETTER_RE.search(value) is not None) or entropy(value) >= 3.5


def looks_secret(value: str) -> bool:
    """Whether ``value``, said to be a password, token or PIN, looks like one.

    A secret is not a plain word: it has a digit or a symbol, or mixes case
    inside a word ("Tr0ub4dor&3", "4821", "hunter2", "pAssw0rd"), or looks
    generated (:func:`looks_random`). So "the password is strict" and "the
    token is valid" are prose; very short values (under 4 characters: "3",
    "a") are too. Placeholders (``****``, ``<your key>``) are not secrets.
    """
    if len(value) < 4 or is_placeholder(value):
        return False
    if looks_random(value):
        return True
    return not is_plain_word(value)


def is_plain_word(value: str) -> bool:
    """A word of prose in any script ("strict", "Calm", "well-known", "don't",
    "NASA", "café"): letters only, each part lower case, upper case or
    capitalised. A digit, a symbol or a capital inside a word ("pAssw0rd")
    makes it something else."""
    parts = R.WORD_JOINS_RE.split(value)
    return all(p.isalpha() and (p.islower() or p.isupper() or p.istitle()) for p in parts)


def is_placeholder(value: str) -> bool:
    """An empty value, a placeholder (``****``, ``<your key>``, ``$TOKEN``), or one
    that *is* an already redacted secret. A value that merely contains
    ``[redacted]`` beside other text is not: that other text is the secret."""
    value = value.strip().strip("*_`").rstrip(".,;:!?)'\"")
    return not value or value.startswith("$(") or bool(R.PLACEHOLDER_RE.match(value))


def generated(value: str) -> bool:
    """A value that looks machine-made even when short: 8+ characters mixing letters and digits, or random."""
    if looks_random(value):
        return True
    return len(value) >= 8 and _DIGIT_RE.search(value) is not None and _LETTER_RE.search(value) is not None


def token_end(value: str) -> int:
    """Where the secret in one token ends: before trailing punctuation that
    closes a sentence, a bracket or emphasis ("Pa55w0rd-xyz." keeps its period)."""
    end = len(value)
    while end > 0 and value[end - 1] in _TRAILING:
        closer = value[end - 1]
        if closer in _CLOSERS and _CLOSERS[closer] in value[: end - 1]:
            break  # "[redacted]", "(a)b)": a bracket the value opened is its own
        end -= 1
    return end


def value_end(value: str) -> int:
    """Where an unquoted value ends: at its closing punctuation, or where the
    next field of a connection string or query begins ("pw;Server=",
    "t0k&page=", "pw,uid=")."""
    m = _NEXT_FIELD_RE.search(value)
    return token_end(value[: m.start()] if m else value)


def goes_on(line: str, end: int) -> bool:
    """Whether prose goes on after a value (more words on its line)."""
    return _PROSE_GOES_ON_RE.match(line, end) is not None


def judge(kind: str, form: str, value: str, goes_on: bool) -> bool:
    """Whether ``value``, given as ``form`` to a key naming a ``kind``, is a secret."""
    if is_placeholder(value) or REDACTED in value:
        return False
    low = value.lower()
    if low in R.FUNCTION_WORDS:
        return False
    if R.LOCATION_RE.match(value):
        return False  # "the key is ~/.ssh/id_ed25519", "password=./pw.txt": where a secret is, not the secret
    if kind == PIN:
        return pin_like(value, form)
    if kind in (PASSWORD, PASSPHRASE):
        return password_like(value, form, goes_on)
    if kind == SECRET and form in (ASSIGNED, LABEL, OPTION):
        return password_like(value, form, goes_on)
    if kind == KEY:
        return looks_random(value)
    if form == BARE:
        return generated(value)
    return looks_secret(value)


def password_like(value: str, form: str, goes_on: bool) -> bool:
    """A value a person chose: any assigned one but a plain word going on as a
    sentence ("`passwd`: Stores user ids"); in prose a plain word only when it
    ends its clause ("my password is sunshine"); right after the word, not a plain word."""
    if not any(c.isalnum() for c in value):
        return False  # "-", "…": no value
    plain = is_plain_word(value)
    if len(R.WORD_JOINS_RE.split(value)) >= 4:
        return True  # words joined into one: "correct-horse-battery-staple"
    if form in (ASSIGNED, LABEL, OPTION):
        return not plain or not goes_on
    if len(value) < 3:
        return False
    if form == PROSE:
        if not plain:
            return len(value) >= 4
        return len(value) >= 4 and not R.WORD_JOINS_RE.search(value) and not goes_on
    return looks_secret(value)


def pin_like(value: str, form: str) -> bool:
    """A PIN, a passcode or a code that opens something: it holds digits (not
    a version's dots); right after the word, four characters at least."""
    if _DIGIT_RE.search(value) is None or _DOTTED_NUMBER_RE.match(value):
        return False
    return len(value) >= (4 if form == BARE else 3)


# -- keys ------------------------------------------------------------------------------


def key_kind(line: str, start: int, cue: str) -> str | None:
    """What the key word ``cue`` at ``start`` names, or None when it is not a key here
    (inside another word, a homonym without the words that make it a key)."""
    low = cue.lower()
    prev = line[start - 1] if start else ""
    if prev.isalnum() and not joined_ok(line, start, cue):
        return None
    word = previous_word(line, start).lower()
    if low.startswith(("passw", "kennw", "contrase", "senha", "wachtw", "lösen", "losen", "mot")) or low in ("pwd", "pword", "pw"):
        return PASSWORD
    if low.startswith("passcode"):
        return PASSWORD
    if low == "pass":
        # "pass" alone is a boarding pass or a mountain pass: a key only in an
        # identifier ("DB_PASS", "smtp-pass") or beside a user ("login bob, pass x").
        if prev and prev in "_-.":
            return PASSWORD
        return PASSWORD if R.USER_CONTEXT_RE.search(line, max(0, start - 80), start) else None
    if low in ("passphrase", "mnemonic"):
        return PASSPHRASE
    if low in ("phrase", "words"):
        return PASSPHRASE if word in _PHRASE_OPENERS else None
    if low in ("pin", "pins", "puk", "combination", "padlock", "lockbox", "keypad"):
        return PIN
    if low.startswith("code"):
        # A code that opens something: "door code", "Keypad at the side entrance - code".
        words = _WORD_RE.findall(line[max(0, start - 40):start].lower())[-3:]
        return PIN if any(w in _CODE_OPENERS for w in words) else None
    if low == "secret":
        return SECRET
    if low in ("token",) or low.replace("_", "").replace("-", "") == "apikey":
        return TOKEN
    if low.startswith(("credential", "creds")):
        return TOKEN
    if low in ("signature", "sig"):
        return TOKEN if prev in "?&" and prev or word == "amz" else None
    if low == "key":
        if word in _KEY_PASSWORD:
            return PASSWORD
        if word in _KEY_STRONG or prev in "?&" and prev or (cue.isupper() and start and prev != " "):
            return TOKEN
        return KEY
    return None


def joined_ok(line: str, start: int, cue: str) -> bool:
    """A key word inside a longer word: an environment variable's ending
    (DBPASSWORD, GITHUBTOKEN), camel case (dbPassword, apiKey), or a
    lower-case compound of an unambiguous word (dbpassword, githubtoken)."""
    prev = line[start - 1]
    low = cue.lower()
    if low in ("pw", "pword"):
        return False
    if cue.isupper() and prev.isupper():
        return low in ("password", "passwd", "pwd", "token", "secret", "key", "apikey", "api_key", "passphrase")
    if cue[0].isupper() and cue[1:].islower() and (prev.islower() or prev.isdigit()):
        return low not in ("code", "codes", "combination", "phrase", "sig", "signature", "pin", "pins")
    if cue.islower() and (prev.islower() or prev.isdigit()):
        return low in ("password", "passwd", "passphrase", "passcode", "token", "secret", "apikey", "passwort")
    return False


def previous_word(line: str, start: int) -> str:
    """The word before ``start`` (looked for in a bounded window)."""
    m = _PREV_WORD_RE.search(line[max(0, start - 32):start])
    return m.group(1) if m else ""


