"""The WordNet lexicon (memvault.store.consolidation.lexicon) and its builder (bench/lexicon_build.py)."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memvault.store.consolidation import lexicon

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))  # a build tool, not product
import lexicon_build  # noqa: E402

PAIRS = json.loads((Path(__file__).parent / "fixtures" / "lexicon" / "word_pairs.json").read_text(encoding="utf-8"))
HEADER = "  1 This is a licence header line, as WordNet's files begin.\n"


@pytest.fixture
def bundled():
    """The bundled table, whatever a test before swapped in."""
    lexicon.use(None)
    yield
    lexicon.use(None)


def test_the_bundled_table_finds_synonyms_and_joins_no_distinct_words(bundled) -> None:
    """The hand-written pairs (kept apart from the consolidation sets): 50 of
    60 synonym pairs found and none of 60 related-but-different pairs joined
    (bench/bench_lexicon.py sweeps how many senses to keep on them)."""
    found = [p for p in PAIRS["synonyms"] if lexicon.synonyms(*p)]
    joined = [p for p in PAIRS["distinct"] if lexicon.synonyms(*p)]
    assert joined == []
    assert len(found) >= 50, sorted(set(map(tuple, PAIRS["synonyms"])) - set(map(tuple, found)))


def test_alternatives_of_one_kind(bundled) -> None:
    """Co-hyponyms: 25 of the 60 distinct pairs, and 2 of the 60 synonym pairs
    (rubbish / garbage, talked / chatted: WordNet keeps them apart)."""
    kinds = [p for p in PAIRS["distinct"] if lexicon.cohyponyms(*p)]
    wrong = [p for p in PAIRS["synonyms"] if lexicon.cohyponyms(*p)]
    assert len(kinds) >= 25 and len(wrong) <= 2, (kinds, wrong)
    assert lexicon.cohyponyms("green", "orange") and lexicon.cohyponyms("tea", "coffee")
    assert not lexicon.cohyponyms("sparkling", "fizzy") and not lexicon.cohyponyms("tea", "tea")


def test_inflections_and_the_antonym_guard(bundled) -> None:
    assert lexicon.bases("cycles") == ("cycle",)
    assert "ride" in lexicon.bases("rode")  # an irregular form from verb.exc
    assert lexicon.synonyms("sparkling", "fizzy")  # through the satellite's head, "effervescent"
    # "mother" and "father" share a verb sense (beget); WordNet calls them opposites
    assert lexicon.antonyms("mother", "father") and not lexicon.synonyms("mother", "father")
    assert lexicon.antonyms("well", "badly")
    assert not lexicon.synonyms("qwzx", "sparkling") and lexicon.bases("qwzx") == ()


def test_the_bundled_file_is_sorted_plain_text() -> None:
    """The lookup halves the sorted lines: an unsorted table would miss words."""
    lines = gzip.decompress(lexicon.TABLE.read_bytes()).decode("ascii").splitlines()
    assert lines == sorted(lines) and len(lines) > 100_000
    assert all(line.count("\t") == 2 and line[0] in "SHMAXPN" for line in lines)
    assert (lexicon.TABLE.parent / "LICENSE-WordNet").read_text().startswith("WordNet Release 3.0")


@pytest.mark.parametrize("content", [None, b"not gzip at all", gzip.compress(b"S\tword", mtime=0)[:-6]])
def test_a_missing_or_broken_table_degrades_to_no_word_knowledge(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, content: bytes | None) -> None:
    table = tmp_path / "wordnet.tsv.gz"
    if content is not None:
        table.write_bytes(content)
    monkeypatch.setattr(lexicon, "TABLE", table)
    lexicon.use(None)
    try:
        assert not lexicon.synonyms("sparkling", "fizzy") and not lexicon.cohyponyms("green", "orange")
        assert "cannot read the WordNet table" in caplog.text
    finally:
        monkeypatch.undo()
        lexicon.use(None)
    assert lexicon.synonyms("sparkling", "fizzy")


WORDS = sorted({w for kind in ("synonyms", "distinct") for p in PAIRS[kind] for w in p})
ENDINGS = st.sampled_from(["", "s", "es", "ed", "ing", "er", "est", "'s", "ly"])


@given(st.sampled_from(WORDS), ENDINGS, st.text(min_size=0, max_size=12))
def test_any_word_is_looked_up_without_error_and_bases_are_wordnet_words(word: str, ending: str, junk: str) -> None:
    """Inflected, odd or arbitrary words: the lookup never fails, and every
    base it offers is a word of the table (with senses); a word of the table
    is its own base."""
    for w in (word, word + ending, junk, junk.casefold()):
        found = lexicon.bases(w)
        assert all(lexicon.get_senses(b) for b in found)
        assert lexicon.synonyms(w, word) in (True, False) and lexicon.antonyms(w, word) in (True, False)
    assert word in lexicon.bases(word) or not lexicon.get_senses(word)


# -- the builder, on a small WordNet of its own ---------------------------------------

FILES = {
    "index.adj": ["effervescent a 2 1 & 2 0 00000003 00000001", "fizzy a 1 1 & 1 0 00000002",
                  "sparkling a 1 1 ! 1 0 00000003", "still a 1 1 ! 1 0 00000004"],
    "data.adj": ["00000001 00 a 01 effervescent 0 000 | giving off bubbles",
                 "00000002 00 s 01 fizzy 0 001 & 00000001 a 0000 | hissing and bubbling",
                 "00000003 00 a 02 sparkling 0 effervescent 0 001 ! 00000004 a 0101 | of wines and waters",
                 "00000004 00 a 01 still(a) 0 001 ! 00000003 a 0101 | not sparkling"],
    "index.noun": ["cleaner n 2 0 2 0 00000014 00000013", "father n 1 1 ! 1 1 00000011",
                   "hoover n 2 0 2 0 00000012 00000013", "mother n 1 1 ! 1 1 00000010",
                   "parent n 1 0 1 0 00000015"],
    "data.noun": ["00000010 18 n 01 mother 0 002 ! 00000011 n 0101 @ 00000015 n 0000 | a female parent",
                  "00000011 18 n 01 father 0 002 ! 00000010 n 0101 @ 00000015 n 0000 | a male parent",
                  "00000015 18 n 01 parent 0 000 | a mother or a father",
                  "00000012 06 n 02 hoover 0 vacuum_cleaner 0 000 | an electric cleaner",
                  "00000013 06 n 02 hoover 0 cleaner 0 000 | a rarer sense both words have",
                  "00000014 18 n 01 cleaner 0 000 | a person who cleans"],
    "index.verb": ["father v 1 0 1 0 00000020", "mother v 1 0 1 0 00000020", "ride v 1 0 1 0 00000021"],
    "data.verb": ["00000020 29 v 02 father 0 mother 0 000 01 + 02 00 | make children",
                  "00000021 38 v 01 ride 0 000 01 + 02 00 | be carried"],
    "index.adv": [], "data.adv": [],
    "verb.exc": ["rode ride", "rid ride"], "noun.exc": [], "adj.exc": [], "adv.exc": [],
}


@pytest.fixture
def small_wordnet(tmp_path: Path):
    for name, lines in FILES.items():
        text = "".join(line + "  \n" for line in lines)
        (tmp_path / name).write_text(HEADER + text if name.startswith(("index", "data")) else text, encoding="utf-8")
    yield tmp_path
    lexicon.use(None)


def test_the_builder_keeps_plain_words_senses_heads_and_opposites(small_wordnet: Path) -> None:
    lines = lexicon_build.read(small_wordnet)
    assert lines == sorted(lines) and lines == lexicon_build.read(small_wordnet)  # deterministic
    assert "S\teffervescent\ta00000003 a00000001" in lines  # both senses (the default keeps 2), in order
    assert "H\tfizzy\ta00000001" in lines  # a satellite's head
    assert "M\tn00000012\thoover" in lines  # the multi-word lemma is dropped
    assert "M\ta00000004\tstill" in lines  # the adjective marker "(a)" is dropped
    assert "A\tsparkling\tstill" in lines and "A\tmother\tfather" in lines
    assert "X\trode\tride" in lines
    assert "P\tn00000010\tn00000015" in lines and "P\tn00000011\tn00000015" in lines  # hypernyms
    lexicon.use(lexicon_build.table_bytes(lines))
    assert lexicon.synonyms("fizzy", "sparkling")  # fizzy's head shares "effervescent" with sparkling
    assert not lexicon.synonyms("mother", "father")  # a shared verb sense, but opposites
    assert lexicon.antonyms("sparkling", "still") and lexicon.bases("rode") == ("ride",)
    assert lexicon.cohyponyms("mother", "father")  # both under "parent"
    assert not lexicon.cohyponyms("fizzy", "sparkling")  # synonyms are not alternatives


def test_keeping_one_sense_drops_the_rarer_ones(small_wordnet: Path) -> None:
    """"hoover" and "cleaner" share only their second senses."""
    lexicon.use(lexicon_build.table_bytes(lexicon_build.read(small_wordnet, senses_kept=2)))
    assert lexicon.synonyms("hoover", "cleaner")
    lines = lexicon_build.read(small_wordnet, senses_kept=1)
    assert "S\teffervescent\ta00000003" in lines and "S\thoover\tn00000012" in lines
    lexicon.use(lexicon_build.table_bytes(lines))
    assert not lexicon.synonyms("hoover", "cleaner")


def test_person_nouns_are_found_through_every_hypernym() -> None:
    """"brother" is a "male sibling", a synset of multi-word lemmas only, then
    a "sibling", a "relative", a "person": the table's N lines follow that
    chain at build time. An irregular verb form is the verb ("fed": feed)."""
    assert all(lexicon.person(w) for w in ("brother", "sister", "husband", "grandmother", "boss"))
    assert not any(lexicon.person(w) for w in ("fed", "python", "cat", "team", "she", "began"))  # "Begin": a name

