"""CSV cells a spreadsheet shows as text, never runs as a formula.

A cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage
return is taken for a formula by Excel, LibreOffice and Google Sheets (CSV
injection: ``=HYPERLINK(...)`` or a DDE call from a memory's text). OWASP's
defence is a leading ``'``, which the spreadsheet shows as text and does
not display. A cell that already starts with ``'`` before one of those
characters gets one more, so :func:`unguard` (what ``import csv`` does)
takes exactly one off and gives every text back as it was.
"""

from __future__ import annotations

import re

_FORMULA_START = re.compile(r"'*[=+\-@\t\r]")


def guard(cell: str) -> str:
    """``cell`` as a spreadsheet shows it but never runs it (module docstring)."""
    return "'" + cell if _FORMULA_START.match(cell) else cell


def unguard(cell: str) -> str:
    """The text :func:`guard` was given (a cell it left alone comes back as it is)."""
    return cell[1:] if cell.startswith("'") and _FORMULA_START.match(cell, 1) else cell
