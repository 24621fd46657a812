"""One line of text through every rule of :mod:`memvault.vault_io.secrets` but the multi-line ones.

:class:`Line` runs each rule once over the line's lower-cased copy (token
shapes, headers, URLs, keyed values, user/password pairs, command lines) and
records the spans of secrets; :func:`label_kind` and :func:`label_value`
carry a label's value onto the next line. Every loop here moves forward: a
rejected key resumes after its word (or past a long value), an accepted one
after its value, so each line costs time linear in its length.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator

from memvault.vault_io import secrets_rules as R
from memvault.vault_io.secrets_judge import (
    ASSIGNED,
    BARE,
    KEY,
    LABEL,
    OPTION,
    PASSPHRASE,
    PASSWORD,
    PIN,
    PROSE,
    SET_VERBS_RE,
    TABLE,
    TOKEN,
    goes_on,
    is_placeholder,
    judge,
    key_kind,
    looks_random,
    looks_secret,
    password_like,
    token_end,
    value_end,
)
from memvault.vault_io.secrets_rules import REDACTED, SHORT_FLAGS, Span

# -- one line --------------------------------------------------------------------------


class Line:
    """The spans found in one line. The patterns read its lower-cased copy
    (:class:`~memvault.vault_io.secrets_rules.CasePattern`); what they found
    is read back from the line as typed (:meth:`text`)."""

    def __init__(self, line: str, low: str | None = None) -> None:
        self.line = line
        low = line.lower() if low is None else low
        self.low = low if len(low) == len(line) else None  # None: match the line as typed, ignoring case
        self.spans: list[Span] = []
        self.token_spans: list[Span] = []

    def search(self, pat: R.CasePattern, pos: int = 0) -> re.Match[str] | None:
        """``pat`` searched from ``pos``."""
        if self.low is not None:
            return pat.lower.search(self.low, pos)
        return pat.anycase.search(self.line, pos)

    def finditer(self, pat: R.CasePattern, pos: int = 0) -> Iterator[re.Match[str]]:
        """Every match of ``pat``."""
        if self.low is not None:
            return pat.lower.finditer(self.low, pos)
        return pat.anycase.finditer(self.line, pos)

    def text(self, m: re.Match[str], group: str) -> str:
        """A group of a match as typed (empty when it did not take part)."""
        start = m.start(group)
        return "" if start < 0 else self.line[start:m.end(group)]

    def add(self, start: int, end: int) -> None:
        """Record a secret at ``start:end``."""
        if end > start:
            self.spans.append((start, end))

    def _inside(self, pos: int) -> bool:
        """Whether ``pos`` lies in a span found by a token's shape (found first, in order)."""
        i = bisect.bisect_right(self.token_spans, (pos, len(self.line) + 1)) - 1
        return i >= 0 and self.token_spans[i][0] <= pos < self.token_spans[i][1]

    def scan(self) -> None:
        """Every rule but the multi-line ones, each one linear scan of the line."""
        line, low = self.line, self.low if self.low is not None else self.line.lower()
        if R.TOKEN_CUE_RE.search(low):
            for m in R.TOKEN_RE.finditer(line):
                self.add(*m.span())
            self.token_spans = list(self.spans)
        if "authoriz" in low:
            self._auth()
        if "bearer" in low:
            for m in self.finditer(R.BEARER_RE):
                if not is_placeholder(self.text(m, "value")):
                    self.add(*m.span("value"))
        if "://" in low:
            self._urls()
        if "aws" in low or "secret" in low:
            self._aws_secrets()
        self._keyed()
        self._pairs()
        self._userpass(low)
        self._commands(low)

    def _auth(self) -> None:
        for m in self.finditer(R.AUTH_RE):
            value, scheme = self.text(m, "value"), m.group("scheme")
            if is_placeholder(value) or not (looks_random(value) or (scheme and len(value) >= 8)):
                continue
            self.add(m.start("value"), m.start("value") + token_end(value))

    def _urls(self) -> None:
        for m in self.finditer(R.URL_AUTHORITY_RE):
            auth, base = self.text(m, "auth"), m.start("auth")
            at = auth.rfind("@")
            if at <= 0:
                continue
            colon = auth.find(":", 0, at)
            if colon >= 0:
                if not is_placeholder(auth[colon + 1:at]):
                    self.add(base + colon + 1, base + at)
            elif looks_random(auth[:at]) and not is_placeholder(auth[:at]):
                self.add(base, base + at)  # a token as the user: https://<token>@host

    def _aws_secrets(self, anywhere: bool = False) -> None:
        if not anywhere and not self.search(R.AWS_CUE_RE):
            return
        for m in R.AWS_SECRET_RE.finditer(self.line):
            value = m.group(0)
            if looks_random(value) and not value.isalpha() and not value.isdigit() and not hex(value):
                self.add(*m.span())

    def _keyed(self) -> None:
        """``key: value``, ``key is value``, ``key value``: a manual scan, as a
        rejected key's value may hold the next key ("password: token: x")."""
        pos = 0
        while True:
            m = self.search(R.KEYED_RE, pos)
            if m is None:
                return
            if self._inside(m.start("cue")):
                pos = m.end("cue")  # a key word inside a token found by its shape ("..._Pw")
                continue
            end = self._keyed_one(m)
            if end is None:
                # Rejected: read on after its word, or past a long value (no
                # key word runs 64 characters into one), so no character is
                # read more than a constant number of times.
                value = m.group("value") or ""
                end = m.start("value") + len(value) if len(value) >= 64 else m.end("cue")
            pos = end

    def _keyed_one(self, m: re.Match[str]) -> int | None:
        line = self.line
        cue = self.text(m, "cue")
        kind = key_kind(line, m.start("cue"), cue)
        if kind is None and cue.lower() == "pass" and m.group("sign") in ("->", "=>", "=", ":="):
            kind = PASSWORD  # "pass -> 'x'", "pass = x": code assigns a password, a boarding pass takes ":"
        if kind is None or m.group("held") is not None:
            return None
        form = value_form(m)
        if cue.lower() in ("sig", "signature") and form != ASSIGNED:
            return None
        if m.group("to") is not None and not SET_VERBS_RE.search(self.low or line, max(0, m.start("cue") - 48), m.start("cue")):
            return None
        if m.group("bare") is not None and m.group("close") and kind in (KEY, TOKEN, PIN):
            return None  # '"token" abc': a quoted word, not a key
        if m.group("qual") and not qualifier_ok(m.group("qual")):
            return None
        if m.group("q"):
            start, value = m.start("quoted"), self.text(m, "quoted")
            if kind == PASSPHRASE or (kind == PASSWORD and " " in value):
                ok = not is_placeholder(value) and REDACTED not in value
            else:
                ok = judge(kind, form, value, goes_on=False)
            if ok:
                self.add(start, start + len(value))
                return m.end()
            return None
        start, raw = m.start("value"), self.text(m, "value")
        if form == BARE and raw[:1] in "([{-":
            return None  # "passwords (avoids ...)", "creds --from-file": a parenthesis or an option, not a value
        if kind == PASSPHRASE and form != BARE:
            end = passphrase_end(line, start, assigned=form == ASSIGNED)
            if end is not None:
                self.add(start, end)
                return end
        value = raw[: value_end(raw)]
        if not judge(kind, form, value, goes_on=goes_on(line, start + len(raw))):
            return None
        if len(raw) >= 255:  # the pattern reads 256 characters of a value: a longer one goes whole
            raw = extend(line, start, raw)
            value = raw[: value_end(raw)]
        self.add(start, start + len(value))
        return start + len(raw)

    def _pairs(self) -> None:
        pos = 0
        while True:
            m = self.search(R.PAIR_RE, pos)
            if m is None:
                return
            end = self._pair_one(m)
            pos = end if end is not None else m.end("ucue")

    def _pair_one(self, m: re.Match[str]) -> int | None:
        ucue, pcue = m.group("ucue"), m.group("pcue")
        tight = m.group("join") is not None or (m.group("join2") or "") in ("/", "%")
        signed_in = ucue.endswith(" as") and m.group("join2") == "with"  # "logged in as bob with X"
        if pcue is None and not signed_in and not (tight and ucue in ("login", "logon", "creds", "credentials")):
            return None  # without a password word only "login user/pass", "creds: user:pass"
        if pcue == "p" and ucue != "u":
            return None  # "p" is a password only after "u": "u: deploy p: X"
        group = "quoted" if m.group("q") else "value"
        start, value = m.start(group), self.text(m, group)
        if group == "value":
            if is_placeholder(value):
                return None
            value = value[: value_end(value)]
        strong = ucue in ("creds", "credentials") or (pcue is not None and pcue != "p")
        if is_placeholder(value) or REDACTED in value or value.lower() in R.FUNCTION_WORDS:
            return None
        if pcue is not None:
            signed = any(c in "=:" for c in self.line[m.end("pcue"):start])
            if not password_like(value, ASSIGNED if signed else BARE, goes_on(self.line, start + len(value))):
                return None
        if not strong and not looks_secret(value):
            return None
        if len(value) >= 255 and group == "value":
            value = extend(self.line, start, value)
            value = value[: value_end(value)]
        self.add(start, start + len(value))
        return start + len(value)

    def _userpass(self, low: str) -> None:
        """``user:pass`` after a word that says a login follows ("default creds: admin:Sw1tch#Def")."""
        cue = R.USERPASS_CUE_RE.search(low)
        if cue is None:
            return
        for m in R.USERPASS_RE.finditer(self.line, cue.end()):
            if m.start() - cue.end() > 120:
                break
            value = m.group("value")
            if looks_secret(value) and not is_placeholder(value) and REDACTED not in value:
                self.add(*m.span("value"))

    def _commands(self, low: str) -> None:
        for m in self.finditer(R.LONG_OPTION_RE):
            self._option(m)
        if "pass:" in low or "/p:" in low:
            for m in self.finditer(R.PASS_ARG_RE):
                value = self.text(m, "value")
                if not is_placeholder(value):
                    self.add(m.start("value"), m.start("value") + token_end(value))
        if "echo" in low or "printf" in low:
            for m in self.finditer(R.PIPED_RE):
                if R.PIPE_TARGET_RE.search(self.text(m, "cmd")):
                    group = "quoted" if m.group("q") else "value"
                    if not is_placeholder(self.text(m, group)):
                        self.add(*m.span(group))
        pos = 0
        while (tool := self.search(R.TOOL_RE, pos)) is not None:
            pos = tool_args(self, tool)

    def _option(self, m: re.Match[str]) -> None:
        name = m.group("name").lower()
        group = "quoted" if m.group("q") else "value"
        value, start = self.text(m, group), m.start(group)
        if group == "value":
            value = value[: value_end(value)]
        if is_placeholder(value):
            return
        if name.endswith("user") or name == "auth":
            sep = min((i for i in (value.find(":"), value.find("%")) if i > 0), default=-1)
            if sep > 0:
                if not is_placeholder(value[sep + 1:]):
                    self.add(start + sep + 1, start + len(value))
                return
            if name.endswith("user"):
                return
        if name.endswith("key") and not name.endswith("apikey") and name not in ("api-key", "access-key", "secret-key"):
            kind = KEY
        elif any(w in name for w in ("pass", "pwd")):
            kind = PASSWORD
        else:
            kind = TOKEN
        if judge(kind, OPTION, value, goes_on=False):
            if group == "value" and len(value) >= 255:
                value = extend(self.line, start, value)
                value = value[: value_end(value)]
            self.add(start, start + len(value))


def qualifier_ok(qual: str) -> bool:
    """A qualifier names what a credential is for ("for the old NAS"), not a
    calculation ("a combination of 36 x 15 = 540"): no word of it is a number."""
    return not any(w.isdigit() for w in qual.split())


def hex(value: str) -> bool:
    return all(c in "0123456789abcdef" for c in value.lower())


def value_form(m: re.Match[str]) -> str:
    """How a keyed match gives its value."""
    if m.group("sign"):
        return TABLE if m.group("sign") == "|" else ASSIGNED
    if m.group("dash"):
        return TABLE  # "password - x": a dash is a weak sign, a plain word after it is prose
    if m.group("verb"):
        return ASSIGNED if m.group("colon") else PROSE
    if m.group("to") is not None:
        return PROSE
    return BARE


def extend(line: str, start: int, value: str) -> str:
    """A value's whole token (the pattern reads at most 256 characters of it)."""
    if len(value) < 255:
        return value
    end = start + len(value)
    while end < len(line) and not line[end].isspace() and line[end] not in "\"'`<":
        end += 1
    return line[start:end]


def passphrase_end(line: str, start: int, *, assigned: bool) -> int | None:
    """Where a passphrase of several words starting at ``start`` ends (its
    clause's end), or None for a single word (judged as a password) or, in
    prose, a sentence rather than a phrase: an assigned passphrase
    ("passphrase: tangled violins drift over marble") is the whole clause; one
    said in prose must be mostly content words, not led by a function word
    ("the passphrase is long and hard to remember" is a sentence)."""
    window = line[start:start + 200]
    m = R.CLAUSE_END_RE.search(window)
    end = m.start() if m else len(window)
    words = [w.lower().strip(",:;\"'") for w in window[:end].split()]
    if len(words) < 2:
        return None
    if not assigned:
        # (key words are no content either: "passphrase" then "key key" is no phrase)
        function = sum(1 for w in words if w in R.FUNCTION_WORDS or R.PLACEHOLDER_RE.match(w))
        if words[0] in R.FUNCTION_WORDS or function * 4 > len(words) or len(words) > 12:
            return None
    return start + len(window[:end].rstrip())


def tool_args(found: Line, m: re.Match[str]) -> int:
    """The secrets among the arguments of the command started by tool ``m``,
    by the table of its short options; the position where its command ends."""
    line = found.line
    family = R.tool_family(m.group("tool"))
    end = len(line)
    for stop in (";", "|", "&&", "\n"):
        i = line.find(stop, m.end())
        if 0 <= i < end:
            end = i
    args = [(a.start(), a.group()) for a in R.ARG_RE.finditer(line, m.end(), end)]
    flags = SHORT_FLAGS.get(family, ())
    if family in ("docker", "podman", "nerdctl", "helm", "oras", "skopeo", "buildah", "az", "oc", "cf"):
        if not any(a == "login" for _, a in args):
            flags = ()
    if family == "htpasswd":
        htpasswd(found, args)
    if family == "net":
        net_use(found, args)
    for i, (start, arg) in enumerate(args):
        for flag, how in flags:
            if not arg.startswith(flag):
                continue
            if arg == flag:
                if i + 1 >= len(args) or how == "attached" or args[i + 1][1].startswith("-"):
                    continue
                vstart, value = args[i + 1]
            else:
                vstart, value = start + len(flag), arg[len(flag):]
                if value.startswith("="):
                    vstart, value = vstart + 1, value[1:]
            flag_value(found, how, vstart, value)
    return max(end, m.end())


def net_use(found: Line, args: list[tuple[int, str]]) -> None:
    """Windows ``net use [Z:] \\\\host\\share PASSWORD /user:...`` and ``net user NAME PASSWORD``:
    the password is the positional argument after the share or the user's name."""
    words = [a for _, a in args]
    if not words:
        return
    if words[0].lower() == "use":
        at = next((i for i, a in enumerate(words) if a.startswith("\\\\")), None)
    elif words[0].lower() == "user" and len(words) > 1 and not words[1].startswith("/"):
        at = 1
    else:
        return
    if at is not None and at + 1 < len(words) and not words[at + 1].startswith(("/", "*")):
        flag_value(found, "next", *args[at + 1])


def flag_value(found: Line, how: str, start: int, value: str) -> None:
    """Add the secret of a short option's value (quotes stripped; after the user for user:pass)."""
    if value[:1] in "'\"" and value[-1:] == value[:1] and len(value) >= 2:
        start, value = start + 1, value[1:-1]
    if how in ("userpass", "certpass"):
        cut = min((i for i in (value.find(":"), value.find("%"), value.find(",") if how == "userpass" else -1) if i > 0),
                  default=-1)
        if cut < 0:
            return
        start, value = start + cut + 1, value[cut + 1:]
    if value and not is_placeholder(value) and REDACTED not in value:
        found.add(start, start + len(value))


def htpasswd(found: Line, args: list[tuple[int, str]]) -> None:
    """``htpasswd -b[c] FILE USER PASS`` / ``htpasswd -nb USER PASS``: the password is positional."""
    flags = "".join(a[1:] for _, a in args if a.startswith("-"))
    if "b" not in flags:
        return
    positional = [(s, a) for s, a in args if not a.startswith("-")]
    index = 1 if "n" in flags else 2
    if len(positional) > index:
        flag_value(found, "next", *positional[index])


def label_kind(line: str) -> tuple[str, str] | None:
    """The kind of the key that ends ``line`` as a label for the next line's
    value, and the value's form: a label with a sign ("Password:") takes any
    value, a key alone on its line ("**Password**") only one that looks secret."""
    found = Line(line)
    m = found.search(R.LABEL_END_RE, max(0, len(line) - 160))  # a label ends its line
    if m is None:
        return None
    if m.group("sign"):
        form = LABEL
    elif only_label(line, m.start()):
        form = BARE
    else:
        return None
    kind = key_kind(line, m.start("cue"), found.text(m, "cue"))
    return (kind, form) if kind is not None else None


def only_label(line: str, start: int) -> bool:
    """A key standing as a label on its line: at most three words before it, no
    sentence ("**Password**", "## Token", "API key", "  admin password", "Wi-Fi (WPA2) passphrase")."""
    before = line[:start].strip(" \t#*_>-`|")
    return len(before.split()) <= 3 and not any(c in before for c in ".!?,;:=")


def label_value(found: Line, label: tuple[str, str]) -> None:
    """The value of a label on the line before: this line's one token (or, for a
    passphrase, its content words)."""
    line, (kind, form) = found.line, label
    m = R.NEXT_VALUE_RE.match(line)
    if m is None:
        stripped = line.strip()
        words = stripped.split()
        # Under a label without a sign ("Wi-Fi passphrase"), a line of words is
        # a value only when it does not read as a sentence: three words or
        # more, each capitalised or a number ("Moonlight Over Kelp Forest 2026").
        set_apart = len(words) >= 3 and all(w[:1].isupper() or w.isdigit() for w in words)
        if kind == PASSPHRASE and (form == LABEL or set_apart):
            start = line.find(stripped)
            end = passphrase_end(line, start, assigned=form == LABEL)
            if end is not None:
                found.add(start, end)
        return
    if m.group("q"):
        if not is_placeholder(m.group("quoted")):
            found.add(*m.span("quoted"))
        return
    value = m.group("value")
    value = value[: value_end(value)]
    if judge(kind, form, value, goes_on=False):
        found.add(m.start("value"), m.start("value") + len(value))


