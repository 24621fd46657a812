"""What a keyed fact's key may be (``editor.theme``): see :mod:`memvault.store.memories.keys`.

Light on purpose: ``memvault add --key`` checks its argument here before
anything else is loaded (a daemon may write the memory).
"""

from __future__ import annotations

import re

from memvault.vault_io.errors import UsageError
from memvault.vault_io.secrets import redact

#: Longest key, in characters.
MAX_KEY = 100
_KEY_RE = re.compile(r"[a-z0-9][a-z0-9_-]*(?:\.[a-z0-9][a-z0-9_-]*)*")


class BadKey(UsageError):
    """A key that is not one (a usage error: exit 2)."""


def check_key(value: str) -> str:
    """``value`` as a key (trimmed, lower case); :class:`BadKey` in one line otherwise."""
    key = value.strip().lower()
    shown = redact(value if len(value) <= 40 else value[:39] + "…")[0]
    if not key:
        raise BadKey("key is empty: give a name such as editor.theme")
    if len(key) > MAX_KEY:
        raise BadKey(f"key {shown!r} is {len(key)} characters; the limit is {MAX_KEY}")
    if not _KEY_RE.fullmatch(key):
        raise BadKey(f"key {shown!r} is not a key: use letters, digits, '_' and '-' in parts joined by "
                     "single dots, such as editor.theme")
    if redact(key)[0] != key:
        raise BadKey("key looks like a credential; name the slot instead (such as deploy.staging.token_name)")
    return key


def read_key(value: object) -> str | None:
    """A key as a note writes it, checked (None: no key, or not a usable one)."""
    if not isinstance(value, str):
        return None
    try:
        return check_key(value)
    except BadKey:
        return None
