#!/usr/bin/env python3
"""Generate a deterministic, realistic synthetic Obsidian vault for benchmarks.

    python bench/gen_vault.py OUT_DIR --notes 20000 --seed 1

Same ``--seed``, ``--notes`` and word source => byte-identical notes.

What the vault looks like (proportions are per note, drawn from the seed):

* nested folders (a few dozen, 2-4 levels deep, PARA-style top level plus
  ``Daily/YYYY/MM``, ``Categories`` and ``Attachments``);
* body sizes lognormal with median ~1.5 KB (sigma 1.0), clamped to 80 B..50 KB,
  so ~0.5% of notes are 20-50 KB;
* YAML front-matter on ~70% (tags lists and flow lists, aliases, dates,
  ``categories: ["[[X]]"]`` property links, status, ratings); ~0.5% of all
  notes carry invalid YAML (``created: {{date}}`` and friends);
* 5-15 wikilinks per note in every form: ``[[Note]]``, ``[[Folder/Note]]``,
  ``[[Note|alias]]``, ``[[Note#Heading]]``, ``[[Note#^block]]``,
  ``![[image.png]]``, ``![[Note]]``, plus a few Markdown links; ~5% point at
  notes that do not exist;
* ~2% of notes share their file name with a note in another folder;
* inline ``#tags`` (some nested ``#area/topic``), headings, bullet lists,
  tasks, fenced code, callouts, quotes, tables, ``^block`` ids;
* ~10% of files use CRLF line endings; a few small ``.png`` attachments.

Words come from the Markdown of ``../shared/corpora/vaultofknowledge``
(relative to the repo), weighted by their frequency there, so keyword search
sees a Zipf-like distribution of real words; a built-in list is the fallback.

A hidden ``.bench-manifest.json`` (ignored by Obsidian and memvault, like any
dot-file) records the parameters plus word, tag and folder lists that
``bench_search.py`` uses to build its query set.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import shutil
import struct
import sys
import time
import zlib
from array import array
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_WORDS_FROM = REPO.parent / "shared" / "corpora" / "vaultofknowledge"

FALLBACK_WORDS = """
the of and to in is that for it as with was on be by this are or from at an not
which have but they his her one all their has there been were more if when can
will would about into only other some what time also than its so these may then
them first any new like could our very after most made should world over such
system between because through each where much those life both under never same
well while last might great before must being work long here another world state
people knowledge memory index search vault note link graph idea theory practice
language history science philosophy religion culture music mathematics physics
chemistry biology economics politics software hardware network database query
project meeting review design draft summary question answer reference source
garden kitchen travel health sleep exercise reading writing learning teaching
river mountain forest ocean desert island village city country empire kingdom
analysis synthesis argument evidence method result model pattern structure
process function variable constant element feature property relation concept
""".split()

# A few word lists of their own, for names that read like real vault folders.
TOP_FOLDERS = ["Projects", "Areas", "Resources", "Archive", "People", "Meetings", "Reading", "Journal"]
PNG_NAMES = ["diagram", "screenshot", "photo", "chart", "sketch", "scan", "figure", "map"]
CALLOUTS = ["note", "tip", "warning", "info", "quote", "todo", "example", "important", "question"]
CODE_LANGS = ["python", "bash", "sql", "js", "", "yaml", "rust"]
STATUSES = ["draft", "active", "done", "evergreen", "seedling", "archived"]
INVALID_YAML = [
    "created: {{date}}",
    "title: Meeting: notes: {{title}}",
    'summary: "unterminated quote',
    "tags: [one, two\nstatus: broken",
    "  bad-indent: value\n key: other",
]

_WORD_RE = re.compile(r"[^\W\d_]{3,16}")


class FastRandom(random.Random):
    """random.Random with cheaper randint/choice/randrange (one float each).

    The stdlib versions go through getrandbits rejection sampling, which is
    most of the generator's time; the float versions' bias is < 2**-40.
    """

    def randint(self, a: int, b: int) -> int:  # type: ignore[override]
        return a + int(self.random() * (b - a + 1))

    def randrange(self, start: int, stop: int | None = None, step: int = 1) -> int:  # type: ignore[override]
        if stop is None:
            start, stop = 0, start
        return start + int(self.random() * (stop - start))

    def choice(self, seq):  # type: ignore[override]
        return seq[int(self.random() * len(seq))]


# -- vocabulary ---------------------------------------------------------------


def load_vocabulary(source: Path | None) -> tuple[list[str], list[int], str]:
    """(words, counts) sorted by descending frequency, and where they came from."""
    counts: Counter[str] = Counter()
    if source is not None and source.is_dir():
        for p in sorted(source.rglob("*.md")):
            if any(part.startswith(".") for part in p.relative_to(source).parts):
                continue
            try:
                text = p.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            # Drop URLs so "https" and hosts do not become everyday words.
            text = re.sub(r"https?://\S+", " ", text)
            counts.update(w.lower() for w in _WORD_RE.findall(text))
    # Keep words seen at least twice (typos and one-off fragments go).
    words = sorted((w for w, c in counts.items() if c >= 2), key=lambda w: (-counts[w], w))
    if len(words) >= 2000:
        return words, [counts[w] for w in words], str(source)
    # Fallback: the built-in list with a Zipf weighting.
    words = list(dict.fromkeys(FALLBACK_WORDS))
    return words, [max(1, int(10000 / (i + 1))) for i in range(len(words))], "built-in"


class Words:
    """Frequency-weighted word sampling.

    Drawing millions of words one bisect at a time is the slow part of a
    generator, so a pool of ``pool_size`` frequency-weighted draws is made
    once and text takes slices of it at random offsets (each slice is still
    a sequence of independent draws).
    """

    def __init__(self, words: list[str], counts: list[int], rng: random.Random, pool_size: int) -> None:
        self.words = words
        self.rng = rng
        acc, cum = 0, []
        for c in counts:
            acc += c
            cum.append(acc)
        self.cum = cum
        # Unigram table (each word repeated by its count, scaled to <= 4M
        # entries), indexed by 32-bit random numbers drawn in one go: ~10x
        # faster than random.choices' bisect per word.
        scale = min(1.0, 4_000_000 / acc)
        table: list[str] = []
        for w, c in zip(words, counts):
            table += [w] * max(1, round(c * scale))
        n = len(table)
        self.pool = [table[i % n] for i in array("I", rng.randbytes(4 * pool_size))]
        self.avg = sum(len(w) + 1 for w in self.pool[:100_000]) / min(pool_size, 100_000)
        # Title/tag words skip the ~100 most common (the, of, and, ...).
        self.content = words[100:3000] if len(words) > 3100 else words

    def sample(self, k: int) -> list[str]:
        off = self.rng.randrange(len(self.pool) - k)
        return self.pool[off : off + k]

    def content_word(self) -> str:
        return self.rng.choice(self.content)


# -- planning -----------------------------------------------------------------


class NotePlan:
    __slots__ = ("folder", "title", "headings", "blocks", "daily")

    def __init__(self, folder: str, title: str, daily: bool = False) -> None:
        self.folder = folder
        self.title = title
        self.headings: list[str] = []
        self.blocks: list[str] = []
        self.daily = daily

    @property
    def path(self) -> str:
        return f"{self.folder}/{self.title}.md" if self.folder else f"{self.title}.md"

    @property
    def link_path(self) -> str:
        """The path form Obsidian writes in ``[[Folder/Note]]``."""
        return self.path[:-3]


def make_folders(rng: random.Random, words: Words) -> list[str]:
    """A few dozen folders, 2-4 levels deep (depth counted from the vault root)."""
    folders: list[str] = []
    for top in TOP_FOLDERS:
        folders.append(top)
        for _ in range(rng.randint(2, 4)):
            sub = f"{top}/{words.content_word().title()}"
            if sub in folders:
                continue
            folders.append(sub)
            if rng.random() < 0.45:
                for _ in range(rng.randint(1, 2)):
                    deep = f"{sub}/{words.content_word().title()}"
                    if deep not in folders:
                        folders.append(deep)
                        if rng.random() < 0.25:
                            deeper = f"{deep}/{words.content_word().title()}"
                            if deeper not in folders:
                                folders.append(deeper)
    return folders


def title_from(words: Words, rng: random.Random) -> str:
    n = rng.choice((1, 2, 2, 3, 3, 3, 4, 5))
    parts = [words.content_word() for _ in range(n)]
    t = " ".join(parts)
    r = rng.random()
    if r < 0.6:
        t = t.title()
    elif r < 0.9:
        t = t[0].upper() + t[1:]
    # A few names with characters people do use in titles.
    r = rng.random()
    if r < 0.03:
        t += f" ({rng.randint(2015, 2025)})"
    elif r < 0.05:
        t = t.replace(" ", " - ", 1)
    elif r < 0.06:
        t += " & " + words.content_word()
    elif r < 0.07:
        t = t + "'s notes"
    return t


def plan_notes(n: int, rng: random.Random, words: Words, folders: list[str]) -> tuple[list[NotePlan], list[str]]:
    """Folders and unique-per-folder titles; ~2% of names repeat in another folder."""
    plans: list[NotePlan] = []
    used: set[str] = set()  # lower-case vault paths
    used_titles: set[str] = set()  # lower-case titles: a name repeats only on purpose
    names: list[str] = []
    categories = sorted({words.content_word().title() for _ in range(24)})[:20]
    for c in categories:
        plans.append(NotePlan("Categories", c))
        used.add(f"categories/{c.lower()}.md")
    n_daily = n // 10
    day0 = 18262  # 2020-01-01 as days since the epoch
    for i in range(n_daily):
        d = time.gmtime((day0 + i) * 86400)
        folder = f"Daily/{d.tm_year}"
        plans.append(NotePlan(folder, f"{d.tm_year}-{d.tm_mon:02d}-{d.tm_mday:02d}", daily=True))
    # The root holds a handful of notes, like most vaults.
    weights = [1.0 if f.count("/") else 0.6 for f in folders]
    while len(plans) < n:
        if names and rng.random() < 0.01:
            title = rng.choice(names)  # same name, different folder (both count as duplicates)
        else:
            title = title_from(words, rng)
            if title.lower() in used_titles:
                continue
        used_titles.add(title.lower())
        folder = "" if rng.random() < 0.02 else rng.choices(folders, weights=weights)[0]
        key = (f"{folder}/{title}.md" if folder else f"{title}.md").lower()
        if key in used:
            continue
        used.add(key)
        names.append(title)
        plans.append(NotePlan(folder, title))
    plans = plans[:n]
    for p in plans:
        p.headings = [
            " ".join(words.content_word() for _ in range(rng.randint(1, 4))).capitalize()
            for _ in range(rng.randint(1, 6))
        ]
        p.blocks = [f"{rng.getrandbits(24):06x}" for _ in range(rng.randint(0, 3))]
    return plans, categories


# -- note bodies --------------------------------------------------------------


def paragraph_tokens(words: Words, rng: random.Random, budget: int) -> list[str]:
    """Words of a paragraph of roughly ``budget`` characters, cut into sentences."""
    n = max(5, int(budget / words.avg))
    toks = words.sample(n)
    i = 0
    while i < n:
        toks[i] = toks[i].capitalize()
        i += rng.randint(5, 22)
        toks[min(i, n) - 1] += rng.choice(".....?!")
    return toks




class Gen:
    def __init__(self, rng: random.Random, words: Words, plans: list[NotePlan], categories: list[str],
                 attachments: list[str], tags: list[str]) -> None:
        self.rng = rng
        self.words = words
        self.plans = plans
        self.categories = categories
        self.attachments = attachments
        self.tags = tags
        # Which titles are used by more than one note (a bare [[Title]] to them is ambiguous).
        seen: Counter[str] = Counter(p.title.lower() for p in plans)
        self.dup_titles = {t for t, c in seen.items() if c > 1}
        self.link_forms = Counter()

    def tag(self) -> str:
        # Zipf-ish: low indexes much more likely.
        i = min(int(self.rng.paretovariate(1.1)) - 1, len(self.tags) - 1)
        return self.tags[i]

    def link(self, src: NotePlan) -> str:
        rng = self.rng
        if rng.random() < 0.05:  # unresolved: a plausible name that no note has
            self.link_forms["unresolved"] += 1
            name = title_from(self.words, rng) + " " + self.words.content_word()
            return f"[[{name}]]" if rng.random() < 0.8 else f"[[{name}|{self.words.content_word()}]]"
        t = rng.choice(self.plans)
        if t is src:
            t = rng.choice(self.plans)
        name = t.link_path if (t.title.lower() in self.dup_titles and rng.random() < 0.7) else t.title
        r = rng.random()
        if r < 0.45:
            form, s = "plain", f"[[{name}]]"
        elif r < 0.58:
            form, s = "path", f"[[{t.link_path}]]"
        elif r < 0.72:
            form, s = "alias", f"[[{name}|{' '.join(self.words.sample(rng.randint(1, 3)))}]]"
        elif r < 0.82:
            form, s = "heading", f"[[{name}#{rng.choice(t.headings)}]]"
        elif r < 0.87 and t.blocks:
            form, s = "block", f"[[{name}#^{rng.choice(t.blocks)}]]"
        elif r < 0.92:
            form, s = "embed-image", f"![[{rng.choice(self.attachments)}]]"
        elif r < 0.95:
            form, s = "embed-note", f"![[{name}]]"
        else:
            target = t.path.replace(" ", "%20")
            form, s = "markdown", f"[{' '.join(self.words.sample(2))}]({target})"
        self.link_forms[form] += 1
        return s

    def frontmatter(self, p: NotePlan) -> str | None:
        rng = self.rng
        # Daily notes always have one (templates); the rest 2 in 3: ~70% overall.
        if not p.daily and rng.random() >= 0.667:
            return None
        lines: list[str] = []
        r = rng.random()
        ntags = rng.randint(0, 5)
        if ntags:
            ts = list(dict.fromkeys(self.tag() for _ in range(ntags)))
            if r < 0.6:
                lines.append("tags:")
                lines += [f"  - {t}" for t in ts]
            elif r < 0.9:
                lines.append(f"tags: [{', '.join(ts)}]")
            else:
                lines.append(f"tags: {' '.join(ts)}")
        if rng.random() < 0.3:
            al = [" ".join(self.words.content_word() for _ in range(rng.randint(1, 3))).title()
                  for _ in range(rng.randint(1, 2))]
            lines.append("aliases:")
            lines += [f"  - {a}" for a in al]
        y, m, d = rng.randint(2019, 2025), rng.randint(1, 12), rng.randint(1, 28)
        if rng.random() < 0.7:
            lines.append(f"created: {y}-{m:02d}-{d:02d}" + (f"T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}" if rng.random() < 0.3 else ""))
        if rng.random() < 0.3:
            lines.append(f"updated: {y}-{m:02d}-{d:02d}")
        if rng.random() < 0.4:
            cats = rng.sample(self.categories, rng.randint(1, 2))
            if rng.random() < 0.5:
                lines.append("categories: [" + ", ".join(f'"[[{c}]]"' for c in cats) + "]")
            else:
                lines.append("categories:")
                lines += [f'  - "[[{c}]]"' for c in cats]
        if rng.random() < 0.15:
            t = rng.choice(self.plans)
            lines.append(f'related: "[[{t.title}]]"')
        if rng.random() < 0.3:
            lines.append(f"status: {rng.choice(STATUSES)}")
        if rng.random() < 0.1:
            lines.append(f"rating: {rng.randint(1, 5)}")
        if rng.random() < 0.05:
            lines.append("publish: true")
        if rng.random() < 0.05:
            lines.append(f'source: "https://example.org/{self.words.content_word()}/{rng.randint(1, 9999)}"')
        return "\n".join(lines)

    def body(self, p: NotePlan, target: int) -> str:
        rng, words = self.rng, self.words
        blocks: list[list[str] | str] = []  # token lists get links spliced in; strings are verbatim
        size = 0
        headings = list(p.headings)
        blocks_ids = list(p.blocks)
        if rng.random() < 0.5:
            blocks.append(f"# {p.title}")
        while size < target:
            r = rng.random()
            if headings and (r < 0.12 or (size > target * 0.3 and len(headings) > 1 and r < 0.2)):
                h = headings.pop(0)
                blocks.append("#" * rng.choice((2, 2, 2, 3, 3, 4)) + " " + h)
                size += len(h) + 4
                continue
            if r < 0.60:
                toks = paragraph_tokens(words, rng, min(target - size, rng.randint(150, 900)))
                if rng.random() < 0.15:
                    toks.insert(rng.randrange(len(toks) + 1), "#" + self.tag())
                if blocks_ids and rng.random() < 0.25:
                    toks.append("^" + blocks_ids.pop())
                blocks.append(toks)
                size += len(toks) * 7
            elif r < 0.75:
                task = rng.random() < 0.35
                items = []
                for _ in range(rng.randint(2, 8)):
                    toks = words.sample(rng.randint(2, 12))
                    toks[0] = toks[0].capitalize()
                    indent = "\t" if (items and rng.random() < 0.2) else ""
                    mark = f"- [{'x' if rng.random() < 0.4 else ' '}] " if task else rng.choice(("- ", "- ", "* ", "1. "))
                    items.append([indent + mark] + toks)
                    size += len(toks) * 7 + 4
                if blocks_ids and rng.random() < 0.2:
                    items[-1].append("^" + blocks_ids.pop())
                blocks.append(("list", items))  # type: ignore[arg-type]
            elif r < 0.82:
                lang = rng.choice(CODE_LANGS)
                code = []
                for _ in range(rng.randint(2, 10)):
                    ws = words.sample(rng.randint(1, 5))
                    code.append("    " * rng.randint(0, 2) + f"{'_'.join(ws)} = {rng.randint(0, 999)}  # [[not a link]] #notatag")
                s = f"```{lang}\n" + "\n".join(code) + "\n```"
                blocks.append(s)
                size += len(s)
            elif r < 0.88:
                kind = rng.choice(CALLOUTS)
                fold = rng.choice(("", "", "-", "+"))
                toks = paragraph_tokens(words, rng, rng.randint(60, 300))
                head = f"> [!{kind}]{fold} " + " ".join(words.sample(rng.randint(1, 4))).capitalize()
                blocks.append(("callout", head, toks))  # type: ignore[arg-type]
                size += len(head) + len(toks) * 7
            elif r < 0.92:
                toks = paragraph_tokens(words, rng, rng.randint(60, 250))
                blocks.append(("quote", toks))  # type: ignore[arg-type]
                size += len(toks) * 7
            elif r < 0.95:
                cols = rng.randint(2, 4)
                rows = ["| " + " | ".join(words.content_word().title() for _ in range(cols)) + " |",
                        "|" + "---|" * cols]
                for _ in range(rng.randint(2, 6)):
                    rows.append("| " + " | ".join(" ".join(words.sample(rng.randint(1, 3))) for _ in range(cols)) + " |")
                s = "\n".join(rows)
                blocks.append(s)
                size += len(s)
            elif r < 0.97:
                blocks.append("---")
            else:
                s = "%% " + " ".join(words.sample(rng.randint(3, 12))) + " [[commented out link]] %%"
                blocks.append(s)
                size += len(s)

        # Links: 5-15 per note (a few more in long notes), spliced into text blocks.
        n_links = rng.randint(5, 15) + min(target // 8000, 10)
        holders = [b for b in blocks if isinstance(b, list)]
        holders += [it for b in blocks if isinstance(b, tuple) and b[0] == "list" for it in b[1]]
        holders += [b[2] for b in blocks if isinstance(b, tuple) and b[0] == "callout"]
        if not holders:
            toks = paragraph_tokens(words, rng, 80)
            blocks.append(toks)
            holders = [toks]
        for _ in range(n_links):
            h = rng.choice(holders)
            pos = rng.randint(1 if (h and h[0].startswith(("-", "*", "1.", "\t"))) else 0, len(h))
            h.insert(pos, self.link(p))
        if rng.random() < 0.3:
            blocks.append(" ".join("#" + self.tag() for _ in range(rng.randint(1, 4))))

        out: list[str] = []
        for b in blocks:
            if isinstance(b, str):
                out.append(b)
            elif isinstance(b, list):
                out.append(" ".join(b))
            elif b[0] == "list":
                out.append("\n".join(it[0] + " ".join(it[1:]) for it in b[1]))
            elif b[0] == "callout":
                out.append(b[1] + "\n> " + " ".join(b[2]))
            elif b[0] == "quote":
                out.append("> " + " ".join(b[1]))
        return "\n\n".join(out) + "\n"


# -- attachments ----------------------------------------------------------------


def tiny_png(rng: random.Random) -> bytes:
    """A valid small PNG (8x8 RGB, random pixels)."""
    w = h = 8
    raw = b"".join(b"\x00" + bytes(rng.getrandbits(8) for _ in range(w * 3)) for _ in range(h))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


# -- main ---------------------------------------------------------------------------


def generate(out: Path, notes: int, seed: int, words_from: Path | None) -> dict:
    t0 = time.perf_counter()
    rng = FastRandom(seed)
    vocab, counts, vocab_src = load_vocabulary(words_from)
    words = Words(vocab, counts, rng, pool_size=min(8_000_000, max(500_000, notes * 300)))
    folders = make_folders(rng, words)
    # Tag vocabulary: flat and nested (area/topic), most common first.
    tags: list[str] = []
    for i in range(160):
        w = words.content_word()
        if i % 4 == 3:
            w = f"{rng.choice(('area', 'project', 'topic', 'status', 'type'))}/{w}"
        if w not in tags:
            tags.append(w)
    plans, categories = plan_notes(notes, rng, words, folders)
    n_att = max(5, notes // 200)
    attachments = [f"{rng.choice(PNG_NAMES)}-{i:04d}.png" for i in range(n_att)]
    gen = Gen(rng, words, plans, categories, attachments, tags)

    out.mkdir(parents=True, exist_ok=True)
    (out / ".obsidian").mkdir(exist_ok=True)
    (out / ".obsidian" / "app.json").write_text('{"alwaysUpdateLinks": true}\n')
    att_dir = out / "Attachments"
    att_dir.mkdir(exist_ok=True)
    for name in attachments:
        (att_dir / name).write_bytes(tiny_png(rng))

    made_dirs: set[str] = set()
    sizes: list[int] = []
    n_fm = n_invalid = n_crlf = 0
    mu = math.log(1150)
    for p in plans:
        target = int(min(50_000, max(80, rng.lognormvariate(mu, 1.0))))
        if p.folder == "Categories":
            target = min(target, 600)
        fm = gen.frontmatter(p)
        invalid = rng.random() < 0.005
        if invalid:
            fm = (fm + "\n" if fm else "") + rng.choice(INVALID_YAML)
        body = gen.body(p, target)
        text = (f"---\n{fm}\n---\n" if fm is not None else "") + body
        if fm is not None:
            n_fm += 1
        n_invalid += invalid
        if rng.random() < 0.10:
            text = text.replace("\n", "\r\n")
            n_crlf += 1
        data = text.encode("utf-8")
        if p.folder not in made_dirs:
            (out / p.folder).mkdir(parents=True, exist_ok=True)
            made_dirs.add(p.folder)
        (out / p.path).write_bytes(data)
        sizes.append(len(data))

    sizes_sorted = sorted(sizes)
    all_folders = sorted(made_dirs | {"Attachments"})
    manifest = {
        "generator": "bench/gen_vault.py",
        "seed": seed,
        "notes": len(plans),
        "attachments": len(attachments),
        "folders": all_folders,
        "max_depth": max(f.count("/") + 1 for f in all_folders if f),
        "bytes_total": sum(sizes),
        "size_median": sizes_sorted[len(sizes) // 2],
        "size_p90": sizes_sorted[int(len(sizes) * 0.9)],
        "size_max": sizes_sorted[-1],
        "notes_over_20k": sum(s > 20_000 for s in sizes),
        "with_frontmatter": n_fm,
        "invalid_yaml": n_invalid,
        "crlf": n_crlf,
        "duplicate_names": sum(1 for p in plans if p.title.lower() in gen.dup_titles),
        "link_forms": dict(sorted(gen.link_forms.items())),
        "vocabulary_source": vocab_src,
        "vocabulary_size": len(vocab),
        # For query sets: common words (ranks 0-299), mid and rare ones that the
        # sampler will still have emitted (count >= 3 in the source).
        "words_common": vocab[:300],
        "words_mid": vocab[300:3000:10],
        "words_rare": [w for w, c in zip(vocab, counts) if 3 <= c <= 5][:400],
        "tags": tags,
        "titles_sample": [p.title for p in plans[:: max(1, len(plans) // 200)]],
    }
    # Written without the timing so that the same seed gives identical files.
    (out / ".bench-manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False))
    manifest["seconds"] = round(time.perf_counter() - t0, 2)
    return manifest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, help="folder to create the vault in")
    ap.add_argument("--notes", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--words-from", type=Path, default=DEFAULT_WORDS_FROM,
                    help="folder of Markdown to take the vocabulary from (default: %(default)s)")
    ap.add_argument("--force", action="store_true", help="delete OUT first if it exists")
    args = ap.parse_args(argv)
    if args.out.exists() and any(args.out.iterdir()):
        if not args.force:
            print(f"{args.out} exists and is not empty (use --force to replace it)", file=sys.stderr)
            return 2
        shutil.rmtree(args.out)
    m = generate(args.out, args.notes, args.seed, args.words_from)
    keys = ("notes", "attachments", "bytes_total", "size_median", "size_p90", "size_max", "notes_over_20k",
            "with_frontmatter", "invalid_yaml", "crlf", "duplicate_names", "max_depth", "vocabulary_size", "seconds")
    print(f"vault {args.out}: " + ", ".join(f"{k}={m[k]}" for k in keys))
    print(f"folders={len(m['folders'])} link_forms={m['link_forms']} vocabulary={m['vocabulary_source']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
