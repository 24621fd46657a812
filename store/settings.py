"""Configuration: ``config.toml``, environment variables and CLI flags.

Precedence, highest first: command-line flags, ``MEMVAULT_*`` environment
variables, the config file (``$MEMVAULT_CONFIG`` or
``~/.config/memvault/config.toml``), the defaults below. Every key is listed in
:data:`KEYS` with its default and meaning; ``memvault config`` prints them.

Environment variables are named after the key: ``MEMVAULT_VAULT``,
``MEMVAULT_DEBOUNCE_MS``, ``MEMVAULT_EMBEDDING_MODEL`` (dots become ``_``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from memvault.store.location import user_dir
from memvault.vault_io.errors import UsageError


class ConfigError(UsageError):
    """The configuration cannot be used; the message names the file and key."""


@dataclass(frozen=True)
class Key:
    """One configuration key."""

    name: str  # dotted, e.g. "llm.model"
    default: Any
    doc: str

    @property
    def env(self) -> str:
        """The environment variable that sets this key."""
        return "MEMVAULT_" + self.name.upper().replace(".", "_")


KEYS: tuple[Key, ...] = (
    Key("vault", "", "Path of the Obsidian vault to use when --vault is not given."),
    Key("ignore", [], "Gitignore-style patterns of files and folders to skip (`*` within a folder, `**` across, `!` takes back)."),
    Key("max_file_size", 5 * 1024 * 1024, "Notes larger than this many bytes are skipped with a warning."),
    Key("memory_folder", "Memory", "Folder of memory notes; memories are written to <folder>/<type>/."),
    Key("history_folder", "", "Folder (in the vault) of the history logs every device shares; empty: <memory_folder>/.memvault/history."),
    Key("debounce_ms", 300, "The daemon waits this long after the last event on a path before re-indexing it."),
    Key("rescan_interval", 300, "Seconds between the daemon's full rescans (catch missed events); 0 turns them off."),
    Key("sources", [], "Gitignore-style patterns of notes that are memory sources even without a marker."),
    Key("extractor", "default", 'Fact extractor for memory sources: "default" (local rules) or "llm"; "llm" also has the model confirm the contradictions `consolidate` flags.'),
    Key("llm.base_url", "http://localhost:11434/v1", "OpenAI-compatible API base URL for the llm extractor."),
    Key("llm.model", "llama3.1", "Model name sent to the llm extractor's endpoint."),
    Key("llm.api_key_env", "OPENAI_API_KEY", "Environment variable holding the API key (may be unset for local servers)."),
    Key("llm.timeout", 30.0, "Seconds to wait for one llm extractor call."),
    Key("llm.retries", 2, "Extra attempts for a failed llm extractor call before falling back to the default extractor."),
    Key("llm.max_chars", 40000, "Source notes longer than this many characters use the default extractor, not the llm."),
    Key("embedding.model", "default", 'fastembed model name, "default" (bundled all-MiniLM-L6-v2 int8) or "none".'),
    Key("embedding.daemon_threads", 1, "CPU threads the daemon's model uses (0: all cores); `memvault sync` uses all."),
    Key("embedding.batch_tokens", 512, "Embedding batch size in padded tokens (texts x longest text): bounds memory."),
    Key("embedding.cache_keep_days", 30.0, "Days a cached vector no note uses is kept (a deleted note, a rebuild come back free)."),
    Key("embedding.cache_max_mb", 2048, "Size cap of the embedding cache in MB: past it, unused vectors go first (never used ones)."),
    Key("recall.budget", 800, "Default token budget of `memvault context`."),
    Key("recall.min_similarity", 0.3, "Relevance floor: weakest cosine similarity a semantic match may have."),
    Key("recall.identity_max", 5, "Most identity memories `memvault context` puts first."),
    Key("recall.infer_sessions", True, "Infer a conversation where no `session` key says so: one conversation id, "
        "else the episodic notes and notes with a `speaker` of one folder and day (docs/search.md, Sessions "
        "inferred; false: only `session` keys and ingested sessions)."),
    Key("recall.identity", "relevant", 'When `context` shows identity memories: "relevant" (beside something relevant) or "always".'),
    Key("recall.half_life.identity", 180.0, "Days for an identity memory's recency factor to halve (0: no decay)."),
    Key("recall.half_life.semantic", 90.0, "Days for a semantic memory's recency factor to halve (0: no decay)."),
    Key("recall.half_life.procedural", 90.0, "Days for a procedural memory's recency factor to halve (0: no decay)."),
    Key("recall.half_life.episodic", 14.0, "Days for an episodic memory's recency factor to halve (0: no decay)."),
    Key("recall.half_life.prospective", 0.0, "Days for a prospective memory's recency factor to halve (0: no decay)."),
    Key("recall.half_life.ongoing", 7.0, "Days for an ongoing-work memory's recency factor and strength to halve "
        "(0: no decay); work in progress goes stale faster than facts."),
    Key("recall.half_life.note", 0.0, "Days for an ordinary note's recency factor to halve (0: notes never decay)."),
    Key("recall.evergreen_tags", ["evergreen"], "Memories with any of these tags never decay."),
    Key("ingest.min_importance", 0.0, "Chat facts scoring below this (0 to 1: who the person is 1, preferences and decisions 0.75, plans 0.5, halved when the statement names nothing but its verb; asked to be remembered 1) are not kept; the turns stay in the session note. 0 keeps every fact the rules find."),
    Key("ingest.max_per_turn", 0, "Most facts kept of one chat turn, the highest scoring first (0: no cap)."),
    Key("sessions.retention_days", 0, "`consolidate` moves session notes whose conversation ended more than this many days ago to `.trash/` (their facts stay, `restore` or `consolidate --undo` brings a note back); a note a person edited stays. 0 turns it off."),
    Key("consolidate.interval", 86400, "Seconds between the daemon's consolidation runs (default daily); 0 turns them off."),
    Key("consolidate.quiet", 60, "The daemon consolidates only after this many seconds without a vault event."),
    Key("agents.project_scope", True, "Hooks and MCP calls take the scope of the session's project (its git root's name, or a `.memvault` file's `scope`): `remember` writes there, `context` and session start prefer it, then `user`."),
    Key("consolidate.auto", ["decay", "contradiction"], "What the daemon's runs carry out on their own (decay, archive, merge, promote, contradiction, task_done, retention); the rest they propose for `memvault consolidate`. The default writes no note."),
    Key("consolidate.duplicate_similarity", 0.7, "`add` names live memories from this similarity minus 0.20 up in `similar_to` (it refuses only the same text)."),
    Key("consolidate.merge_similarity", 0.75, "`consolidate` merges memories at least this similar to each other."),
    Key("consolidate.archive_strength", 0.2, "`consolidate` archives memories whose strength fell to this or below..."),
    Key("consolidate.archive_days", 120, "...and that were not recalled for more than this many days."),
    Key("consolidate.protect_days", 7, "`consolidate` never archives a memory a person edited within this many days."),
)

_BY_NAME = {k.name: k for k in KEYS}
#: The actions of a consolidation run, in the order a run carries them out
#: (:mod:`memvault.store.consolidation.run`): what ``consolidate.auto`` may name.
CONSOLIDATION_KINDS = ("decay", "archive", "merge", "promote", "contradiction", "task_done", "retention")
_KIND_NAMES = {bool: "true or false", int: "an integer", float: "a number", list: "a list of strings", str: "a string"}


def config_path() -> Path:
    """The config file: ``$MEMVAULT_CONFIG`` or the platform's user config dir."""
    env = os.environ.get("MEMVAULT_CONFIG")
    if env:
        return Path(env).expanduser()
    return user_dir("config") / "config.toml"


def _flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and name not in _BY_NAME:
            out.update(_flatten(value, name + "."))
        else:
            out[name] = value
    return out


def _coerce(key: Key, value: Any, origin: str) -> Any:
    """Check ``value`` against the type of the key's default."""
    default = key.default
    try:
        if isinstance(default, bool):
            if isinstance(value, str):
                return value.strip().lower() in ("1", "true", "yes", "on")
            return bool(value)
        if isinstance(default, int):
            if isinstance(value, bool):
                raise ValueError
            return int(value)
        if isinstance(default, float):
            return float(value)
        if isinstance(default, list):
            if isinstance(value, str):
                return [v.strip() for v in value.split(",") if v.strip()]
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ValueError
            return list(value)
        if not isinstance(value, str):
            raise ValueError
        return value
    except (TypeError, ValueError):
        kind = _KIND_NAMES.get(type(default), type(default).__name__)
        raise ConfigError(f"{origin}: {key.name} must be {kind}, not {value!r}") from None


def check_history_folder(value: str, origin: str) -> str:
    """``value`` as the history logs' folder: empty (the default place), or a
    relative folder inside the vault (no ``..``); hidden parts are allowed."""
    folder = value.strip().strip("/")
    if not folder:
        return ""
    if value.lstrip().startswith(("/", "~")) or "\\" in folder or any(
            part in ("", ".", "..") for part in folder.split("/")):
        raise ConfigError(f"{origin}: history_folder must be a plain relative folder inside the vault, not {value!r}")
    return folder


def check_memory_folder(value: str, origin: str) -> str:
    """``value`` as a memory folder: a plain relative folder inside the vault.

    Memory notes are written to ``<folder>/<type>/``, so the folder must not
    leave the vault (absolute, ``..``), be empty, or be hidden (a ``.x``
    component: scans skip hidden folders, so notes there would never be
    read back). Leading and trailing slashes of a relative folder are
    dropped (``Memory/`` is ``Memory``); ``a//b`` and ``a/./b`` are refused
    rather than guessed at. Raises :class:`ConfigError` naming the key and
    ``origin`` (where the value came from).
    """
    def bad(why: str) -> ConfigError:
        return ConfigError(f"{origin}: memory_folder {why}, not {value!r}")

    if value.lstrip().startswith(("/", "~")):
        raise bad("must be a folder inside the vault (a relative path)")
    folder = value.strip("/")
    if not folder.strip():
        raise bad("must name a folder inside the vault")
    if "\\" in folder or any(ord(c) < 32 or c == "\x7f" for c in folder):
        raise bad("must not contain backslashes or control characters")
    for part in folder.split("/"):
        if part in ("", ".", ".."):
            raise bad("must be a plain relative folder (no '..', '.' or empty parts)")
        if part.startswith("."):
            raise bad("must not be a hidden folder (memvault and Obsidian skip those)")
        if part != part.strip():
            raise bad("must not have folder names with leading or trailing blanks")
    return folder


@dataclass(frozen=True)
class LLMSettings:
    """``[llm]``: the OpenAI-compatible endpoint of the llm fact extractor."""

    base_url: str
    model: str
    api_key_env: str
    timeout: float
    retries: int
    max_chars: int


@dataclass(frozen=True)
class EmbeddingSettings:
    """``[embedding]``: the model that embeds text for semantic search."""

    model: str
    daemon_threads: int
    batch_tokens: int
    cache_keep_days: float
    cache_max_mb: int


@dataclass(frozen=True)
class RecallSettings:
    """``[recall]``: ranking and the ``context`` block."""

    budget: int
    min_similarity: float
    identity_max: int
    #: "relevant" or "always": whether identity memories make a block alone.
    identity: str
    #: Days for the recency factor of each memory type (and "note") to halve; 0: never.
    half_life: Mapping[str, float]
    evergreen_tags: tuple[str, ...]
    #: Whether sessions the index inferred (no ``session`` key) make neighbours.
    infer_sessions: bool = True


@dataclass(frozen=True)
class ConsolidateSettings:
    """``[consolidate]``: the schedule and thresholds of consolidation."""

    interval: int
    quiet: int
    #: The action kinds the daemon's scheduled runs carry out; the rest are proposed.
    auto: frozenset[str]
    duplicate_similarity: float
    merge_similarity: float
    archive_strength: float
    archive_days: int
    protect_days: int


@dataclass(frozen=True)
class IngestSettings:
    """``[ingest]``: which facts of a conversation are kept (:mod:`memvault.store.facts.importance`)."""

    #: Facts scoring below this are not kept (0: all the rules find).
    min_importance: float
    #: Most facts kept of one turn (0: no cap).
    max_per_turn: int


@dataclass(frozen=True)
class SessionSettings:
    """``[sessions]``: how long session notes stay in the vault (:mod:`memvault.store.consolidation.retention`)."""

    #: Days after a conversation ended that ``consolidate`` moves its note to the trash (0: never).
    retention_days: int


@dataclass(frozen=True)
class AgentSettings:
    """``[agents]``: what hooks and the MCP server do for an agent's session."""

    #: Take the scope of the session's project (see :mod:`memvault.store.project`).
    project_scope: bool


@dataclass(frozen=True)
class Settings:
    """The effective settings after file, environment and flags: a typed,
    read-only view (``settings.recall.budget``), plus every raw value and
    where it came from for ``memvault config``."""

    file: Path
    #: Every key's value by dotted name (read-only), and its origin:
    #: "default", "file", "env" or "flag".
    values: Mapping[str, Any]
    origins: Mapping[str, str]
    vault: str
    ignore: tuple[str, ...]
    max_file_size: int
    memory_folder: str
    #: The vault folder of the history logs (:mod:`memvault.store.history`).
    history_folder: str
    debounce_ms: int
    rescan_interval: int
    sources: tuple[str, ...]
    extractor: str
    llm: LLMSettings
    embedding: EmbeddingSettings
    recall: RecallSettings
    consolidate: ConsolidateSettings
    agents: AgentSettings
    ingest: IngestSettings
    sessions: SessionSettings

    @classmethod
    def from_values(cls, values: dict[str, Any], file: Path, origins: dict[str, str]) -> "Settings":
        """The typed view of checked ``values`` (one per key of :data:`KEYS`)."""
        v = values
        return cls(
            file=file,
            values=MappingProxyType(dict(v)),
            origins=MappingProxyType(dict(origins)),
            vault=str(v["vault"]),
            ignore=tuple(v["ignore"]),
            max_file_size=int(v["max_file_size"]),
            memory_folder=str(v["memory_folder"]),
            history_folder=str(v["history_folder"]) or f"{v['memory_folder']}/.memvault/history",
            debounce_ms=int(v["debounce_ms"]),
            rescan_interval=int(v["rescan_interval"]),
            sources=tuple(v["sources"]),
            extractor=str(v["extractor"]),
            llm=LLMSettings(
                base_url=v["llm.base_url"], model=v["llm.model"], api_key_env=v["llm.api_key_env"],
                timeout=float(v["llm.timeout"]), retries=max(0, int(v["llm.retries"])),
                max_chars=int(v["llm.max_chars"]),
            ),
            embedding=EmbeddingSettings(
                model=v["embedding.model"], daemon_threads=int(v["embedding.daemon_threads"]),
                batch_tokens=int(v["embedding.batch_tokens"]),
                cache_keep_days=float(v["embedding.cache_keep_days"]), cache_max_mb=int(v["embedding.cache_max_mb"]),
            ),
            recall=RecallSettings(
                budget=int(v["recall.budget"]),
                min_similarity=float(v["recall.min_similarity"]),
                identity_max=int(v["recall.identity_max"]),
                identity=str(v["recall.identity"]),
                half_life=MappingProxyType({
                    k.rsplit(".", 1)[1]: float(v[k])
                    for k in v if k.startswith("recall.half_life.")
                }),
                evergreen_tags=tuple(t.lower().lstrip("#") for t in v["recall.evergreen_tags"]),
                infer_sessions=bool(v["recall.infer_sessions"]),
            ),
            consolidate=ConsolidateSettings(
                interval=max(0, int(v["consolidate.interval"])), quiet=max(0, int(v["consolidate.quiet"])),
                auto=frozenset(v["consolidate.auto"]),
                duplicate_similarity=float(v["consolidate.duplicate_similarity"]),
                merge_similarity=float(v["consolidate.merge_similarity"]),
                archive_strength=float(v["consolidate.archive_strength"]),
                archive_days=int(v["consolidate.archive_days"]), protect_days=int(v["consolidate.protect_days"]),
            ),
            agents=AgentSettings(project_scope=bool(v["agents.project_scope"])),
            ingest=IngestSettings(min_importance=float(v["ingest.min_importance"]),
                                  max_per_turn=int(v["ingest.max_per_turn"])),
            sessions=SessionSettings(retention_days=int(v["sessions.retention_days"])),
        )


def _origin(name: str, origins: dict[str, str], path: Path) -> str:
    """Where the value of key ``name`` came from, as an error names it."""
    return {"file": str(path), "env": f"environment variable {_BY_NAME[name].env}",
            "flag": f"option for {name}"}.get(origins[name], "default")


def _check_ingest(values: dict[str, Any], origins: dict[str, str], path: Path) -> None:
    """``ingest.min_importance`` is a score from 0 to 1, ``ingest.max_per_turn`` and
    ``sessions.retention_days`` counts."""
    score, cap = values["ingest.min_importance"], values["ingest.max_per_turn"]
    if not 0 <= score <= 1:
        raise ConfigError(f"{_origin('ingest.min_importance', origins, path)}: "
                          f"ingest.min_importance must be from 0 to 1, not {score!r}")
    days = values["sessions.retention_days"]
    if days < 0:
        raise ConfigError(f"{_origin('sessions.retention_days', origins, path)}: "
                          f"sessions.retention_days must be 0 (off) or more days, not {days!r}")
    if cap < 0:
        raise ConfigError(f"{_origin('ingest.max_per_turn', origins, path)}: "
                          f"ingest.max_per_turn must be 0 (no cap) or more, not {cap!r}")


def load_settings(overrides: dict[str, Any] | None = None) -> Settings:
    """Read the effective settings; ``overrides`` are CLI flags (None = unset)."""
    path = config_path()
    values = {k.name: k.default for k in KEYS}
    origins = dict.fromkeys(values, "default")
    if path.exists():
        import tomllib  # only when there is a file to read

        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read config file {path}: {exc}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
        except RecursionError:  # tomllib reads nested arrays and tables recursively
            raise ConfigError(f"config file {path} is not valid TOML: it nests too deeply to read") from None
        for name, value in _flatten(data).items():
            key = _BY_NAME.get(name)
            if key is None:
                raise ConfigError(f"{path}: unknown key {name!r} (see `memvault config`)")
            values[name] = _coerce(key, value, str(path))
            origins[name] = "file"
    for key in KEYS:
        env = os.environ.get(key.env)
        if env is not None and env != "":
            values[key.name] = _coerce(key, env, f"environment variable {key.env}")
            origins[key.name] = "env"
    for name, value in (overrides or {}).items():
        if value is not None:
            values[name] = _coerce(_BY_NAME[name], value, f"option for {name}")
            origins[name] = "flag"
    origin = {
        "file": str(path),
        "env": f"environment variable {_BY_NAME['memory_folder'].env}",
        "flag": "option for memory_folder",
    }.get(origins["memory_folder"], "default")
    values["memory_folder"] = check_memory_folder(values["memory_folder"], origin)
    values["history_folder"] = check_history_folder(values["history_folder"], origins["history_folder"])
    unknown = [kind for kind in values["consolidate.auto"] if kind not in CONSOLIDATION_KINDS]
    if unknown:
        raise ConfigError(f"consolidate.auto names {unknown[0]!r}, not an action of consolidation "
                          f"({', '.join(CONSOLIDATION_KINDS)})")
    _check_ingest(values, origins, path)
    if values["recall.identity"] not in ("always", "relevant"):
        raise ConfigError(f"recall.identity must be always or relevant, not {values['recall.identity']!r}")
    return Settings.from_values(values, path, origins)
