"""Installing memvault into agent clients' config files, and taking it out again.

``memvault mcp install --client C`` writes (or merges into) the MCP server
list of client C; ``memvault hook install --client C`` merges the session
hooks into its settings. Both follow the same rules:

- every other server, hook and key of the file stays as it was (the JSON
  is rewritten with two-space indentation; in Codex's TOML only the lines
  of memvault's own table are replaced, by :mod:`.toml_edit`, every other
  byte and every comment stays, and the result is checked with ``tomllib``);
- JSON with comments and trailing commas (JSONC: VS Code's ``mcp.json``)
  is read, and changed by a text edit of memvault's own entry (:mod:`.jsonc`)
  so the comments stay; were that to fail, the file is written as plain JSON
  and the change says so (the original is in the backup);
- a copy of the file is written first, beside it (``<name>.memvault-backup``);
- a file that is a symlink (a dotfiles repo) is written through, atomically
  at the file it leads to, and stays a link; one that leads nowhere is refused;
- a file that does not parse is refused (:class:`ClientConfigError`, exit 1)
  and nothing is written;
- uninstall removes only memvault's own entry.

Where each client keeps its files (``--scope user`` or ``project``):

========================  =====================================================  ==========================
client                    user                                                   project (working directory)
========================  =====================================================  ==========================
claude-code (MCP)         ``~/.claude.json`` ``mcpServers``                      ``.mcp.json``
claude-code (hooks)       ``~/.claude/settings.json`` ``hooks``                  ``.claude/settings.json``
claude-desktop            ``claude_desktop_config.json`` (platform config dir)   (none)
cursor                    ``~/.cursor/mcp.json``                                 ``.cursor/mcp.json``
vscode                    ``Code/User/mcp.json`` (platform config dir) ``servers``  ``.vscode/mcp.json``
codex (MCP)               ``$CODEX_HOME/config.toml`` ``[mcp_servers.memvault]``  ``.codex/config.toml``
codex (hooks)             ``$CODEX_HOME/hooks.json``                             ``.codex/hooks.json``
codex (hooks feature)     ``$CODEX_HOME/config.toml`` ``[features]``             ``.codex/config.toml``
========================  =====================================================  ==========================
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memvault.cli.clients import jsonc, toml_edit
from memvault.vault_io import json_input
from memvault.vault_io.atomic import atomic_write
from memvault.vault_io.errors import MemvaultError, UsageError

CLIENTS = ("claude-code", "claude-desktop", "cursor", "vscode", "codex")
HOOK_CLIENTS = ("claude-code", "codex")
BACKUP_SUFFIX = ".memvault-backup"
DEFAULT_NAME = "memvault"

#: Hook events memvault installs: (event, matcher, subcommand, timeout in seconds).
HOOK_EVENTS: tuple[tuple[str, str | None, str, int], ...] = (
    ("SessionStart", "startup|resume|clear|compact", "session-start", 10),
    ("UserPromptSubmit", None, "prompt", 5),
    ("PreCompact", "manual|auto", "pre-compact", 30),
    ("SessionEnd", None, "session-end", 30),
    # After every answer (both clients call it Stop): the daemon ingests the new turns.
    ("Stop", None, "turn", 5),
)
#: The per-turn hook's own entry point: ``memvault`` itself starts too slowly for every turn.
TURN_MODULE = "memvault.cli.turn_hook"


class ClientConfigError(MemvaultError):
    """A client config file that cannot be read or changed safely (nothing was written)."""


@dataclass
class ConfigChange:
    """What an install or uninstall did to one file."""

    path: Path
    action: str  # added | updated | unchanged | removed | absent
    backup: Path | None = None
    note: str | None = None  # something the person should know (comments that could not be kept)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"path": str(self.path), "action": self.action, "backup": str(self.backup) if self.backup else None,
                "note": self.note}

    def describe(self, what: str) -> str:
        """One line for people."""
        verb = {"added": f"added {what} to", "updated": f"updated {what} in", "unchanged": f"{what} already up to date in",
                "removed": f"removed {what} from", "absent": f"no {what} to remove in"}[self.action]
        backup = f" (backup: {self.backup})" if self.backup else ""
        return f"{verb} {self.path}{backup}" + (f"; {self.note}" if self.note else "")


# -- where --------------------------------------------------------------------------


def _config_base() -> Path:
    """The platform's per-user config folder (XDG on Linux)."""
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support"
    if sys.platform.startswith("win"):
        return Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming")
    base = os.environ.get("XDG_CONFIG_HOME", "").strip()
    return Path(base) if os.path.isabs(base) else Path.home() / ".config"


def _codex_home() -> Path:
    env = os.environ.get("CODEX_HOME", "").strip()
    return Path(env).expanduser() if env else Path.home() / ".codex"


def mcp_config_path(client: str, scope: str, project: Path) -> Path:
    """The file that lists ``client``'s MCP servers at ``scope``."""
    if client not in CLIENTS:
        raise UsageError(f"unknown client {client!r}: one of {', '.join(CLIENTS)}")
    if scope == "project":
        where = {"claude-code": ".mcp.json", "cursor": ".cursor/mcp.json", "vscode": ".vscode/mcp.json",
                 "codex": ".codex/config.toml"}.get(client)
        if where is None:
            raise UsageError(f"{client} has no project config: use --scope user")
        return project / where
    if client == "claude-code":
        return Path.home() / ".claude.json"
    if client == "claude-desktop":
        return _config_base() / "Claude" / "claude_desktop_config.json"
    if client == "cursor":
        return Path.home() / ".cursor" / "mcp.json"
    if client == "vscode":
        return _config_base() / "Code" / "User" / "mcp.json"
    return _codex_home() / "config.toml"


def hook_config_path(client: str, scope: str, project: Path) -> Path:
    """The settings file that holds ``client``'s hooks at ``scope``."""
    if client not in HOOK_CLIENTS:
        raise UsageError(f"hooks can be installed for {' and '.join(HOOK_CLIENTS)}, not {client!r}")
    if client == "claude-code":
        return project / ".claude" / "settings.json" if scope == "project" else Path.home() / ".claude" / "settings.json"
    return project / ".codex" / "hooks.json" if scope == "project" else _codex_home() / "hooks.json"


# -- what ---------------------------------------------------------------------------


def memvault_command() -> str:
    """The memvault command a client starts (:func:`memvault.store.location.memvault_executable`:
    clients start it with a bare environment); ClientConfigError when there is none."""
    from memvault.store.location import memvault_executable

    exe = memvault_executable()
    if exe is None:
        raise ClientConfigError("cannot find the memvault executable: put it on PATH; nothing was written")
    return str(exe)


def server_env() -> dict[str, str]:
    """The memvault variables of this shell that a client must pass on (it starts servers with few)."""
    return {k: os.environ[k] for k in ("MEMVAULT_HOME", "MEMVAULT_CONFIG") if os.environ.get(k)}


def server_entry(client: str, vault: Path, *, read_only: bool = False) -> dict[str, Any]:
    """The MCP server entry for ``client``: this memvault, this vault, on stdio."""
    args = ["--vault", str(vault), "mcp"] + (["--read-only"] if read_only else [])
    entry: dict[str, Any] = {"command": memvault_command(), "args": args}
    if client in ("claude-code", "vscode"):
        entry = {"type": "stdio", **entry}
    env = server_env()
    if env:
        entry["env"] = env
    return entry


def hook_command(vault: Path, sub: str, client: str) -> str:
    """The shell command of one hook (the per-turn one runs its module on
    this memvault's Python, isolated: -I keeps PYTHON* variables and the
    working directory out of its imports)."""
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in server_env().items())
    if sub == "turn":
        cmd = f"{shlex.quote(sys.executable)} -I -m {TURN_MODULE} --vault {shlex.quote(str(vault))} --client {client}"
    else:
        cmd = f"{shlex.quote(memvault_command())} --vault {shlex.quote(str(vault))} hook {sub} --client {client}"
    return f"{env} {cmd}" if env else cmd


# -- JSON files -------------------------------------------------------------------------


def _read(path: Path) -> tuple[str, dict[str, Any]] | None:
    """The file's text and object; None when it does not exist (or is empty).

    JSON with comments and trailing commas (JSONC, VS Code's format for its
    ``mcp.json``) is read too. Raises when it cannot be parsed."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ClientConfigError(f"cannot read {path}: {exc}; nothing was written") from None
    if not text.strip():
        return None
    try:
        data = json_input.loads(text)
    except ValueError as exc:
        try:
            data = jsonc.loads(text)
        except jsonc.JsoncError:
            raise ClientConfigError(
                f"{path} is not valid JSON ({exc}); nothing was written: fix it or move it away") from None
    if not isinstance(data, dict):
        raise ClientConfigError(f"{path} does not hold a JSON object; nothing was written")
    return text, data


def _write_back(path: Path, text: str | None, data: dict[str, Any], edit: Callable[[str], str]) -> ConfigChange:
    """Write ``data`` to ``path``: a file with comments by ``edit`` of its text,
    so the comments stay; when that fails, as plain JSON, saying so (the
    original stays in the backup)."""
    if text is not None and jsonc.has_comments(text):
        try:
            edited = edit(text)
            if jsonc.loads(edited) == data:
                return ConfigChange(path, "", _write(path, edited))
        except (jsonc.JsoncError, ValueError, IndexError):
            pass
        backup = _write(path, _dump(data))
        return ConfigChange(path, "", backup, note=f"its comments could not be kept (the original is {backup})")
    return ConfigChange(path, "", _write(path, _dump(data)))


def _backup(path: Path) -> Path | None:
    if not path.exists():
        return None
    backup = path.with_name(path.name + BACKUP_SUFFIX)
    shutil.copy2(path, backup)
    os.chmod(backup, path.stat().st_mode & 0o777)
    return backup


def _write(path: Path, text: str) -> Path | None:
    """Back the file up, then replace it atomically (keeping its mode). A
    config that is a symlink (kept in a dotfiles repo) is written through:
    the file it leads to is replaced, atomically there, and the link stays."""
    target = _link_target(path)
    backup = _backup(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    mode = target.stat().st_mode & 0o777 if target.exists() else None
    atomic_write(target, text.encode("utf-8"), mode=mode)
    return backup


def _link_target(path: Path) -> Path:
    """``path``, or the file it leads to when it is a symlink; a link that
    leads nowhere (or to no file) is refused: replacing it with a file of
    our own would cut the person's link."""
    if not path.is_symlink():
        return path
    try:
        target = Path(os.path.realpath(path, strict=True))
    except OSError:
        raise ClientConfigError(f"{path} is a symlink to {os.readlink(path)}, which does not exist; "
                                "nothing was written") from None
    if not target.is_file():
        raise ClientConfigError(f"{path} is a symlink to {target}, which is not a file; nothing was written")
    return target


def _dump(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _servers_key(client: str) -> str:
    return "servers" if client == "vscode" else "mcpServers"


def install_json_server(path: Path, client: str, name: str, entry: dict[str, Any]) -> ConfigChange:
    """Put ``entry`` under the client's server list as ``name``; everything else stays."""
    found = _read(path)
    text, data = found if found is not None else (None, {})
    key = _servers_key(client)
    servers = data.get(key)
    if servers is None:
        servers = data[key] = {}
    if not isinstance(servers, dict):
        raise ClientConfigError(f"{path}: {key!r} is not an object; nothing was written")
    if servers.get(name) == entry:
        return ConfigChange(path, "unchanged")
    action = "updated" if name in servers else "added"
    servers[name] = entry
    change = _write_back(path, text, data, lambda t: jsonc.set_member(t, (key,), name, entry))
    change.action = action
    return change


def uninstall_json_server(path: Path, client: str, name: str) -> ConfigChange:
    """Take ``name`` out of the client's server list (nothing else)."""
    found = _read(path)
    text, data = found if found is not None else (None, {})
    key = _servers_key(client)
    servers = data.get(key)
    if not isinstance(servers, dict) or name not in servers:
        return ConfigChange(path, "absent")
    del servers[name]
    change = _write_back(path, text, data, lambda t: jsonc.remove_member(t, (key,), name))
    change.action = "removed"
    return change


# -- Codex's TOML -------------------------------------------------------------------------


def _parse_toml(path: Path) -> tuple[str, dict[str, Any]]:
    import tomllib

    try:
        text = path.read_bytes().decode("utf-8")  # as it is: CRLF line endings stay
    except FileNotFoundError:
        return "", {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ClientConfigError(f"cannot read {path}: {exc}; nothing was written") from None
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ClientConfigError(f"{path} is not valid TOML ({exc}); nothing was written") from None


def _codex_entry(data: dict[str, Any], name: str) -> Any:
    servers = data.get("mcp_servers")
    return servers.get(name) if isinstance(servers, dict) else None


def install_codex_server(path: Path, name: str, entry: dict[str, Any]) -> ConfigChange:
    """Write ``[mcp_servers.<name>]`` into Codex's config.toml (:mod:`.toml_edit`); other bytes stay."""
    text, data = _parse_toml(path)
    current = _codex_entry(data, name)
    if current == entry:
        return ConfigChange(path, "unchanged")
    if "mcp_servers" in data and not isinstance(data["mcp_servers"], dict):
        raise ClientConfigError(f"{path}: mcp_servers is not a table; nothing was written")
    try:
        new = toml_edit.set_table(text, ("mcp_servers", name), entry)
    except toml_edit.TomlEditError as exc:
        raise ClientConfigError(f"cannot edit {path} safely ({exc}); nothing was written") from None
    _check_toml(path, data, new, name, entry)
    return ConfigChange(path, "updated" if current is not None else "added", _write(path, new))


def uninstall_codex_server(path: Path, name: str) -> ConfigChange:
    """Take ``[mcp_servers.<name>]`` out of Codex's config.toml (its comment lines stay)."""
    text, data = _parse_toml(path)
    if _codex_entry(data, name) is None:
        return ConfigChange(path, "absent")
    try:
        rest, _ = toml_edit.remove_table(text, ("mcp_servers", name))
    except toml_edit.TomlEditError as exc:
        raise ClientConfigError(f"cannot edit {path} safely ({exc}); nothing was written") from None
    _check_toml(path, data, rest, name, None)
    return ConfigChange(path, "removed", _write(path, rest))


def _check_toml(path: Path, before: dict[str, Any], text: str, name: str, entry: dict[str, Any] | None) -> None:
    """The edited text must parse, hold exactly the intended entry, and
    everything else as it was (an entry written inline, which the line
    edit cannot reach, fails here: the person changes it by hand)."""
    import copy
    import tomllib

    want = copy.deepcopy(before)
    servers = want.setdefault("mcp_servers", {})
    if entry is None:
        servers.pop(name, None)
        if not servers and "mcp_servers" not in before:
            del want["mcp_servers"]
    else:
        servers[name] = entry
    try:
        got = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ClientConfigError(f"editing {path} would break it ({exc}); nothing was written") from None
    for data in (got, want):
        if data.get("mcp_servers") == {}:  # a server list left empty, or never there
            del data["mcp_servers"]
    if got != want:
        raise ClientConfigError(f"cannot edit mcp_servers.{name} in {path} safely (is it written inline?); "
                                "change it by hand; nothing was written")


# -- the commands' entry points -----------------------------------------------------------


def install_server(client: str, scope: str, vault: Path, *, name: str = DEFAULT_NAME, read_only: bool = False,
                   project: Path | None = None) -> ConfigChange:
    """Install memvault's MCP server for ``client``."""
    path = mcp_config_path(client, scope, project or Path.cwd())
    entry = server_entry(client, vault, read_only=read_only)
    if client == "codex":
        return install_codex_server(path, name, entry)
    return install_json_server(path, client, name, entry)


def uninstall_server(client: str, scope: str, *, name: str = DEFAULT_NAME, project: Path | None = None) -> ConfigChange:
    """Remove memvault's MCP server entry from ``client``'s config."""
    path = mcp_config_path(client, scope, project or Path.cwd())
    if client == "codex":
        return uninstall_codex_server(path, name)
    return uninstall_json_server(path, client, name)


def _is_ours(handler: Any) -> bool:
    command = handler.get("command") if isinstance(handler, dict) else None
    return isinstance(command, str) and (
        re.search(r"memvault\S*\s.*\bhook (session-start|prompt|pre-compact|session-end|turn)\b", command) is not None
        or re.search(r"\s-m\s+" + re.escape(TURN_MODULE) + r"\b", command) is not None)


def _strip_ours(hooks: dict[str, Any]) -> bool:
    """Remove memvault's hook handlers (and groups left empty); whether any was there."""
    removed = False
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept = []
        for group in groups:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if isinstance(handlers, list) and any(_is_ours(h) for h in handlers):
                removed = True
                group = dict(group, hooks=[h for h in handlers if not _is_ours(h)])
                if not group["hooks"]:
                    continue
            kept.append(group)
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
    return removed


def hook_names(only: str | None) -> tuple[str, ...]:
    """The hooks ``--only`` names (``prompt,turn``), each one memvault has;
    all of them for None. :class:`UsageError` names one it does not know."""
    every = tuple(sub for _, _, sub, _ in HOOK_EVENTS)
    if only is None:
        return every
    names = [n.strip() for n in only.split(",") if n.strip()]
    unknown = [n for n in names if n not in every]
    if unknown or not names:
        raise UsageError(f"--only {only!r}: give hooks from {', '.join(every)}, comma-separated")
    return tuple(n for n in every if n in names)


def install_hooks(client: str, scope: str, vault: Path, *, project: Path | None = None,
                  only: tuple[str, ...] | None = None) -> ConfigChange:
    """Merge memvault's session hooks into ``client``'s settings (``only``:
    these of them, :func:`hook_names`; memvault's others are taken out)."""
    path = hook_config_path(client, scope, project or Path.cwd())
    found = _read(path)
    text, data = found if found is not None else (None, {})
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ClientConfigError(f"{path}: 'hooks' is not an object; nothing was written")
    before = json.dumps(hooks, sort_keys=True)
    had = _strip_ours(hooks)
    for event, matcher, sub, timeout in HOOK_EVENTS:
        if only is not None and sub not in only:
            continue
        group: dict[str, Any] = {"matcher": matcher} if matcher else {}
        group["hooks"] = [{"type": "command", "command": hook_command(vault, sub, client), "timeout": timeout}]
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise ClientConfigError(f"{path}: hooks.{event} is not a list; nothing was written")
        groups.append(group)
    if json.dumps(hooks, sort_keys=True) == before:
        return ConfigChange(path, "unchanged")
    change = _write_back(path, text, data, lambda t: jsonc.set_member(t, (), "hooks", hooks))
    change.action = "updated" if had else "added"
    return change


#: The ``[features]`` keys that turn Codex's hooks on: ``codex_hooks`` (Codex before 0.130 reads only it; later
#: versions read it as an alias of ``hooks``, the newer name). Codex runs no hook of hooks.json without one.
CODEX_HOOK_FEATURES = ("codex_hooks", "hooks")


def codex_hooks_feature(scope: str, *, project: Path | None = None) -> tuple[Path, str | None, str]:
    """What turning Codex's hooks feature on at ``scope`` takes: its
    config.toml, the new text (None: already on, nothing to write) and the
    action. A key set to false is set to true (installing hooks asks for
    them); none: ``codex_hooks = true`` is added under ``[features]``.
    Raises ClientConfigError, before anything is written, when the file
    cannot be changed safely."""
    path = mcp_config_path("codex", scope, project or Path.cwd())
    text, data = _parse_toml(path)
    features = data.get("features", {})
    if not isinstance(features, dict):
        raise ClientConfigError(f"{path}: features is not a table; nothing was written")
    present = {k: features[k] for k in CODEX_HOOK_FEATURES if k in features}
    if any(v is True for v in present.values()) and not any(v is False for v in present.values()):
        return path, None, "unchanged"
    keys = [k for k, v in present.items() if v is not True] or [CODEX_HOOK_FEATURES[0]]
    new = text
    try:
        for name in keys:
            new = toml_edit.set_key(new, ("features",), name, True)
    except toml_edit.TomlEditError as exc:
        raise ClientConfigError(f"cannot edit {path} safely ({exc}); nothing was written") from None
    import tomllib

    want = dict(data, features={**features, **dict.fromkeys(keys, True)})
    try:
        ok = tomllib.loads(new) == want
    except tomllib.TOMLDecodeError:
        ok = False
    if not ok:
        raise ClientConfigError(f"cannot turn on [features] {keys[0]} in {path} safely (is features written "
                                "inline?); set it by hand; nothing was written")
    return path, new, "updated" if present else "added"


def install_codex_hooks(scope: str, vault: Path, *, project: Path | None = None,
                        only: tuple[str, ...] | None = None) -> list[ConfigChange]:
    """Codex's hooks: memvault's in hooks.json, and the feature flag that
    makes Codex run them in config.toml (checked first: a config that cannot
    be edited safely stops the install before either file is written)."""
    path, new, action = codex_hooks_feature(scope, project=project)
    changes = [install_hooks("codex", scope, vault, project=project, only=only)]
    if new is None:
        changes.append(ConfigChange(path, "unchanged"))
    else:
        was = "it was false; " if action == "updated" else ""
        changes.append(ConfigChange(path, action, _write(path, new),
                                    note=f"{was}Codex runs no hook without it (hook uninstall leaves it on)"))
    return changes


def uninstall_hooks(client: str, scope: str, *, project: Path | None = None) -> ConfigChange:
    """Remove memvault's hooks from ``client``'s settings (others stay)."""
    path = hook_config_path(client, scope, project or Path.cwd())
    found = _read(path)
    text, data = found if found is not None else (None, {})
    hooks = data.get("hooks")
    if not isinstance(hooks, dict) or not _strip_ours(hooks):
        return ConfigChange(path, "absent")
    if not hooks:
        del data["hooks"]
    change = _write_back(path, text, data, lambda t: jsonc.set_member(t, (), "hooks", hooks) if hooks
                         else jsonc.remove_member(t, (), "hooks"))
    change.action = "removed"
    return change
