"""Pairing a vanished note with a new one: one note renamed and edited."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memvault.store.index.moves import MOVE_SIMILARITY, overlap, pair_edited_moves, word_counts

TEXT = "sourdough starters need flour water patience and a warm kitchen overnight"


def test_an_edited_note_pairs_with_its_old_self_not_with_a_stranger() -> None:
    new = [("Baking/Bread.md", TEXT + " and rye"), ("Bikes.md", "gears chains saddles")]
    old = {"Bread.md": TEXT, "Cars.md": "engines wheels brakes"}
    assert pair_edited_moves(new, old) == [(0, "Bread.md")]


def test_the_best_pair_wins_and_each_note_is_used_once() -> None:
    new = [("a.md", TEXT), ("b.md", TEXT + " extra words here")]
    old = {"x.md": TEXT}
    assert pair_edited_moves(new, old) == [(0, "x.md")]


def test_with_many_candidates_only_same_names_are_compared(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import memvault.store.index.moves as moves

    monkeypatch.setattr(moves, "MOVE_PAIRS_MAX", 0)
    assert pair_edited_moves([("New/Other.md", TEXT)], {"Old.md": TEXT}) == []
    assert pair_edited_moves([("New/Old.md", TEXT)], {"Old.md": TEXT}) == [(0, "Old.md")]


words = st.lists(st.sampled_from("alpha beta gamma delta eps zeta eta theta iota kappa".split()), max_size=12)


@given(
    st.lists(st.tuples(st.sampled_from(["a.md", "b.md", "D/a.md", "c.md"]), words.map(" ".join)), max_size=5),
    st.dictionaries(st.sampled_from(["a.md", "x.md", "E/b.md", "y.md"]), words.map(" ".join), max_size=5),
)
def test_pairs_are_one_to_one_and_similar_enough(new: list[tuple[str, str]], old: dict[str, str]) -> None:
    pairs = pair_edited_moves(new, old)
    assert len({i for i, _ in pairs}) == len(pairs) == len({p for _, p in pairs})
    for i, p in pairs:
        same = new[i][0].rsplit("/", 1)[-1] == p.rsplit("/", 1)[-1]
        assert overlap(word_counts(new[i][1]), word_counts(old[p])) + (0.2 if same else 0) >= MOVE_SIMILARITY
