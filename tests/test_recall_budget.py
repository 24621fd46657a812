"""The recall block's budget, property-tested: never over, never empty when
something relevant fits."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memvault.store.embedding.model import count_tokens
from memvault.store.retrieval.recall import HEADER, ITEM_MAX_TOKENS, RecallItem, assemble, min_item_tokens, whole_line

# Words of every shape the tokenizer meets: plain, long, digits, accents,
# CJK (one token per character), punctuation glued on.
WORD = st.one_of(
    st.sampled_from(["deploy", "the", "billing", "service", "Postgres", "v14", "ERR_CONNECTION_RESET", "naïve",
                     "café", "東京", "—", "it's", "(see", "notes)", "x" * 40, "supercalifragilistic"]),
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zs", "Zl", "Zp")), min_size=1, max_size=12),
)
TYPES = ["semantic", "episodic", "procedural", "prospective", "fact", "note"]


@st.composite
def item(draw: st.DrawFn, prefix: str, n: int, type_: str | None = None) -> RecallItem:
    words = draw(st.lists(WORD, max_size=80))
    kind = draw(st.sampled_from(["memory", "fact", "note"]))
    return RecallItem(
        id=f"{prefix}{n}", kind=kind, type=type_ or draw(st.sampled_from(TYPES)),
        title=draw(st.sampled_from(["Runbook > Deploys", "", "A rather long note title > With > Headings"])),
        path=draw(st.sampled_from([None, "Memory/semantic/m.md", "Notes/deep/folder/structure/with a long name.md"])),
        content=" ".join(words),
    )


@st.composite
def memories(draw: st.DrawFn) -> tuple[list[RecallItem], list[RecallItem]]:
    identity = [draw(item("id", n, "identity")) for n in range(draw(st.integers(0, 5)))]
    relevant = [draw(item("r", n)) for n in range(draw(st.integers(0, 8)))]
    # Identity memories can be relevant themselves, anywhere in the ranking.
    for ident in identity:
        if draw(st.booleans()):
            relevant.insert(draw(st.integers(0, len(relevant))), ident)
    return identity, relevant


def tokens(text: str) -> int:
    return count_tokens([text])[0] if text else 0


@given(memories(), st.integers(10, 2000))
def test_block_never_exceeds_the_budget_and_is_not_empty_when_something_fits(
    mems: tuple[list[RecallItem], list[RecallItem]], budget: int
) -> None:
    identity, relevant = mems
    text, items = assemble(identity, relevant, budget)
    assert tokens(text) <= budget
    if not text:
        assert items == []
        fits = [r for r in relevant if tokens(HEADER) + min_item_tokens(r) <= budget]
        assert not fits, "something relevant would have fitted"
        return
    lines = text.split("\n")
    assert lines[0] == HEADER and lines[1:] == [i.text for i in items]
    ids = [i.id for i in items]
    assert len(ids) == len(set(ids))
    relevant_ids = {r.id for r in relevant}
    assert relevant_ids & set(ids), "a block needs at least one relevant item"
    assert set(ids) <= relevant_ids | {i.id for i in identity}
    # Identity lines come first, in their own order.
    identity_ids = [i.id for i in identity]
    shown_identity = [i for i in ids if i in identity_ids]
    assert ids[: len(shown_identity)] == sorted(shown_identity, key=identity_ids.index)
    for it in items:
        assert it.tokens == tokens(it.text) <= ITEM_MAX_TOKENS
        whole = " ".join(it.content.split())
        # whole, or cut at a word boundary and marked
        assert f"] {whole} (" in it.text or f"] {whole}(" in it.text or "… (" in it.text
        if "… (" in it.text and f"] {whole} (" not in it.text:
            kept = it.text.split("] ", 1)[1].rsplit("… (", 1)[0]
            assert whole.startswith(kept) and whole[len(kept)] == " "


@given(memories())
def test_no_relevant_item_means_no_block(mems: tuple[list[RecallItem], list[RecallItem]]) -> None:
    identity, _ = mems
    assert assemble(identity, [], 800) == ("", [])


@st.composite
def conversation_turns(draw: st.DrawFn) -> list[RecallItem]:
    """Recalled turns of two sessions in a ranked order: some consecutive,
    some not, short and long (a long one is cut and joins no exchange)."""
    out: list[RecallItem] = []
    for session in ("s1", "s2"):
        for pos in draw(st.sets(st.integers(0, 7), max_size=6)):
            words = draw(st.lists(WORD, min_size=1, max_size=draw(st.sampled_from([12, 150]))))
            out.append(RecallItem(
                id=f"{session}#^t{pos + 1}", kind="turn", type="episodic", title="Ana", path=f"{session}.md",
                content=" ".join([f"{session}-{pos}", *words]), when="2023-05-08", speaker=draw(st.sampled_from(["Ana", "Ben"])),
                anchor=f"^t{pos + 1}", session=session, position=pos,
            ))
    return draw(st.permutations(out))


@given(conversation_turns(), st.integers(10, 1200))
def test_consecutive_turns_share_a_line_in_the_order_they_were_said_within_the_budget(
    turns: list[RecallItem], budget: int
) -> None:
    text, items = assemble([], turns, budget)
    assert tokens(text) <= budget
    if not text:
        return
    lines = text.split("\n")[1:]
    assert sum(i.tokens for i in items) == sum(tokens(line) for line in lines)
    ids = [i.id for i in items]
    assert len(ids) == len(set(ids))
    by_line: dict[str, list[RecallItem]] = {}
    for it in items:
        assert it.text in lines
        by_line.setdefault(it.text, []).append(it)
    assert list(by_line) == lines  # each line once, its items together
    for line, members in by_line.items():
        if len(members) == 1:
            continue
        # An exchange: one session's consecutive turns, whole, in order, dated once.
        assert len({m.session for m in members}) == 1
        assert [m.position for m in members] == list(range(members[0].position or 0, (members[0].position or 0) + len(members)))
        said = " · ".join(f"{m.speaker}: {m.content}" for m in members)
        assert line == f"- 2023-05-08 {said} (turns {members[0].position + 1}-{members[-1].position + 1})"  # type: ignore[operator]
    # Two lines never hold neighbouring whole turns of one session: a turn
    # whose own whole line fits also fits joined (the join saves its date and
    # source), so it would have joined.
    whole = [ms for line, ms in by_line.items() if len(ms) > 1 or line == whole_line(ms[0])]
    for a in whole:
        for b in whole:
            assert not (a[0].session == b[0].session and (a[-1].position or 0) + 1 == b[0].position)


def test_an_exchange_names_its_turns_by_number_and_a_turn_note_by_name() -> None:
    from memvault.store.retrieval.exchange import Exchange

    def turn(n: int, pos: int, anchor: bool = True) -> RecallItem:
        item = RecallItem(f"s#^t{n}", "turn", "episodic", "Ana", f"D1-{n}.md", f"said {n}", when="2023-05-08",
                          speaker="Ana", anchor=f"^t{n}" if anchor else "", session="s", position=pos)
        item.text = f"- 2023-05-08 Ana: said {n} (turn {n})"
        return item

    assert Exchange("s", [turn(2, 0), turn(3, 1)]).line() == "- 2023-05-08 Ana: said 2 · Ana: said 3 (turns 2-3)"
    # A superseded turn 4 left a gap: the numbers are named, not a range that would include it.
    assert Exchange("s", [turn(3, 0), turn(5, 1)]).source() == "turns 3, 5"
    # Turn notes have no block id: each note by its name.
    assert Exchange("s", [turn(1, 0, False), turn(2, 1, False)]).source() == "D1-1, D1-2"
    # Alone, a turn keeps its own line.
    assert Exchange("s", [turn(7, 0)]).line() == "- 2023-05-08 Ana: said 7 (turn 7)"
