"""The patterns of :mod:`memvault.vault_io.secrets`, kept apart from the code that judges what they find.

Every pattern here runs in time linear in its input. Each one starts at a
literal cue (a key word, a token's prefix, a tool's name, ``://``), so an
attempt begins only where a cue stands, and after the cue it has no two
quantifiers that can share characters: a run is either bounded by a small
constant (``{1,60}``) or possessive (``++``, ``*+``: once taken, never given
back). So no attempt backtracks over more than a constant number of
characters and a scan costs O(length x number of alternatives). A key's
prefix (``db_`` in ``db_password``) is never matched by a pattern: the code
looks back a bounded number of characters instead (a pattern starting with
``(?:[A-Za-z0-9]+_)*password`` re-reads a long identifier from every start:
quadratic, the old redactor's flaw).
"""

from __future__ import annotations

import re
from typing import Any

from memvault.vault_io.lazy_pattern import LazyPattern

REDACTED = "[redacted]"
Span = tuple[int, int]


class CasePattern:
    """A pattern read on the lower-cased text (no case folding at each
    character: several times faster), or with ``re.I`` on the text as typed
    where lower-casing changed its length (offsets would no longer agree)."""

    __slots__ = ("lower", "anycase")

    def __init__(self, pattern: str) -> None:
        self.lower = LazyPattern(pattern)
        self.anycase = LazyPattern(pattern, re.I)


# -- the prefilter -------------------------------------------------------------------

# What every rule below needs in its line, lower-cased: a word that names a
# credential, a tool, a token's prefix. Each is a literal and a condition
# after it (a boundary where prose makes the word common: "keyboard",
# "spinning", "laws"). A line with none of these is never read by a rule
# (nearly all lines of a vault), and every rule needs one of them in its line,
# at least as loosely as the rule itself reads it (a test checks that
# redaction with and without the prefilter agree).
_AWS_ID_TAIL = r"(?=[0-9a-z]{16}(?![0-9a-z]))"
_TOOL_TAIL = r"(?![a-z0-9_.-])"
WORD_CUES: tuple[tuple[str, str], ...] = (
    ("pass", r"(?:w|phrase|code|wort|(?![a-z]))"), ("pwd", ""), ("pw", r"(?<![a-z]pw)(?:ord)?(?![a-z])"),
    ("secret", ""), ("token", ""), ("key", r"s?(?![a-z])|[ \t]*+[=:]"), ("apikey", ""), ("keygen", ""),
    ("pin", r"(?<![a-z]pin)s?(?![a-z])"), ("code", r"(?<![a-z]code)s?(?![a-z])"), ("combination", ""),
    ("credential", ""), ("creds", ""), ("login", ""), ("logon", ""), ("mnemonic", ""), ("phrase", ""),
    ("kennwort", ""), ("contrase", ""), ("senha", ""), ("wachtwoord", ""), ("senord", ""),
    ("-user", ""), ("-auth", ""), ("authoriz", ""), ("bearer", ""), ("-----begin", ""), ("aws", r"(?<![a-z]aws)"),
    ("://", r"(?=[^\s/@]*+@)"), ("hooks.slack.com", ""), ("sig", r"(?:nature)?[ \t]*+[=:]"), ("/p:", ""),
    ("echo", r"[ \t]"), ("printf", r"[ \t]"), ("p:", r"(?<![a-z]p:)"), ("puk", ""), ("padlock", ""),
    ("lockbox", ""), ("keypad", ""), ("seed word", ""), ("recovery word", ""), ("logged in as", ""),
    ("log in as", ""), ("signed in as", ""), ("sign in as", ""), ("net use", ""), ("net user", ""),
    # tools whose short options carry a secret (TOOL_RE; docker, az... count only with "login")
    *((t, "") for t in ("mysql", "mariadb", "mycli", "mongo", "redis-cli", "ldap", "sqlcmd", "bcp", "zip", "7z",
                        "unrar", "curl", "smbclient", "rpcclient", "smbmap", "crackmapexec", "nxc", "lftp",
                        "mosquitto_", "twine", "rdesktop", "useradd", "usermod", "influx")),
    ("rar", r"(?<![a-z0-9_.-]rar)" + _TOOL_TAIL),
)
# Token prefixes (TOKEN_PATTERNS, lower-cased): a line without one skips the token patterns.
TOKEN_CUES: tuple[tuple[str, str], ...] = (
    *((p, _AWS_ID_TAIL) for p in ("akia", "asia", "agpa", "aida", "aroa", "anpa", "anva", "aipa")),
    *((p, "") for p in (
        "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "gldt-", "glrt-", "glptt-", "glft-", "glcbt-",
        "glimt-", "gloas-", "glsoat-", "glagent-", "glffct-", "glwt-", "glsa_", "hf_", "npm_", "pypi-", "k_live_",
        "k_test_", "xox", "xapp-", "aiza", "ya29.", "whsec_", "eyj", "shpat_", "shpca_", "shppa_", "shpss_", "_v1_",
        "pmak-", "hvs.", "hvb.", "hvr.", "dapi", "dckr_", "lin_api_", "ntn_", "sbp_", "gsk_", "r8_", "sq0", "atatt",
        ":aa",
    )),
    ("sk-", r"(?<![a-z0-9_]sk-)"), ("sg.", r"(?<![a-z0-9_]sg\.)"),
)


def _trie(literals: list[str]) -> str:
    """One pattern for many literals, merged into a trie ("pass|pwd|pw" is
    "p(?:ass|w(?:d|))"), the longest first; ~4x faster than a flat alternation."""
    root: dict[str, Any] = {}
    for literal in literals:
        node = root
        for ch in literal:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict[str, Any]) -> str:
        alts = [re.escape(ch) + emit(child) for ch, child in sorted(node.items()) if ch]
        if "" in node:
            alts.append("")
        return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"

    return emit(root)


CUES = WORD_CUES + TOKEN_CUES
# The literals in one pattern (a scan of the text at C speed); each hit's
# condition is then checked where it stands (a hit whose condition fails is
# no cue: "keyboard", "spinning").
CUE_LITERAL_RE = LazyPattern(_trie([literal for literal, _ in CUES]))
CUE_TAILS: dict[str, LazyPattern | None] = {literal: LazyPattern(tail) if tail else None for literal, tail in CUES}
TOKEN_CUE_RE = LazyPattern(_trie([literal for literal, _ in TOKEN_CUES]))


def find_cue(low: str, pos: int = 0) -> int:
    """Where the first cue at or after ``pos`` in lower-cased ``low`` starts, or -1."""
    while True:
        m = CUE_LITERAL_RE.search(low, pos)
        if m is None:
            return -1
        tail = CUE_TAILS[m.group()]
        if tail is None or tail.match(low, m.end()):
            return m.start()
        pos = m.start() + 1


# -- token formats: a credential by its shape alone ---------------------------------

_B = r"(?<![A-Za-z0-9_])"  # a token starts a word ("_" too: "my_ghp_..." is not GitHub's)
_E = r"(?![A-Za-z0-9_])"  # and ends one
_E_DASH = r"(?![A-Za-z0-9_-])"  # when "-" may be part of the token
TOKEN_PATTERNS: tuple[str, ...] = (
    rf"{_B}(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{{16}}{_E}",  # AWS access key ids
    rf"{_B}gh[pousr]_[A-Za-z0-9]{{30,}}+{_E}",  # GitHub
    rf"{_B}github_pat_[A-Za-z0-9_]{{22,}}+",
    rf"{_B}gl(?:pat|dt|rt|ptt|ft|cbt|imt|oas|soat|agent|ffct|wt)-[A-Za-z0-9_-]{{20,}}+",  # GitLab
    rf"{_B}glsa_[A-Za-z0-9_]{{32,}}+",  # Grafana service accounts
    rf"{_B}hf_[A-Za-z0-9]{{30,}}+{_E}",  # Hugging Face
    rf"{_B}npm_[A-Za-z0-9]{{30,}}+{_E}",
    rf"{_B}pypi-[A-Za-z0-9_-]{{50,}}+",
    rf"{_B}sk-(?:proj-|svcacct-|admin-|ant-(?:api\d\d-|admin\d\d-)?|or-v1-)?[A-Za-z0-9_-]{{20,}}+",  # OpenAI, Anthropic...
    rf"{_B}xox[a-z]-[A-Za-z0-9-]{{10,}}+",  # Slack
    rf"{_B}xoxe\.xox[a-z]-[A-Za-z0-9-]{{10,}}+",
    rf"{_B}xapp-\d-[A-Za-z0-9-]{{10,}}+",
    r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]++",
    rf"{_B}AIza[0-9A-Za-z_-]{{35}}{_E_DASH}",  # Google API keys
    rf"{_B}ya29\.[0-9A-Za-z_-]{{20,}}+",  # Google OAuth access tokens
    rf"{_B}(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{{16,}}+{_E}",  # Stripe
    rf"{_B}whsec_[0-9A-Za-z]{{24,}}+{_E}",
    rf"{_B}SG\.[A-Za-z0-9_-]{{16,}}+\.[A-Za-z0-9_-]{{16,}}+",  # SendGrid
    rf"{_B}eyJ[A-Za-z0-9_-]{{8,}}+\.eyJ[A-Za-z0-9_-]{{8,}}+\.[A-Za-z0-9_-]{{8,}}+",  # JWT
    rf"{_B}[sp]k\.eyJ[A-Za-z0-9_-]{{20,}}+\.[A-Za-z0-9_-]{{20,}}+",  # Mapbox
    rf"{_B}shp(?:at|ca|pa|ss)_[a-fA-F0-9]{{32}}{_E}",  # Shopify
    rf"{_B}do[opr]_v1_[a-f0-9]{{64}}{_E}",  # DigitalOcean
    rf"{_B}PMAK-[a-f0-9]{{24}}-[a-f0-9]{{34}}{_E}",  # Postman
    rf"{_B}hv[sbr]\.[A-Za-z0-9_-]{{24,}}+",  # HashiCorp Vault
    rf"{_B}dapi[a-f0-9]{{32}}(?:-\d)?{_E}",  # Databricks
    rf"{_B}dckr_pat_[A-Za-z0-9_-]{{20,}}+",  # Docker Hub
    rf"{_B}lin_api_[A-Za-z0-9]{{32,}}+{_E}",  # Linear
    rf"{_B}ntn_[A-Za-z0-9]{{40,}}+{_E}",  # Notion
    rf"{_B}sbp_[a-f0-9]{{40}}{_E}",  # Supabase
    rf"{_B}gsk_[A-Za-z0-9]{{40,}}+{_E}",  # Groq
    rf"{_B}r8_[A-Za-z0-9]{{30,}}+{_E}",  # Replicate
    rf"{_B}sq0(?:atp|csp)-[A-Za-z0-9_-]{{22,}}+",  # Square
    r"\bAGE-SECRET-KEY-1[0-9A-Z]{58}\b",  # age
    rf"{_B}ATATT3[A-Za-z0-9_=-]{{20,}}+",  # Atlassian
    rf"(?<![0-9])\d{{8,10}}:AA[A-Za-z0-9_-]{{33}}{_E_DASH}",  # Telegram bots
)
TOKEN_RE = LazyPattern("|".join(f"(?:{p})" for p in TOKEN_PATTERNS))

# An AWS access key id: a 40-character secret in the same text is its secret key.
AWS_ID_RE = LazyPattern(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Za-z0-9])")
# 40 characters of base64 standing alone (no longer run around it).
AWS_SECRET_RE = LazyPattern(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
AWS_CUE_RE = CasePattern(r"(?<![a-z])aws|secret")

# -- private key blocks --------------------------------------------------------------

PEM_BEGIN_RE = LazyPattern(r"-----BEGIN (?:[A-Z0-9]{1,20} ){0,6}PRIVATE KEY(?: BLOCK)?-----")
PEM_END_RE = LazyPattern(r"-----END (?:[A-Z0-9]{1,20} ){0,6}PRIVATE KEY(?: BLOCK)?-----")

# -- headers -------------------------------------------------------------------------

# "Authorization: Bearer X", "authorization=Basic X": the scheme is kept.
AUTH_RE = CasePattern(
    r"\bauthorization['\"]?[ \t]*+(?:::|:|=)[ \t]*+['\"]?"
    r"(?:(?P<scheme>bearer|basic|token|digest|apikey|bot)[ \t]++)?(?P<value>[A-Za-z0-9._~+/=:-]++)"
)
BEARER_RE = CasePattern(r"\bbearer[ \t]++(?P<value>[A-Za-z0-9._~+/-]{16,}+=*+)")

# -- URLs ----------------------------------------------------------------------------

# A URL's authority ("user:pass@host"): taken whole, split by the code (the
# password runs from the first ":" to the last "@").
URL_AUTHORITY_RE = CasePattern(r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,20}://(?P<auth>[^\s/\"'<>`]++)")

# -- keyed values --------------------------------------------------------------------

# The word that names a credential, the last word of its key. Its left
# boundary is checked by the code (a bounded look back), its right one here.
_CUE_WORD = (
    r"(?P<cue>password(?:s|e)?|passwort|kennwort|passwd|passphrase|passcode(?:s)?|pwd|pass|pw|pword"
    r"|contrase[ñn]a|senha|wachtwoord|l[oö]senord|mot[ \t]de[ \t]passe"
    r"|secret|token|api[_-]?key|key|pins?|puk|codes?|combination|padlock|lockbox|keypad|credentials?|creds"
    r"|mnemonic|phrase|words|signature|sig)"
)
# Markdown, quotes or brackets closing a key: "**password**:", '"password":', "<password>".
_CLOSE = r"(?P<close>[*_`'\"\]>)]{0,3}+)"
# "password for the old NAS is ...", "PIN to the bike lock: ...", "token (prod): ...".
_QUALIFIER = (
    r"(?P<qual>(?:[ \t]*+,[ \t]*+|[ \t]++)(?:for|to|of|on|at|in|from)[ \t]++[^\s.!?;:=|,\"'`]"
    r"(?:[^\n.!?;:=|\"'`]{0,48}?[^\s.!?;:=|,\"'`])?"
    r"|[ \t]*+\((?P<paren>[^()\n]{1,40}+)\))?"
)
# What stands between a key and its value. A qualifier ("for the NAS") only
# before a sign or a verb: "password for the wifi" alone names no value.
_SIGN = r"(?P<sign>::|:=|=>|->|=|:|\||→|(?<=>))"
_VERB = (
    r"(?P<verb>(?:(?:is|was|has[ \t]+been|had[ \t]+been|got|gets|will[ \t]+be)[ \t]++)?"
    r"(?:set|changed?|reset|updated?)[ \t]++to"
    r"|is[ \t]+still|was[ \t]+still|is[ \t]+now|is[ \t]+just|is|was|are|were|reads|remains|stays)"
    r"(?:[ \t]*+(?P<colon>:))?"
)
_SEP = (
    rf"(?:{_QUALIFIER}(?:[ \t]*+{_SIGN}[ \t]*+|[ \t]++{_VERB}[ \t]++|[ \t]++(?P<dash>[—–-])[ \t]++)"
    r"|(?P<to>[ \t]++to[ \t]++)"  # "changed my PIN to X": the code checks a set/change verb stands before
    r"|(?P<bare>[ \t]++))"
)
# Emphasis or a quote opening the value.
_OPEN = r"(?P<open>[*_]{0,2}+)[ \t]*+"
_VAL = (
    # a quoted value, also one whose closing quote is lost at the line's end
    r"(?:(?P<q>['\"`])(?P<quoted>[^'\"`\n]{1,200}+)(?:(?P=q)|$)"
    r"|(?P<held><[^<>\n]{0,60}+>|\{\{[^{}\n]{0,60}+\}\}|\$\{[^{}\n]{0,60}+\}|\[\[?[^\[\]\n]{0,60}+\]\]?)"
    r"(?=[\s.,;:!?)]|$)"
    r"|['\"`]?+(?P<value>[^\s\"'`<]{1,256}+))"
)
KEYED_RE = CasePattern(rf"{_CUE_WORD}(?![A-Za-z0-9]){_CLOSE}{_SEP}{_OPEN}{_VAL}")
# A key ending its line ("Password:", "api_key =", "- token ::"): its value
# may stand on the next line.
LABEL_END_RE = CasePattern(
    rf"{_CUE_WORD}(?![A-Za-z0-9]){_CLOSE}{_QUALIFIER}[ \t]*+(?P<sign>::|:=|=>|->|=|:|\||—|–)?[ \t]*+$"
)
# The value alone on its line: indentation, a list or quote marker, then one token.
NEXT_VALUE_RE = LazyPattern(
    r"^[ \t]*+\|?[ \t]*+(?:[-*+>][ \t]++|\d{1,3}[.)][ \t]++)?(?P<open>[*_]{0,2}+)(?:(?P<q>['\"`])(?P<quoted>[^'\"`\n]{1,200}+)(?P=q)"
    r"|(?P<value>[^\s\"'`|]++))[*_]{0,2}+[ \t]*+\|?[ \t]*+$"
)

# -- user and password pairs ---------------------------------------------------------

# "user admin pass s3cret", "username: bob, password hunter2", "login bob / hunter2",
# "creds: alice:Tr0ub4dor". The user part is one token.
_USER = (
    r"(?P<ucue>user(?:[ _-]?name)?|login|logon|uid|usr|acct|account|creds|credentials|u"
    r"|(?:logged|log|signed|sign)[ \t]in[ \t]as)"
)
PAIR_RE = CasePattern(
    rf"(?<![A-Za-z0-9_-]){_USER}[*_`'\"]{{0,2}}+(?:[ \t]*+(?:[:=]|is|->)[ \t]*+|[ \t]++)(?:(?:as|with)[ \t]++)?"
    r"[*_`'\"]{0,2}+(?P<user>[^\s:/%,;|\"'`]{1,64}+)[*_`'\"]{0,2}+"
    r"(?:(?P<join>[:/%])(?=\S)|[ \t]*+(?P<join2>/|%|,|;|\||&|and|with)[ \t]*+|[ \t]++)"
    r"(?:(?P<pcue>pass(?:word|wd)?|pwd|pw|pword|pin|p)[*_`'\"]{0,2}+(?:[ \t]*+[:=][ \t]*+|[ \t]++))?"
    r"[*_`'\"]{0,2}+(?:(?P<q>['\"`])(?P<quoted>[^'\"`\n]{1,200}+)(?P=q)|(?P<value>[^\s\"'`]{1,256}+))"
)

# "admin:Sw1tch#Def" after "creds", "login"...: the part after the colon.
USERPASS_RE = LazyPattern(
    r"(?<![A-Za-z0-9_./@:-])(?P<user>[A-Za-z0-9][A-Za-z0-9._@-]{0,63}+):(?P<value>[^\s:/'\"`]{3,128}+)(?![^\s,;)])"
)
USERPASS_CUE_RE = LazyPattern(r"(?<![a-z])(?:creds|credentials?|login|logon)(?![a-z])")
# A user named before a bare "pass" makes it a password ("VPN login is sam.r and the pass is X").
USER_CONTEXT_RE = LazyPattern(r"(?i)(?<![a-z])(?:creds|credentials?|login|logon|account|user(?:name)?|sign[ -]?in)(?![a-z])")

# -- command lines -------------------------------------------------------------------

# A long option that names a credential takes its value: "--password=x",
# "--token x", "-storepass x", "--dbpass=x". Options that name where the
# secret is (--password-file, --token-stdin) end in another word and so do
# not match.
LONG_OPTION_RE = CasePattern(
    r"(?<![A-Za-z0-9_-])--?+(?P<name>(?:[a-z0-9]++-)*+"
    r"(?:[a-z0-9]*+(?:password|passwd|pass|pwd|passphrase|secret|token|apikey)|api-?key|access-key|secret-key|auth"
    r"|key|storepass|keypass|srcstorepass|deststorepass|p12-password|user|proxy-user|http-user|ftp-user))"
    r"(?![A-Za-z0-9_-])(?:=|[ \t]++)(?:(?P<q>['\"])(?P<quoted>[^'\"\n]{1,200}+)(?P=q)|(?P<value>[^\s'\"-][^\s]{0,255}+))"
)
# A password given as "pass:X" (openssl -passin/-passout/-pass/-password), "/p:X" (xfreerdp).
PASS_ARG_RE = CasePattern(r"(?:(?<![A-Za-z0-9])pass:|(?<![A-Za-z0-9])/p:)(?P<value>[^\s'\"]{1,256}+)")
# A tool whose short options carry secrets. The code reads the command's
# arguments up to its end (";", "|", "&&", end of line) and applies the table
# in :data:`SHORT_FLAGS`.
TOOL_RE = CasePattern(
    r"(?<![A-Za-z0-9_.-])(?P<tool>mysql(?:dump|admin|import|show|check|sh)?|mariadb(?:-dump)?|mycli|mongo(?:sh|dump|restore|import|export)?"
    r"|sshpass|docker|podman|nerdctl|helm|oras|skopeo|buildah|redis-cli|ldap(?:search|add|modify|delete|passwd|whoami|compare|modrdn)"
    r"|sqlcmd|bcp|zip|7z|7za|7zr|rar|unrar|curl|smbclient|rpcclient|smbmap|crackmapexec|nxc|lftp|htpasswd|mosquitto_(?:pub|sub)"
    r"|twine|az|oc|cf|rdesktop|ssh-keygen|useradd|usermod|influx|htpasswd|net(?=[ \t]+use))(?![A-Za-z0-9_.-])"
)
# A command's arguments: quoted strings whole, else white-space separated.
ARG_RE = LazyPattern(r"'[^'\n]*+'|\"[^\"\n]*+\"|[^\s'\"]++(?:'[^'\n]*+'|\"[^\"\n]*+\")?")
# A secret piped into a command that reads a password from its input:
# "echo 'x' | sudo -S", "echo $X | docker login --password-stdin", "... | chpasswd".
PIPED_RE = CasePattern(
    r"(?<![A-Za-z0-9_-])(?:echo|printf)(?:[ \t]++-[ne]{1,2}+)?[ \t]++(?:(?P<q>['\"])(?P<quoted>[^'\"\n]{1,200}+)(?P=q)"
    r"|(?P<value>[^\s|'\"]{1,256}+))[ \t]*+\|[ \t]*+(?P<cmd>[^|\n]{0,120}+)"
)
PIPE_TARGET_RE = LazyPattern(r"(?i:sudo)[ \t]+(?:-\w+[ \t]+)*-S\b|(?i:--password-stdin|\bchpasswd\b|\bpasswd\b|-passin[ \t]+stdin)")

# The short options that carry a secret, per tool: (option, how the value is
# given): "attached" (-pVALUE only: "mysql -p db" prompts and names a
# database), "next" (-p VALUE or -pVALUE), "userpass" (the value is
# user:pass, user%pass or user,pass: the part after the separator).
SHORT_FLAGS: dict[str, tuple[tuple[str, str], ...]] = {
    "mysql": (("-p", "attached"),), "mariadb": (("-p", "attached"),), "mycli": (("-p", "next"),),
    "mongo": (("-p", "next"),), "sshpass": (("-p", "next"),), "docker": (("-p", "next"),),
    "podman": (("-p", "next"),), "nerdctl": (("-p", "next"),), "helm": (("-p", "next"),),
    "oras": (("-p", "next"),), "skopeo": (("-p", "next"),), "buildah": (("-p", "next"),),
    "redis-cli": (("-a", "next"),), "ldap": (("-w", "next"),), "sqlcmd": (("-P", "next"),), "bcp": (("-P", "next"),),
    "zip": (("-P", "next"),), "7z": (("-p", "attached"),), "rar": (("-p", "attached"),),
    "curl": (("-u", "userpass"), ("-U", "userpass"), ("-E", "certpass")), "smbclient": (("-U", "userpass"),),
    "rpcclient": (("-U", "userpass"),), "smbmap": (("-p", "next"),), "crackmapexec": (("-p", "next"),),
    "nxc": (("-p", "next"),), "lftp": (("-u", "userpass"),),
    "mosquitto": (("-P", "next"),), "twine": (("-p", "next"),), "az": (("-p", "next"),), "oc": (("-p", "next"),),
    "cf": (("-p", "next"),), "rdesktop": (("-p", "next"),), "ssh-keygen": (("-N", "next"), ("-P", "next")),
    "useradd": (("-p", "next"),), "usermod": (("-p", "next"),), "influx": (("-p", "next"),), "htpasswd": (),
    "net": (),
}


def tool_family(tool: str) -> str:
    """The key of :data:`SHORT_FLAGS` for a tool's name (mysqldump is mysql)."""
    low = tool.lower()
    for family in ("mysql", "mariadb", "mongo", "ldap", "mosquitto", "7z"):
        if low.startswith(family):
            return family
    return {"unrar": "rar", "7za": "7z", "7zr": "7z"}.get(low, low)


# -- judging values ------------------------------------------------------------------

# Words that make a run of words prose, not a passphrase: a passphrase is
# content words ("purple monkey dishwasher seven"); "in the vault", "and
# hard to remember" are a sentence going on.
FUNCTION_WORDS = frozenset(
    "a an the this that these those my your his her its our their some any no not never is are was were be been "
    "being am do does did done has have had will would can could should must may might shall to of in on at by for "
    "from with without into onto about over under than then and or but nor so if when where which who whom whose "
    "what why how as it he she we they i you me him us them there here also just only still again now yet too very "
    "all each every both either neither one ones see ask use used using stored kept saved written found sent set "
    "changed reset rotated expired required needed same different new old".split()
)
# A placeholder standing for a value (also an already redacted one).
PLACEHOLDER_RE = LazyPattern(
    r"^(?:[*xX.•_-]{3,}+|<[^>]*+>|\{\{[^}]*+\}\}|\$\{[^}]*+\}|%[A-Za-z_]++%|\[[^\]]*+\]"
    # a variable standing for the value: $DB_PASSWORD, $token (letters, or with an "_")
    r"|\$(?:[A-Za-z]++|[A-Za-z0-9]*+_[A-Za-z0-9_]*+)"
    r"|(?i:none|null|nil|empty|n/?a|tbd|todo|changeme|example|redacted|hidden|\*+|your[-_ ]\w++.*+)"
    # a key word itself ("password: password" names no value)
    r"|(?i:password|passwd|passphrase|passcode|secret|token|key|pin|code|credentials?)"
    r"|[A-Z]++(?:_[A-Z0-9]++)++)$"
)
# A value saying where something is: a URL, a relative, home or absolute path.
LOCATION_RE = LazyPattern(r"(?:[A-Za-z][A-Za-z0-9+.-]*+://|~/|\.\.?/|/[A-Za-z])")
# What joins the parts of one word: "well-known", "don't".
WORD_JOINS_RE = LazyPattern(r"['’-]")
# Where a passphrase in prose ends: a sentence's end, a clause's mark, the line's end.
CLAUSE_END_RE = LazyPattern(r"[.!?;,)](?=\s|$)|[;(]|[ \t][-–—][ \t]|\n|$")
