"""The store's browse answers, typed, one module per kind of question:
:mod:`.listing` (``list`` and ``recent``: a :class:`~.listing.TracePage` of
:class:`~.listing.ListedTrace`), :mod:`.trace` (one trace as ``show``
gives it, :class:`~.trace.ShowResult`, and as ``read`` does,
:class:`~.trace.ReadResult`, with its :class:`~.trace.Link` and
:class:`~.trace.Backlink` s, which ``links`` and ``backlinks`` give too),
:mod:`.history` (:class:`~.history.MemoryVersion`), :mod:`.stats`
(:class:`~.stats.IndexStats`) and :mod:`.facts` (the facts of one source
note, :class:`~.facts.SourceFacts` of :class:`~.facts.SourceFact`).

Apart from :mod:`memvault.store.answers` (search, recall), and a module per
kind, because a process loads only what it asks: each frozen dataclass
costs a short process about a millisecond to build, and the session-start
hook (which lists) needs the listing types alone. Each answer's
:meth:`to_json` gives the JSON the CLI's ``--json`` and the MCP tools
print, key for key, and :meth:`from_json` reads it back; :mod:`.parts` has
what some of them share, parts whose keys stand in their answer's own JSON.
"""
