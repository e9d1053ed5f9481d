"""The official git server (``mcp-server-git``) behind the proxy, under the ``mcp-git``
preset: reads allowed as the server answers them, a commit asked and run once when
accepted, a repository outside the workspace denied before the server sees it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import types
from mcpkit import Site, direct, dump, make_site, proxied

from signoff.model import RequestStatus
from signoff.policy.starter import starter_toml

pytestmark = pytest.mark.slow
pytest.importorskip("mcp_server_git", reason="mcp-server-git is in the dev extra")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True, timeout=30).stdout


@pytest.fixture
def repo_site(tmp_path: Path) -> tuple[Site, Path]:
    site = make_site(tmp_path)
    site.policy.write_text(starter_toml(str(site.root), "mcp-git"), "utf-8")
    repo = site.root / "project"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "dev@example.com")
    git(repo, "config", "user.name", "Dev")
    (repo / "README.md").write_text("hello\n")
    git(repo, "add", "README.md")
    git(repo, "commit", "-q", "-m", "first")
    (repo / "README.md").write_text("hello again\n")
    git(repo, "add", "README.md")
    return site, repo


def server(repo: Path) -> list[str]:
    return [sys.executable, "-m", "mcp_server_git", "--repository", str(repo)]


def test_git_reads_pass_a_commit_is_asked_and_runs_once(repo_site: tuple[Site, Path]) -> None:
    site, repo = repo_site
    asked: list[str] = []

    async def accept(_ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={})

    async def main() -> dict[str, Any]:
        async with direct(site, upstream=server(repo), mode="legacy") as plain:
            status = dump(await plain.call_tool("git_status", {"repo_path": str(repo)}))
        async with proxied(site, upstream=server(repo), mode="legacy",
                           elicitation_callback=accept) as client:
            through = dump(await client.call_tool("git_status", {"repo_path": str(repo)}))
            outside = await client.call_tool("git_status", {"repo_path": "/etc"})
            commit = await client.call_tool("git_commit", {"repo_path": str(repo),
                                                           "message": "second"})
        return {"status": status, "through": through, "outside": outside, "commit": commit}

    out = anyio.run(main)
    assert out["through"] == out["status"]
    assert out["outside"].is_error and "outside workspace" in out["outside"].content[0].text
    assert not out["commit"].is_error
    assert git(repo, "log", "--format=%s").split() == ["second", "first"]
    [question] = asked
    assert "git__git_commit" in question and '"message":"second"' in question
    [request] = site.requests()
    assert request.tool == "git__git_commit" and request.status is RequestStatus.SUCCEEDED
