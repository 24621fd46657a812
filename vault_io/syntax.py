"""Every Markdown regex memvault uses, defined once.

The masking pass (:mod:`.mask`), the block scanner (:mod:`.blocks`), the
link and tag scanners (:mod:`.markdown`), the fact segmenter and extractor
and the chunker all import their patterns from here, so a rule such as
"what a wikilink is" cannot drift between them.

Line patterns are matched against one line (no ``\\n``) unless they say
otherwise; most are applied to a line with its indentation already
stripped, because the callers measure indentation themselves (a tab counts
to the next multiple of four).
"""

from __future__ import annotations

import re

# --------------------------------------------------------------------------
# Links, tags, block ids (inline)
# --------------------------------------------------------------------------

#: Wikilink content: no brackets and no newline, so ``[[a [[b]]`` finds
#: ``[[b]]`` and a stray ``[[`` cannot swallow the rest of a paragraph.  The
#: "!" of an embed is checked by hand: an optional first character would cost
#: Python's regex engine its fast literal-prefix search.
WIKILINK = r"\[\[([^\[\]\n]*)\]\]"
WIKILINK_RE = re.compile(WIKILINK)

#: ``[text](destination "title")``, one level of brackets inside the text,
#: one level of balanced parentheses inside a bare destination.  The blanks
#: are possessive ("*+"): an empty destination between two runs of spaces
#: would otherwise be tried at every split of the run.  Group 1 is the text,
#: group 2 an ``<angle>`` destination, group 3 a bare one.
MD_LINK = (
    r"\[((?:[^\[\]\n]|\[[^\[\]\n]*\])*)\]"
    r"\([ \t]*+(?:<([^<>\n]*)>|([^\s()<>]*+(?:\([^\s()]*\)[^\s()<>]*+)*+))"
    r"(?:[ \t]++(?:\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?[ \t]*+\)"
)
MD_LINK_RE = re.compile(MD_LINK)

#: An embed: ``![[...]]`` or ``![alt](dest)``.
EMBED_RE = re.compile(rf"!{WIKILINK}|!{MD_LINK}")

#: A URL with a scheme, without the punctuation that usually follows one in
#: prose (``see https://x.org/a.`` ends before the period).
URL = r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s<>\"]*[^\s<>\".,;:!?)\]'”’]"
URL_RE = re.compile(URL)
#: A URL that may sit in ``<angle brackets>`` (an autolink), brackets included.
AUTOLINK_RE = re.compile(rf"<{URL}>|{URL}")
#: A URL scheme at the start of a link destination (``https:``, ``mailto:``).
SCHEME_RE = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*:")

#: Obsidian's own tag body: anything but whitespace, ASCII punctuation other
#: than "-", "_" and "/", and the Unicode general/supplemental punctuation
#: blocks.  So letters and digits of any script, marks, and emoji are in.
TAG_BODY = r"[^\s\u2000-\u206F\u2E00-\u2E7F'!\"#$%&()*+,.:;<=>?@^`{|}~\[\]\\]+"
TAG_BODY_RE = re.compile(TAG_BODY)
#: ``#tag``; group 1 is the body.  A ``#`` starts a tag only at the start
#: of a line or after white space: callers check the character before the
#: match (a look-behind here would cost the fast search for "#").
TAG_RE = re.compile("#(" + TAG_BODY + ")")

#: A block id at the end of a line (``text ^id`` or ``^id`` alone): Obsidian
#: takes "Latin letters, numbers, and dashes" after a blank or alone (callers
#: check the character before, as for tags).  Written with ``(?=\n|\Z)``
#: rather than ``re.M`` so it runs over a whole text at the speed of a
#: literal search for "^"; group 1 is the id.
BLOCK_ID_RE = re.compile(r"\^([A-Za-z0-9-]+)[ \t]*(?=\n|\Z)")

# --------------------------------------------------------------------------
# Block structure (one line at a time)
# --------------------------------------------------------------------------

#: An ATX heading's opening run, on a line without its indentation.
ATX_RE = re.compile(r"#{1,6}(?:[ \t]|$)")
#: A setext underline (``===`` or ``---``), on the whole line.
SETEXT_RE = re.compile(r" {0,3}(?:=+|-+)[ \t]*$")
#: A thematic break (``---``, ``***``, ``_ _ _``), on the whole line.
THEMATIC_RE = re.compile(r" {0,3}(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$")
#: A code fence's run of backticks or tildes.
FENCE = r"(`{3,}|~{3,})"
#: A code fence opening: the run and the info string.
FENCE_OPEN_RE = re.compile(FENCE + r"(.*)$")
#: A code fence closing run, alone on its line.
FENCE_CLOSE_RE = re.compile(FENCE + r"[ \t]*$")
#: A list item marker: (indentation, marker, blanks after it).  Needs at
#: least one blank after the marker, or the end of the line; an ordered
#: marker has ASCII digits only (``൯)`` starts no item).
LIST_ITEM_RE = re.compile(r"([ \t]*)([-*+]|[0-9]{1,9}[.)])([ \t]+|$)")
#: Characters a list item (after its indentation) can start with.
LIST_MARKER_CHARS = frozenset("-*+0123456789")
#: A task checkbox at the start of an item's text; group 1 is its character.
TASK_RE = re.compile(r"\[(.)\](?:[ \t]+|$)")
#: A blockquote marker with its indentation.
QUOTE = r"[ \t]*>"
#: One level of blockquote prefix (``>`` and one optional blank).
QUOTE_RE = re.compile(QUOTE + r"[ \t]?")
#: Every level of blockquote prefix at once (``> > ``).
QUOTES_RE = re.compile(rf"(?:{QUOTE})+[ \t]?")
#: A callout's first line (after the quote prefix): ``[!type]+ title``.
CALLOUT_RE = re.compile(r"[ \t]*\[!([^\]\n]*)\][+-]?[ \t]*(.*)$")
#: A table's delimiter row (``|---|:-:|``).
TABLE_DELIM_RE = re.compile(r"[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
#: A cell separator: a pipe not escaped with a backslash.
CELL_SPLIT_RE = re.compile(r"(?<!\\)\|")
