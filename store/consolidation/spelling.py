"""Another way of writing one word: a spelling, an acronym or short form,
a word written glued (:mod:`.paraphrase` sets such differing words aside).

* a spelling of a word the other side has ("greyscale" / "grayscale",
  "teacher" / "teaches", "seasick" / "sick", "Hibs" / "Hibernian"):
  :func:`same_spelling`;
* an acronym or short form of words the other side spells out ("PR" / "pull
  request", "NC500" / "North Coast 500", "dept" / "department"):
  :func:`spelled_out`;
* a word the other side writes glued ("e-mail" / "email", "TB" / "2TB"):
  :func:`glued`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache

from memvault.store.consolidation import lexicon
from memvault.store.consolidation.text import STOP_WORDS, fold, stem, words


@dataclass(frozen=True)
class Token:
    """One word of a text: as written, folded, and its stem."""

    raw: str
    folded: str
    stem: str


@lru_cache(maxsize=262144)
def same_spelling(a: str, b: str) -> bool:
    """Whether two folded words are spellings of one word: a shared prefix
    of four letters ("teacher" / "teaches", "Hibs" / "Hibernian" share
    three, so a prefix of three for a short word), or one inside the other
    ("seasick" / "sick")."""
    if a == b:
        return True
    short, long_ = sorted((a, b), key=len)
    if len(short) >= 4 and short in long_ and not _known_apart(short, long_):
        return True
    n = len(os.path.commonprefix([a, b]))  # letters the two words start with alike
    if n >= 4 or (n >= 3 and n == len(short.removesuffix("s"))):
        return True
    return len(short) >= 5 and _one_edit(a, b)


def _known_apart(short: str, long_: str) -> bool:
    """Whether WordNet knows both words and does not call them synonyms: a
    compound is then another thing ("mother" / "grandmother", "brother" /
    "stepbrother"), not another spelling ("sick" / "seasick" are synonyms)."""
    return bool(lexicon.bases(short) and lexicon.bases(long_)) and not lexicon.synonyms(short, long_)


def _one_edit(a: str, b: str) -> bool:
    """Whether one letter changed, added or dropped turns ``a`` into ``b``
    ("grayscale" / "greyscale")."""
    if abs(len(a) - len(b)) > 1:
        return False
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    return a[i + 1:] == b[i + 1:] or a[i:] == b[i + 1:] or a[i + 1:] == b[i:]


#: The longest word read as an abbreviation of one word ("dept", "yr", "TS").
SHORT_WORD = 5
#: The longest acronym read from several words (a bound on the search, not a fit).
ACRONYM = 8


@lru_cache(maxsize=65536)
def spelled_out(tok: Token, other_text: str) -> tuple[str, ...] | None:
    """The folded words of ``other_text`` that ``tok`` abbreviates, or None:

    * an acronym, written with two capitals or more, whose letters (and
      digits) are read in order from consecutive words, each word giving its
      first letter and maybe more of its letters, a word of the closed
      classes inside the span maybe none ("PR": pull request, "NC500": North
      Coast 500, "BSc": Bachelor of Science, "TS": TypeScript);
    * a short word (at most :data:`SHORT_WORD` letters) that is no word of
      WordNet, or a synonym there, whose letters are read in order from one
      longer word with the same first letter ("dept": department, "yr": year);
      two names are two names ("Jo" / "John") unless WordNet joins them;
    * a numeronym: a letter, the count of letters left out, the last letter
      ("i18n": internationalization).
    """
    raw = tok.raw.removesuffix("s") if len(tok.raw) > 2 and tok.raw[:-1].isupper() else tok.raw  # plural: "PRs"
    short = raw.casefold()
    if len(short) < 2 or not short.isalnum():
        return None
    ws = folded_words(other_text)
    m = re.fullmatch(r"([a-z])(\d+)([a-z])", short)
    if m:
        n = int(m.group(2))
        found = tuple(w for w in ws if len(w) == n + 2 and w[0] == m.group(1) and w[-1] == m.group(3))
        return found[:1] or None
    capitals = raw[:1].isupper() and sum(c.isupper() for c in raw) >= 2 and len(short) <= ACRONYM
    if capitals:
        for i in range(len(ws)):  # the longest span first: "TSA" is Transportation Security Administration, not "transportation" alone
            if ws[i][:1] != short[0]:
                continue
            for j in range(min(len(ws), i + 2 * len(short)), i, -1):
                span = ws[i:j]
                if span[0] in STOP_WORDS or span[-1] in STOP_WORDS or short in span:
                    continue
                if _reads(short, tuple(span)):
                    return tuple(w for w in span if w not in STOP_WORDS and not w.isdigit())
    if short.isalpha() and len(short) <= SHORT_WORD and short not in STOP_WORDS:
        for w, written in _by_initial(other_text).get(short[0], ()):
            if len(w) > len(short) and w.isalpha() and _reads(short, (w,)) and (
                    lexicon.synonyms(short, w) or not (lexicon.bases(short) or (raw.istitle() and written.istitle()))):
                return (w,)  # two names are two names ("Jo" / "John"), unless WordNet joins them ("Yr" / "Year")
    return None


@lru_cache(maxsize=65536)
def _by_initial(text: str) -> dict[str, tuple[tuple[str, str], ...]]:
    """The words of ``text`` (folded, as written) by their first letter."""
    out: dict[str, list[tuple[str, str]]] = {}
    for w, written in zip(folded_words(text), words(text)):
        if w:
            out.setdefault(w[0], []).append((w, written))
    return {k: tuple(v) for k, v in out.items()}


@lru_cache(maxsize=65536)
def _reads(short: str, span: tuple[str, ...]) -> bool:
    """Whether ``short`` is read from the words of ``span`` in order (see
    :func:`spelled_out`): each word gives its first letter and maybe more of its
    letters in order, a number its digits, a closed-class word inside the
    span maybe nothing; every letter of ``short`` is used."""

    def read(i: int, k: int) -> bool:
        if k == len(span):
            return i == len(short)
        w = span[k]
        if 0 < k < len(span) - 1 and w in STOP_WORDS and read(i, k + 1):
            return True
        if w.isdigit():
            return short.startswith(w, i) and read(i + len(w), k + 1)
        if i >= len(short) or short[i] != w[0]:
            return False
        j, pos = i + 1, 1  # short[i:j] read from w so far, the next letter of w to look at
        while True:
            if read(j, k + 1):
                return True
            if j >= len(short):
                return False
            pos = w.find(short[j], pos) + 1
            if pos == 0:
                return False
            j += 1

    return read(0, 0)


@lru_cache(maxsize=65536)
def coded_words(text: str) -> tuple[str, ...]:
    """The words of ``text`` made of letters and digits ("i18n", "NC500", "2TB")."""
    return tuple(w for w in words(text) if any(c.isdigit() for c in w) and not w.isdigit())


@lru_cache(maxsize=65536)
def folded_words(text: str) -> tuple[str, ...]:
    """Every word of ``text``, folded, in order."""
    return tuple(fold(w) for w in words(text))


def glued(word: str, other_text: str) -> bool:
    """Whether a folded word is written glued on the other side: two of its
    neighbouring words joined ("email" / "e-mail"), or the letters stuck to a
    number ("TB" / "2TB")."""
    return word in _glue(other_text)


@lru_cache(maxsize=65536)
def _glue(text: str) -> frozenset[str]:
    """What :func:`glued` finds in a text: each two neighbouring words
    joined, and the letters of a word that starts with digits."""
    ws = folded_words(text)
    joined = {a + b for a, b in zip(ws, ws[1:])}
    return frozenset(joined | {w.strip("0123456789") for w in ws if w[:1].isdigit() and not w.isdigit()})


def abbreviations(text: str, other_text: str) -> set[str]:
    """Folded words of ``text`` that are no name of their own against
    ``other_text``: an acronym or short form it spells out ("PR" / "pull
    request", "NC500" / "North Coast 500", "TS" / "TypeScript":
    :func:`spelled_out`), a word such a form of the other text spells, a word
    the other text writes glued ("e-mail" / "email", "TB" / "2TB"), one
    capital letter (a unit: "30°C"), or a name the other text writes as its
    capital initial ("Celsius" / "4°C")."""
    return _abbreviations(text, other_text)


@lru_cache(maxsize=65536)
def _abbreviations(text: str, other_text: str) -> set[str]:
    out = set()
    mine = folded_words(text)
    for raw, folded in zip(words(text), mine):
        if len(raw) == 1 and raw.isupper():
            out.add(folded)
        elif _short_form(raw) and (spelled_out(token_of(raw), other_text) or glued(folded, other_text)):
            out.add(folded)
    other_words = set(folded_words(other_text))
    for x, y in zip(mine, mine[1:]):  # written as two words here, one there: "e-mail" / "email"
        if x + y in other_words:
            out.update((x, y))
    capitals = {f for r, f in zip(words(text), mine) if r[:1].isupper()}
    for raw, folded in zip(words(other_text), folded_words(other_text)):
        if len(raw) == 1 and raw.isupper():  # a unit or an initial: "4°C" / "Celsius"
            out.update(w for w in capitals if w[:1] == folded)
        elif _short_form(raw):
            out.update(spelled_out(token_of(raw), text) or ())
            if glued(folded, text):
                out.update(w for w in mine if folded.startswith(w) or folded.endswith(w) or folded in w)
    return out


def _short_form(raw: str) -> bool:
    """Whether a word as written may be a short form that is no name of its
    own: it has a capital ("PR", "BSc", "TS") or a digit ("i18n", "2TB")."""
    return not (raw.islower() and raw.isalpha())


def token_of(raw: str) -> Token:
    """``raw`` as a :class:`Token`: as written, folded, and its stem."""
    folded = fold(raw)
    return Token(raw, folded, stem(folded))
