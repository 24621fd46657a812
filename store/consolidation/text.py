"""What consolidation reads in a memory's text: words, values and polarity.

Everything here is deterministic string work (no model): the same text gives
the same features on any machine.

* :func:`normalise` is the "normalised text" of the issue and of the
  labelled sets: NFKC, case-folded, punctuation turned into spaces, white
  space collapsed. Two memories with equal normalised text say the same.
* :class:`Features` are what the pair rules (:mod:`.rules`) compare: content
  stems (Snowball English after a small table of irregular verbs, stop words
  out), the values a claim carries (numbers, including number words and
  ordinals; months; weekdays; years; identifiers such as ``S12``), the words
  written with a capital (names), its polarity (an odd number of negations
  and negative verbs: "not", "never", "dislikes", "avoids", "can't stand",
  "quit", "turned off"), and the words that report a change ("moved",
  "switched", "since", "now").
"""

from __future__ import annotations

import os
import re
import tomllib
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Protocol

_PUNCT = re.compile(r"[^\w\s]")
#: Words as written: letters/digits, with inner apostrophes ("doesn't", "Miso's").
_WORD = re.compile(r"\w+(?:['’]\w+)*")
_DIGITS = re.compile(r"\d+")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_IDENTIFIER = re.compile(r"^[^\W\d_]+\d")  # S12, NC500, B17, v2: letters, then digits
_YEAR = re.compile(r"^(19|20)\d\d$")
#: Phrases that negate without a negation word.
_NEGATIVE_PHRASES = re.compile(
    r"\b(?:(?:turn|switch)(?:ed|s|ing)? (?:\w+ )?off|(?:gave|give|gives|giving) up|no longer|can ?not stand"
    r"|can't stand|cant stand)\b"
)

#: The word lists (``lexicon/words.toml``: each with where it comes from).
WORDS_FILE = Path(__file__).with_name("lexicon") / "words.toml"


@lru_cache(maxsize=1)
def word_lists() -> dict[str, frozenset[str]]:
    """Every list of ``lexicon/words.toml`` by name (its words, split)."""
    with WORDS_FILE.open("rb") as fh:
        data = tomllib.load(fh)
    return {name: frozenset(section.get("words", "").split()) for name, section in data.items()}


def _irregular() -> dict[str, str]:
    with WORDS_FILE.open("rb") as fh:
        forms = tomllib.load(fh)["irregular_verbs"]["forms"].split()
    return dict(f.split(":", 1) for f in forms)


_LISTS = word_lists()
STOP_WORDS = _LISTS["stop_words"] | _LISTS["owner_words"]
#: Words that turn a claim around.
NEGATORS = _LISTS["negators"]
#: Stems of verbs and adjectives that say "not" by themselves.
NEGATIVE_STEMS = _LISTS["negative_stems"]
#: Stems of words that report a change ("moved to Porto", "switched to VEX",
#: "since July", "now"): they mark the newer of two claims and do not count
#: as a difference of subject between them.
CHANGE_STEMS = _LISTS["change_stems"]
#: Stems that qualify when a claim holds rather than what it says.
TEMPORAL_STEMS = _LISTS["temporal_stems"]
#: Light verbs: paraphrases swap them freely ("uses"/"takes"/"has").
LIGHT_STEMS = _LISTS["light_stems"]
#: Irregular forms the stemmer leaves apart from their verb.
_IRREGULAR = _irregular()
MONTHS = {
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7, "august": 8,
    "september": 9, "october": 10, "november": 11, "december": 12,
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9, "oct": 10,
    "nov": 11, "dec": 12,
}
WEEKDAYS = frozenset("monday tuesday wednesday thursday friday saturday sunday".split())
_NUMBER_WORDS = {
    "zero": 0, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40,
    "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100,
    "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8,
    "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12, "twice": 2, "dozen": 12,
}
#: First words that are never names, whatever their case.
_NOT_NAMES = STOP_WORDS | NEGATORS | frozenset(MONTHS) | WEEKDAYS | frozenset(_NUMBER_WORDS)


def is_value_word(folded: str) -> bool:
    """Whether a folded word is a value (a number, number word, ordinal,
    month, weekday or year, or has a digit: "6am", "4th", "v1"): what
    :attr:`Features.values` compares, not a content word."""
    if any(c.isdigit() for c in folded) or folded in _NUMBER_WORDS or folded in MONTHS:
        return folded != "may"
    return (folded[:-1] if folded.endswith("s") else folded) in WEEKDAYS


def normalise(text: str) -> str:
    """Case-folded text with punctuation as spaces and white space collapsed."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(_PUNCT.sub(" ", text).split())


class _Stemmer(Protocol):
    """What this module calls of a py_rust_stemmers stemmer."""

    def stem_word(self, word: str) -> str: ...


@lru_cache(maxsize=1)
def _stemmer() -> _Stemmer:
    # py_rust_stemmers ships neither stubs nor a py.typed marker.
    from py_rust_stemmers import SnowballStemmer  # type: ignore[import-untyped]

    stemmer: _Stemmer = SnowballStemmer("english")
    return stemmer


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Snowball (Porter 2) English stem of a folded word (irregular verbs first)."""
    return str(_stemmer().stem_word(_IRREGULAR.get(word, word)))


def contracted_negation(raw: str) -> bool:
    """Whether a word as written ends in "n't" (either apostrophe): "doesn't", "mightn’t"."""
    return raw.casefold().replace("’", "'").endswith("n't")


def fold(word: str) -> str:
    """A word as compared: NFKC, case-folded, apostrophes and possessive 's out."""
    w = unicodedata.normalize("NFKC", word).casefold().replace("’", "'")
    if w.endswith("'s"):
        w = w[:-2]
    return w.replace("'", "")


def words(text: str) -> list[str]:
    """The words of ``text`` as written (NFKC; thousands separators dropped)."""
    return _WORD.findall(_THOUSANDS.sub("", unicodedata.normalize("NFKC", text)))


@dataclass(frozen=True)
class Features:
    """The parts of one text that the pair rules compare."""

    norm: str
    stems: frozenset[str]  # content stems (no stop words, negators, numbers or dates)
    folded: frozenset[str]  # every word, folded (names are matched against these)
    numbers: frozenset[str]  # every number the text states, as canonical strings
    months: frozenset[int]
    weekdays: frozenset[str]
    years: frozenset[str]
    idents: frozenset[str]  # identifiers such as s12, nc500, b17
    capitals: frozenset[str]  # folded words written with a capital, not first in the text
    possessives: frozenset[str]  # stems of words with a possessive 's ("sister's flat")
    first: str  # the folded first word
    first_capital: bool  # whether it is written with a capital and could be a name
    possessive_first: bool  # "Miso's vet ...": the first word owns what follows (a name)
    negative: bool  # odd number of negations (not, never, dislikes, can't stand...)
    changes: frozenset[str]  # stems of words reporting a change ("move", "sinc", "now")

    @cached_property
    def values(self) -> frozenset[str]:
        """Numbers, months, weekdays, years and identifiers as one comparable set."""
        return (
            self.numbers | {f"m{m}" for m in self.months} | {f"y{y}" for y in self.years}
            | self.weekdays | {f"i:{i}" for i in self.idents}
        )

    @property
    def dated(self) -> bool:
        """Whether the text names a month or a year."""
        return bool(self.months or self.years)

    @cached_property
    def dates(self) -> frozenset[str]:
        """The month and year values (what a dated change statement adds)."""
        return frozenset({f"m{m}" for m in self.months} | {f"y{y}" for y in self.years})


def _number_values(folded: str) -> list[str]:
    if folded in _NUMBER_WORDS:
        return [str(_NUMBER_WORDS[folded])]
    if folded.endswith("k") and folded[:-1].isdigit():
        return [str(int(folded[:-1]) * 1000)]  # "10k": ten thousand, as 10,000 reads
    return [str(int(d)) for d in _DIGITS.findall(folded)]


@lru_cache(maxsize=65536)
def features(text: str) -> Features:
    """The :class:`Features` of ``text`` (cached: texts recur across runs)."""
    raw_words = words(text)
    stems: list[str] = []
    numbers: set[str] = set()
    months: set[int] = set()
    weekdays: set[str] = set()
    years: set[str] = set()
    idents: set[str] = set()
    capitals: set[str] = set()
    changes: set[str] = set()
    possessives: set[str] = set()
    negations = len(_NEGATIVE_PHRASES.findall(text.casefold().replace("’", "'")))
    stand_negated = negations > 0 and re.search(r"\b(?:can ?not|can't|cant) stand\b", text.casefold().replace("’", "'"))
    for i, raw in enumerate(raw_words):
        folded = fold(raw)
        if not folded:
            continue
        capital = i > 0 and raw[0].isupper()
        if folded in NEGATORS or contracted_negation(raw):
            # "can't stand" and "no longer" are counted once, as phrases (above)
            no_longer = folded == "no" and i + 1 < len(raw_words) and fold(raw_words[i + 1]) == "longer"
            if not (stand_negated and folded in ("can", "cant", "cannot")) and not no_longer:
                negations += 1
            continue
        month = MONTHS.get(folded)
        # "may" is a month only when written "May" inside a sentence.
        if month is not None and (folded != "may" or capital):
            months.add(month)
            continue
        day = folded[:-1] if folded.endswith("s") else folded
        if day in WEEKDAYS:
            weekdays.add(day)
            continue
        if _YEAR.match(folded):
            years.add(folded)
            continue
        if any(c.isdigit() for c in folded):
            if _IDENTIFIER.match(folded):
                idents.add(folded)
                if capital:
                    capitals.add(folded)
            else:  # 12, 3am, 10k, 4th, 1:58: the number is the value, the unit is noise
                numbers.update(_number_values(folded))
            continue
        if folded in _NUMBER_WORDS:
            numbers.update(_number_values(folded))
            continue
        if capital and folded not in _NOT_NAMES:
            capitals.add(folded)
        if folded in STOP_WORDS or (stand_negated and folded == "stand"):
            continue
        s = stem(folded)
        if raw.casefold().replace("’", "'").endswith("'s"):
            possessives.add(s)
        if s in NEGATIVE_STEMS:
            negations += 1
        if s in CHANGE_STEMS and not capital:
            changes.add(s)
        stems.append(s)
    first_raw = raw_words[0] if raw_words else ""
    first = fold(first_raw)
    return Features(
        norm=normalise(text),
        stems=frozenset(stems),
        folded=frozenset(fold(w) for w in raw_words),
        numbers=frozenset(numbers),
        months=frozenset(months),
        weekdays=frozenset(weekdays),
        years=frozenset(years),
        idents=frozenset(idents),
        capitals=frozenset(capitals),
        possessives=frozenset(possessives),
        first=first,
        first_capital=bool(first_raw[:1].isupper()) and first not in _NOT_NAMES,
        possessive_first=first_raw.casefold().replace("’", "'").endswith("'s"),
        negative=negations % 2 == 1,
        changes=frozenset(changes),
    )


_CLOCK = re.compile(r"\b(\d{1,2})(?:[:.](\d{2}))?\s*([ap])\.?m\b\.?|\b(\d{1,2}):(\d{2})\b", re.I)
_THOUSAND = re.compile(r"\b(\d+(?:\.\d+)?)k\b", re.I)
_TENS = {w: n for w, n in _NUMBER_WORDS.items() if n in (20, 30, 40, 50, 60, 70, 80, 90)}
_UNITS = {w: n for w, n in _NUMBER_WORDS.items() if 1 <= n <= 9 and w not in ("twice",) and not w.endswith("th")}
_UNITS["one"] = 1
_COMPOUND = re.compile(rf"\b({'|'.join(_TENS)})[-\s]({'|'.join(_UNITS)})\b", re.I)
#: Ordinals the number words leave out ("first" is also "the first time"):
#: read as numbers only when comparing two readings of values.
_ORDINALS = {"first": "1", "second": "2"}


def _clock(m: re.Match[str]) -> str:
    if m.group(4) is not None:
        hour, minute = int(m.group(4)), int(m.group(5))
    else:
        hour, minute, half = int(m.group(1)), int(m.group(2) or 0), m.group(3).lower()
        hour = hour + 12 if half == "p" and hour < 12 else 0 if half == "a" and hour == 12 else hour
    return f" t{hour:02d}{minute:02d} "


def weekday_abbreviation(raw: str) -> str | None:
    """The weekday a word written with a capital abbreviates ("Fri", "Thurs",
    "Wed", "Weds": three letters or more that begin one weekday only, a final
    "s" aside), else None."""
    folded = raw.casefold().rstrip(".")
    if not raw[:1].isupper() or len(folded) < 3:
        return None
    found = [d for d in WEEKDAYS if d.startswith(folded) or d.startswith(folded.removesuffix("s"))]
    return found[0] if len(found) == 1 else None


@lru_cache(maxsize=65536)
def value_reading(text: str) -> frozenset[str]:
    """The values of ``text`` read in one canonical form, for telling whether
    two texts state the same values written differently: a clock time in 24
    hours ("7pm" = "19:00"), "k" as thousands ("12k" = "12,000"), a number
    written in words ("thirty-five" = "35"), an ordinal ("first" = "1st"), a
    weekday abbreviated ("Weds" = "Wednesday"). Everything else as
    :attr:`Features.values` reads it."""
    t = unicodedata.normalize("NFKC", text)
    t = _CLOCK.sub(_clock, t)
    t = _THOUSAND.sub(lambda m: f"{float(m.group(1)) * 1000:g}", t)
    t = _COMPOUND.sub(lambda m: str(_TENS[m.group(1).lower()] + _UNITS[m.group(2).lower()]), t)
    out = []
    for raw in re.split(r"(\W+)", t):
        folded = raw.casefold()
        day = weekday_abbreviation(raw) if raw and raw.isalpha() and folded not in MONTHS else None
        out.append(day or _ORDINALS.get(folded, raw))
    read = "".join(out)
    return features(text if read == unicodedata.normalize("NFKC", text) else read).values


def names_in(f: Features, known: Iterable[str] = ()) -> frozenset[str]:
    """The names a text mentions: words capitalised inside it, and its first
    word when that is a possessive ("Miso's") or a name the store has seen
    capitalised inside a text (``known``)."""
    out = set(f.capitals)
    if f.first_capital and (f.possessive_first or f.first in known):
        out.add(f.first)
    return frozenset(out)


def near(a: str, b: str) -> bool:
    """Whether two folded words are spellings of one name ("Hibs" and
    "Hibernian", "Scotland" and "Scottish"): one is a prefix of the other (a
    final "s" aside; three letters at least), or they share four letters."""
    if a == b:
        return True
    if not a or not b or a[0] != b[0]:
        return False
    a2, b2 = a.removesuffix("s"), b.removesuffix("s")
    if min(len(a2), len(b2)) >= 3 and (a2.startswith(b2) or b2.startswith(a2)):
        return True
    n = len(os.path.commonprefix([a, b]))  # letters the two words start with alike
    return n >= 4


def unmatched(names: Iterable[str], other_words: frozenset[str]) -> set[str]:
    """The names that no word of the other text spells."""
    return {n for n in names if n not in other_words and not any(near(n, w) for w in other_words)}
