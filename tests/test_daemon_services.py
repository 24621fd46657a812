"""The daemon's background services: warm queries over the socket, and embedding in the background."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from helpers import wait_for, write
from test_daemon_support import running

from memvault.cli.main import cli


def search(root: Path, *args: str) -> list[dict]:
    r = CliRunner().invoke(cli, ["--vault", str(root), "search", *args, "--json"])
    assert r.exit_code == 0, r.output
    return [json.loads(x) for x in r.stdout.splitlines()]


def test_daemon_serves_queries_and_embeds_new_notes(vault: Path) -> None:
    write(vault, "Sourdough.md", "Feed the starter with flour and water every morning before baking bread.\n")
    with running(vault, background=True) as (runner, _):
        assert runner.background.server is not None
        # a paraphrase with no shared words is found once the note is embedded
        hits = wait_for(lambda: search(vault, "morning baking habits", "--mode", "semantic"), timeout=60)
        assert hits[0]["path"] == "Sourdough.md"
        assert runner.background.server.requests >= 1  # answered by the daemon, not in-process
        write(vault, "Cycling.md", "Oil the bicycle chain after riding in the rain.\n")
        hits = wait_for(
            lambda: [h for h in search(vault, "bike maintenance", "--mode", "semantic") if h["path"] == "Cycling.md"],
            timeout=60,
        )
        assert hits
        def status() -> dict | None:
            r = CliRunner().invoke(cli, ["--vault", str(vault), "status", "--json"])
            state = json.loads(r.stdout)
            # published about once a second; the embedding service starts once ready
            return state if (state["embedding"] or {}).get("state") == "running" else None

        state = wait_for(status)
        assert state["query_socket"] is True and state["embedding"]["state"] == "running"
    assert not (runner.store.data_dir / "query.sock").exists()


def test_a_failed_embedding_service_is_reported_restarted_and_finishes(vault: Path, monkeypatch) -> None:
    """The embedding worker dies of an injected BusyError (the index held by
    another writer too long): status says so, and the supervisor brings it
    back to embed everything."""
    import apsw

    from memvault.store.embedding import vectors as vec
    from memvault.store.embedding.model import resolve_model
    from memvault.store.embedding.pipeline import EmbeddingPipeline

    real = EmbeddingPipeline.embed_pending
    failures = []

    def flaky(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        if not failures:
            failures.append(1)
            raise apsw.BusyError("database is locked")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(EmbeddingPipeline, "embed_pending", flaky)
    for i in range(3):
        write(vault, f"N{i}.md", f"Note {i} about the garden and its tomato plants.\n")
    with running(vault, background=True) as (runner, _):
        runner.services.backoff_start = 5.0  # time enough to see the failure reported

        def reported() -> dict | None:
            r = CliRunner().invoke(cli, ["--vault", str(vault), "status", "--json"])
            services = json.loads(r.stdout).get("services") or {}
            return services if "BusyError" in (services.get("embedding") or {}).get("state", "") else None

        services = wait_for(reported, timeout=30)
        assert services["embedding"]["state"] == "restarting after BusyError (1st time)"
        assert services["embedding"]["restarts"] == 1 and "database is locked" in services["embedding"]["last_error"]
        r = CliRunner().invoke(cli, ["--vault", str(vault), "status"])
        assert "restarting after BusyError (1st time)" in r.output

        def covered() -> bool:
            con = runner.store.connect()
            cache = vec.open_cache(runner.store.data_dir, create=False)
            try:
                done, total = vec.coverage(con, cache, resolve_model("default").key)
                return total > 0 and done == total
            finally:
                con.close()
                if cache is not None:
                    cache.close()

        wait_for(covered, timeout=60)
        assert runner.services.status()["embedding"]["state"] == "running"
