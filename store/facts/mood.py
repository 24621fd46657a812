"""The mood of a sentence a person wrote in a chat: a statement, a question, or a request.

A fact is something the person stated. "Write a short summary of what we
decided." holds a decision's words but asks the assistant to do something,
and "did we decide on Postgres" asks; neither states anything. The mood is
read from the sentence's grammar, the way English marks it:

- **interrogative**: a question mark; subject-auxiliary inversion, a clause
  that opens on an auxiliary or modal followed by its subject ("can you",
  "did we", "is the"; not "Did 8k this morning", whose subject is left out,
  nor "have"/"do" taking an object: "have a look", "do the dishes");
  a wh-word followed by an auxiliary ("what did we", "how should I");
- **imperative**: a clause that opens on a verb in its base form (a verb
  lemma of WordNet as written: "write", "tell", "plan"; not "plans",
  "wrote"; and not an adverb too, as "still", "back", "last" are, which a
  clause opens on as adverbs) and whose main clause (up to its first subordinating or
  coordinating word: "tell him *to* ...", "call me *if* ...") has no subject
  and no finite verb: no subject pronoun, no auxiliary, no inflected verb
  after anything but a determiner ("Rain in Lisbon still *beats* ...",
  "Pickle *says* hi" state; "walk the dogs" asks). Also "do not"/"don't"
  and a base verb, and anything after "please". "Let me ..." is one,
  addressed to the listener;
- **hortative**: "let's", "let us": the speaker joins in, the form a
  decision takes ("let's go with Postgres");
- **declarative**: everything else, fragments of one word included.

Only closed classes of English grammar are named here (auxiliaries and
modals, wh-words, pronouns, determiners, conjunctions); the open class of
verbs and their inflections are WordNet's
(:mod:`memvault.store.consolidation.lexicon`). A short phrase set off by a
comma at the start (up to four words, with no subject or auxiliary of its
own: "Perfect, ...", "Sam, ...", "Last week, ...": an interjection, a
vocative, an adverbial) is not part of the clause whose mood is read.
Where the grammar is ambiguous without a parser (a noun that is also a
verb opening a fragment, "End of May."), the rules err towards a request;
that matters only where a sentence would otherwise be kept as a fact.
"""

from __future__ import annotations

import re

DECLARATIVE = "declarative"
INTERROGATIVE = "interrogative"
IMPERATIVE = "imperative"
HORTATIVE = "hortative"

#: The auxiliaries and modals of English (their negated contractions are read through :func:`auxiliary`).
AUXILIARIES = frozenset({
    "am", "is", "are", "was", "were", "be", "do", "does", "did", "have", "has", "had",
    "can", "could", "will", "would", "shall", "should", "may", "might", "must",
})
#: Negated contractions whose stem is not the auxiliary as written.
_NEGATED = {"won't": "will", "can't": "can", "shan't": "shall", "ain't": "is"}
#: Wh-words, which open a question when an auxiliary follows.
WH_WORDS = frozenset({"what", "which", "who", "whom", "whose", "where", "when", "why", "how"})
#: Pronouns in the subject case (a clause with one has a subject; an imperative has none).
SUBJECT_PRONOUNS = frozenset({"i", "we", "he", "she", "they"})
#: Determiners: an inflected word after one is a noun ("the dogs"), and a subject may start with one.
DETERMINERS = frozenset({
    "the", "a", "an", "my", "your", "his", "her", "its", "our", "their", "this", "that", "these", "those",
    "some", "any", "no", "every", "each", "all", "both",
})
#: Auxiliaries that are main verbs too: before a determiner they take an object ("have a look", "do the
#: dishes", "had a long week"), not a subject.
_MAIN_VERBS = frozenset({"have", "has", "had", "do", "does", "did"})
#: What may follow an auxiliary as its subject when the clause is inverted.
_SUBJECTS = SUBJECT_PRONOUNS | DETERMINERS | {"you", "it", "there"}
#: Conjunctions and the infinitive marker: the main clause ends before one.
CLAUSE_ENDS = frozenset({
    "if", "once", "when", "while", "because", "since", "after", "before", "until", "unless", "though", "although",
    "that", "whether", "and", "or", "but", "so", "than", "as", "to", "where", "what", "who", "which", "how", "why",
})
_WORD_RE = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
#: A short phrase set off by a comma at the start (see the module docstring).
_SET_OFF_RE = re.compile(r"^\s*((?:[\w']+\s+){0,3}[\w']+)\s*,\s*")


def auxiliary(word: str) -> bool:
    """Whether ``word`` is an auxiliary or modal, contractions included ("didn't", "won't", "it's")."""
    if word in _NEGATED:
        return True
    return word in AUXILIARIES or (word.endswith("n't") and word[:-3] in AUXILIARIES)


def base_verb(word: str) -> bool:
    """Whether ``word`` as written is a verb's base form: a verb lemma of WordNet."""
    from memvault.store.consolidation.lexicon import get_senses

    return bool(word) and not auxiliary(word) and any(sense.startswith("v") for sense in get_senses(word))


def adverb(word: str) -> bool:
    """Whether WordNet knows ``word`` as an adverb too: at the head of a clause
    it is read as one ("Still ...", "Back on ...", "Last week ...")."""
    from memvault.store.consolidation.lexicon import get_senses

    return any(sense.startswith("r") for sense in get_senses(word))


def inflected_verb(word: str) -> bool:
    """Whether ``word`` is an inflected form of a verb and not a verb lemma
    itself ("says", "beats", "spoke", "went"; not "photos", "write")."""
    from memvault.store.consolidation.lexicon import bases, get_senses

    if base_verb(word):
        return False
    return any(b != word and any(s.startswith("v") for s in get_senses(b)) for b in bases(word))


def _words(text: str) -> list[str]:
    return _WORD_RE.findall(text.lower().replace("’", "'"))


def subject(word: str) -> bool:
    """Whether ``word`` is a subject pronoun, alone or contracted with its verb ("we", "I'm", "it's", "they'll")."""
    head, _, tail = word.partition("'")
    return head in SUBJECT_PRONOUNS or (bool(tail) and head in _SUBJECTS)


def _has_subject_or_auxiliary(words: list[str]) -> bool:
    return any(subject(w) or auxiliary(w) for w in words)


def _clause(text: str) -> list[str]:
    """The words of the sentence's clause, a short phrase set off before it left out."""
    m = _SET_OFF_RE.match(text)
    if m and not _has_subject_or_auxiliary(_words(m.group(1))):
        text = text[m.end():]
    return _words(text)


def _finite_in_main_clause(words: list[str]) -> bool:
    """Whether the main clause after its first word has a subject or a finite
    verb (so that first word is not an imperative verb but a subject)."""
    previous = words[0]
    for word in words[1:]:
        if word in CLAUSE_ENDS:
            return False
        if subject(word) or auxiliary(word) or (previous not in DETERMINERS and inflected_verb(word)):
            return True
        previous = word
    return False


def mood(sentence: str) -> str:
    """The mood of one sentence (module docstring): :data:`DECLARATIVE`,
    :data:`INTERROGATIVE`, :data:`IMPERATIVE` or :data:`HORTATIVE`."""
    text = sentence.strip()
    if text.endswith("?"):
        return INTERROGATIVE
    words = _clause(text)
    if words[:1] == ["please"]:
        return IMPERATIVE
    if len(words) < 2:
        return DECLARATIVE  # "Perfect.", "Go!": nothing to tell a request from a fragment by
    first, second = words[0], words[1]
    if first in ("let's", "lets") or (first == "let" and second == "us"):
        return HORTATIVE
    if first in ("don't", "do"):
        verb = words[2] if second == "not" and len(words) > 2 else second
        if base_verb(verb):
            return IMPERATIVE  # "don't use tabs", "do not push"
    if auxiliary(first) and not (first in _MAIN_VERBS and second in DETERMINERS):
        return INTERROGATIVE if second in _SUBJECTS else DECLARATIVE  # "can you" / "did 8k this morning"
    if first in WH_WORDS and auxiliary(second):
        return INTERROGATIVE  # "what did we", "how should I"
    if (base_verb(first) or first in ("have", "do")) and not adverb(first) and not _finite_in_main_clause(words):
        return IMPERATIVE
    return DECLARATIVE
