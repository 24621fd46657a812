"""A note cannot drive the terminal: control characters in what memvault
prints for people are shown escaped (``\\x1b``), never sent raw.

A note (or a file name) may hold escape sequences: OSC 8 (a hidden link),
OSC 0 (the window title), OSC 52 (a write to the clipboard), CSI (clear the
screen, move the cursor, recolour), C1 controls (``\\x9b`` is CSI on many
terminals), BEL, DEL, a carriage return that overwrites a line. Every human
printer goes through one helper (:func:`memvault.cli.main.echo`);
``--json`` keeps the text exactly, every control character ``\\u``-escaped.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import opened, write

from memvault.cli.main import cli

EVIL = ("Click \x1b]8;;http://evil.example/\x1b\\here\x1b]8;;\x1b\\ quokka \x1b]52;c;ZWNobyBoaQ==\x07 then "
        "\x1b[2J\x1b[H cleared \x9b31m red \x7f del \x90dcs\x9c \x00 nul \r overwritten")
#: Every control character but tab and newline (C0, DEL, C1).
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
#: memvault's own styles (click.style's bold, dim and reset), the only escapes it sends.
OWN_STYLES = re.compile("\x1b\\[[012]m")
CLI = Path(__file__).resolve().parent.parent / "cli"


def test_search_show_list_and_links_print_control_characters_escaped(vault: Path) -> None:
    title = "Evil \x1b]0;pwned\x07 title"
    write(vault, "Evil.md", f"---\ntags: [x]\n---\n# {title}\n\n{EVIL}\n\nSee [[Esc\x1b[31mname]].\n")
    write(vault, "Esc\x1b[31mname.md", "quokka in a file name with an escape\n")
    with opened(vault) as store:
        store.sync()
        memory = store.add(f"Remember the quokka {EVIL}", "semantic")
    runner = CliRunner()
    outputs = {}
    for args in (["search", "quokka", "--mode", "keyword"], ["search", "quokka", "--mode", "keyword", "--explain"],
                 ["show", "Evil.md"], ["show", memory.id], ["list"], ["list", "--what", "notes"],
                 ["recent", "--what", "all"], ["links", "Evil.md"], ["backlinks", "Esc\x1b[31mname.md"],
                 ["history", memory.id]):
        r = runner.invoke(cli, ["--vault", str(vault), *args], color=True)  # as on a terminal: nothing stripped
        assert r.exit_code == 0, (args, r.output)
        outputs[" ".join(args)] = r.output
        assert not RAW.search(OWN_STYLES.sub("", r.output)), (args, r.output)
    assert "\\x1b]8;;http://evil.example/" in outputs["show Evil.md"]  # shown, so a reader sees what is there
    assert "\\x1b]0;pwned\\x07" in outputs["show Evil.md"] and "\\x9b31m" in outputs["show Evil.md"]
    assert "Esc\\x1b[31mname" in outputs["search quokka --mode keyword"]
    assert "\x1b[1m" in outputs["search quokka --mode keyword"]  # memvault's own bold title still is


def test_json_keeps_the_text_exactly_with_every_control_character_escaped(vault: Path) -> None:
    write(vault, "Evil.md", f"# Evil\n\n{EVIL}\n")
    with opened(vault) as store:
        store.sync()
    runner = CliRunner()
    r = runner.invoke(cli, ["--vault", str(vault), "show", "Evil.md", "--json"], color=True)
    assert r.exit_code == 0 and not RAW.search(r.output)
    assert EVIL.replace("\r", "\n") in json.loads(r.output)["content"]  # a CR is a line end in a note
    r = runner.invoke(cli, ["--vault", str(vault), "search", "quokka", "--json", "--mode", "keyword"], color=True)
    assert r.exit_code == 0 and not RAW.search(r.output) and json.loads(r.output.splitlines()[0])["path"] == "Evil.md"


def test_an_error_naming_a_file_prints_its_control_characters_escaped(vault: Path) -> None:
    write(vault, "a.md", "# A\n")
    with opened(vault) as store:
        store.sync()
    r = CliRunner().invoke(cli, ["--vault", str(vault), "show", "No\x1b]0;x\x07pe.md"], color=True)
    assert r.exit_code != 0 and "Traceback" not in r.output
    assert not RAW.search(r.output) and "No\\x1b]0;x\\x07pe.md" in r.output


def test_no_cli_module_prints_but_through_the_one_helper() -> None:
    """click.echo, click.secho, click.style and print only in cli/main.py's helpers."""
    found = []
    for path in sorted(CLI.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            name = (f"{f.value.id}.{f.attr}" if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
                    else f.id if isinstance(f, ast.Name) else "")
            if name in ("click.echo", "click.secho", "click.style", "print"):
                found.append(f"{path.relative_to(CLI)}:{node.lineno} {name}")
    assert [f for f in found if not f.startswith("main.py:")] == []


def test_a_warning_and_a_hook_log_line_show_control_characters_escaped(
    memvault_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import logging

    from memvault.cli.logs import hook_log, setup_logging

    memvault = logging.getLogger("memvault")
    saved = (memvault.handlers[:], memvault.level, memvault.propagate)
    try:
        setup_logging("cli")
        logging.getLogger("memvault.store").warning("Evil\x1b]0;x\x07.md: could not read")
    finally:
        memvault.handlers[:], memvault.level, memvault.propagate = saved
    err = capsys.readouterr().err
    assert "Evil\\x1b]0;x\\x07.md: could not read" in err and not RAW.search(err)
    hook_log("ingested the session \x1b]8;;http://evil.example/\x1b\\title\x9b2J", "session-end")
    log = (memvault_env / "hooks.log").read_text()
    assert "\\x1b]8;;http://evil.example/\\x1b\\title\\x9b2J" in log and not RAW.search(log)
