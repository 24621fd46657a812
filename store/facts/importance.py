"""Which chat facts are kept: a rule score and the two settings that read it.

A conversation's rules (:mod:`.conversation`) already keep only statements of
a few kinds: who the person is, what they prefer, what they decided, what
they plan, what they asked to be remembered. ``ingest.min_importance`` and
``ingest.max_per_turn`` keep fewer of those; the turns themselves stay in the
session note, searchable, whatever is dropped here.

The score is read from what the rules computed, with two constants of
principle and no word fitted to a sentence:

- **how long the statement stays true** (its kind): who the person is holds
  for years (1); a preference or a decision holds until it is changed (3/4);
  a plan until it is done (1/2); an event is a moment (1/4). A fact the
  person asked to be remembered scores 1 whatever it says: they asked.
  A fact of the llm extractor has no kind of the rules' and is scored by its
  memory type the same way (identity, semantic and procedural,
  prospective, episodic);
- **whether it stands alone**: a statement that names nothing but its own
  verb ("I love it.", "I love that!") says something only beside the turn
  before it, which stays in the note; it is chit-chat as a memory, and its
  score is halved. A word names something when it is not of English's
  closed classes (pronouns, determiners, auxiliaries, conjunctions, prepositions, and the
  degree adverbs that only scale a word: "so", "really"), read with the same
  classes the mood of a sentence is read with (:mod:`.mood`).

So ``min_importance = 0.5`` keeps identity, preferences, decisions and
plans that stand alone; ``0.75`` leaves plans out too; ``1`` keeps who the
person is and what they asked to be remembered. The session's digest fact
is about the session itself and always stays.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memvault.store.facts.mood import AUXILIARIES, CLAUSE_ENDS, DETERMINERS, SUBJECT_PRONOUNS, subject
from memvault.vault_io.facts import EPISODIC, IDENTITY, PROCEDURAL, PROSPECTIVE, SEMANTIC, FactDraft

#: How long a statement of each kind of the rules stays true, as a score (module docstring).
BY_TOPIC = {"remembered": 1.0, "identity": 1.0, "preference": 0.75, "decision": 0.75, "plan": 0.5}
#: The same for a fact known only by its memory type (the llm extractor's).
BY_TYPE = {IDENTITY: 1.0, SEMANTIC: 0.75, PROCEDURAL: 0.75, PROSPECTIVE: 0.5, EPISODIC: 0.25}
#: Pronouns in every other case than the subject's (the subject case is :data:`.mood.SUBJECT_PRONOUNS`).
OTHER_PRONOUNS = frozenset({
    "me", "us", "him", "her", "them", "it", "you", "mine", "ours", "yours", "his", "hers", "theirs",
    "myself", "ourselves", "yourself", "yourselves", "himself", "herself", "itself", "themselves", "one",
})
#: Prepositions: they relate the words beside them and name nothing.
PREPOSITIONS = frozenset({
    "at", "in", "on", "of", "for", "with", "by", "from", "about", "into", "onto", "over", "under", "up", "down",
    "out", "off", "through", "around", "across", "along", "against", "among", "between", "within", "without",
})
#: Degree adverbs: they scale the word beside them and name nothing.
DEGREE = frozenset({"so", "too", "very", "really", "much", "just", "quite", "also", "even", "still", "not"})
#: The closed classes: a word among them names nothing.
FUNCTION_WORDS = SUBJECT_PRONOUNS | OTHER_PRONOUNS | DETERMINERS | AUXILIARIES | CLAUSE_ENDS | PREPOSITIONS | DEGREE
_WORD_RE = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
#: The segment of a session's digest fact (:mod:`.conversation`): never dropped.
DIGEST = "digest"


def naming_words(text: str) -> list[str]:
    """The words of ``text`` outside the closed classes (:data:`FUNCTION_WORDS`)."""
    words = _WORD_RE.findall(text.lower().replace("’", "'"))
    return [w for w in words if w not in FUNCTION_WORDS and not subject(w) and not w.endswith("n't")]


def stands_alone(text: str) -> bool:
    """Whether a statement names something besides its verb: two words
    outside the closed classes ("I love this series", not "I love it")."""
    return len(naming_words(text)) >= 2


def importance(draft: FactDraft) -> float:
    """The rule score of one chat fact, from 0 to 1 (module docstring)."""
    topic = next((t for t in draft.topics if t in BY_TOPIC), None)
    if topic == "remembered":
        return BY_TOPIC[topic]
    weight = BY_TOPIC[topic] if topic is not None else BY_TYPE.get(draft.type, BY_TYPE[SEMANTIC])
    return weight if stands_alone(draft.text) else weight / 2


def select(facts: Sequence[FactDraft], min_importance: float, max_per_turn: int) -> list[FactDraft]:
    """The facts of one session note that the settings keep, in their order:
    those scoring at least ``min_importance``, and of each turn's (its block
    id) the ``max_per_turn`` that score highest, the earlier first on a tie
    (0: no cap). The digest fact always stays."""
    if min_importance <= 0 and max_per_turn <= 0:
        return list(facts)
    scored = [(d, importance(d)) for d in facts]
    kept = [(i, d, s) for i, (d, s) in enumerate(scored) if d.segment == DIGEST or s >= min_importance]
    if max_per_turn > 0:
        by_turn: dict[str | None, list[tuple[int, FactDraft, float]]] = {}
        for item in kept:
            if item[1].segment != DIGEST:
                by_turn.setdefault(item[1].block_id, []).append(item)
        over = {i for items in by_turn.values()
                for i, _, _ in sorted(items, key=lambda x: (-x[2], x[0]))[max_per_turn:]}
        kept = [item for item in kept if item[0] not in over]
    return [d for _, d, _ in kept]
