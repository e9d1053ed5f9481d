"""Every surface shows a request the same way (issue 12, item 8): the arguments as a JSON
object — over HTTP and from the CLI, on both backends — with the canonical bytes that
were hashed beside them."""

from __future__ import annotations

import hashlib
import json

from procs import Live


def test_the_api_and_the_cli_show_arguments_alike(live: Live) -> None:
    args = {"command": "make deploy", "env": {"B": "2", "A": "é"}}
    with live.client("bot") as bot, live.client("ann") as ann:
        proposed = bot.post("/api/v1/calls", json={
            "tool": "deploy_it", "args": args, "call_id": "c1",
            "context": {"thread_id": "t-shapes"}}).json()
        assert proposed["status"] == "pending", proposed
        request_id = proposed["request_id"]
        over_http = ann.get(f"/api/v1/requests/{request_id}").json()
        listed = ann.get("/api/v1/requests", params={"status": "pending"}).json()
    from_cli = json.loads(live.cli("requests", "show", request_id, "--json").stdout)
    listed_cli = json.loads(live.cli("requests", "list", "--json").stdout)
    assert over_http["args"] == from_cli["args"] == args
    assert [r["args"] for r in listed["requests"]] == [r["args"] for r in listed_cli] == [args]
    canonical = over_http["args_canonical"]
    assert canonical == from_cli["args_canonical"] == \
        '{"command":"make deploy","env":{"A":"é","B":"2"}}'
    assert over_http["args_hash"] == "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
