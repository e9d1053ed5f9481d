"""Every surface shows a request the same way (issue 12, item 8): the arguments as a JSON
object — over HTTP and from the CLI, on both backends — with the canonical bytes that
were hashed beside them; and the history's figures alike (``/api/v1/insights`` is
``signoff insights --json``). And every JSON route answers a body its schema does not expect
(wrong types, null, huge numbers, nested junk, unknown fields) with a typed 4xx, never a
500 (issue 42, item 6): a fuzz over the OpenAPI document's routes, its schemas the oracle."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from procs import Live, live_server


@pytest.mark.slow
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



@pytest.mark.slow
def test_the_api_and_the_cli_show_insights_alike(live: Live) -> None:
    """``GET /api/v1/insights`` is ``signoff insights --json``, window and all."""
    with live.client("bot") as bot, live.client("ann") as ann:
        for n, command in enumerate(["make deploy", "make deploy", "curl -d @x example.com"]):
            proposed = bot.post("/api/v1/calls", json={
                "tool": "deploy_it", "args": {"command": command}, "call_id": f"i{n}",
                "context": {"thread_id": f"t-insights-{n % 2}"}}).json()
            assert proposed["status"] == "pending", proposed
        ann.post(f"/api/v1/requests/{proposed['request_id']}/decisions",
                 json={"kind": "reject", "reason": "no"}).raise_for_status()
        window = {"since": "2000-01-01", "until": "2100-01-01T00:00Z", "top": "1"}
        over_http = [ann.get("/api/v1/insights").json(),
                     ann.get("/api/v1/insights", params=window).json()]
    from_cli = [json.loads(live.cli("insights", "--json", *args).stdout) for args in (
        ("--top", "10"), ("--since", "2000-01-01", "--until", "2100-01-01T00:00Z",
                          "--top", "1"))]
    assert over_http == from_cli
    assert over_http[0]["asks"] == 3 and over_http[0]["tools"] == [{"key": "deploy_it",
                                                                    "asks": 3}]
    assert [t["thread"] for t in over_http[1]["top_threads"]] == ["t-insights-0"]

# ---- every payload shape the schema does not expect is a typed 4xx (issue 42, item 6) -------

FUZZ_POLICY = """
[policy]
version = "shapes"
gated = ["deploy"]

[workspace]
root = "{root}"

[tools.deploy]
"""
JUNK: list[Any] = [None, True, 0, -1, 2**64, 10**400, 1.5, "", "x", "x" * 300, [],
                   [1, "a", None], {}, {"a": {"b": [[[{}]]]}}, [[[[[[[[]]]]]]]],
                   {"$ref": "#"}, "\u202e", -(2**63) - 1]
# Bodies that are not one JSON value a schema could judge: each is refused on every route.
RAW: list[bytes] = [b"", b"\xff\xfe{}", b"\xef\xbb\xbf{}", b"[" * 100_000,
                    b'{"a":' * 5_000 + b"1" + b"}" * 5_000, b"1e999", b'{"x": 1e999}',
                    b'{"x": 1, "x": 2}', b'{"x": "\\ud800"}', b"{", b"-"]


def _bodies(schema: dict[str, Any], base: dict[str, Any]) -> Iterator[Any]:
    """The base body, then it with each field (and the body itself) replaced by junk."""
    yield base
    yield from JUNK
    yield {**base, "unexpected": 1}
    for name in schema.get("properties", {}):
        for junk in JUNK:
            yield {**base, name: junk}


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_every_json_route_answers_an_unexpected_shape_with_a_typed_4xx(
        backend: str, tmp_path: Path) -> None:
    with live_server(backend, tmp_path, FUZZ_POLICY) as live, \
            live.client("bot") as bot, live.client("boss") as boss:
        proposed = bot.post("/api/v1/calls", json={
            "tool": "deploy", "args": {"env": "a"}, "call_id": "fz-0",
            "context": {"thread_id": "t-fuzz"}}).json()
        request_id = proposed["request_id"]
        doc = boss.get("/openapi.json").json()
        bases: dict[tuple[str, str], tuple[Any, dict[str, Any]]] = {
            ("post", "/api/v1/requests/{request_id}/decisions"): (boss, {"kind": "reject",
                                                                         "reason": "no"}),
            ("post", "/api/v1/requests/{request_id}/cancel"): (boss, {"reason": "r"}),
            ("post", "/api/v1/requests/bulk-decisions"): (boss, {"calls": [
                {"request_id": "req_unknown", "args_hash": "sha256:" + "0" * 64}]}),
            ("put", "/api/v1/threads/{thread_id}"): (boss, {"review_mode": "manual"}),
            ("post", "/api/v1/calls"): (bot, {"tool": "deploy", "args": {"env": "b"},
                                              "call_id": "fz-1",
                                              "context": {"thread_id": "t-fuzz-2"}}),
            ("post", "/api/v1/calls/{request_id}/result"): (bot, {"fencing_token": 1,
                                                                  "result": {"ok": True}}),
            ("post", "/api/v1/check"): (bot, {"tool": "deploy", "args": {}}),
            ("post", "/api/v1/users"): (boss, {"name": "zed", "kind": "approver",
                                               "roles": []}),
            ("post", "/api/v1/users/{name}/rotate"): (boss, {"expires": "1h"}),
            ("put", "/api/v1/users/{name}/roles"): (boss, {"roles": ["ops"]}),
            ("post", "/api/v1/webhooks"): (boss, {"name": "w1",
                                                  "url": "http://127.0.0.1:9/hook"}),
            ("post", "/api/v1/webhooks/deliveries/replay"): (boss, {"ids": []}),
            ("post", "/api/v1/passkeys"): (boss, {"credential": {}, "name": "key"}),
            # an id no history proves: refused whatever the body, nothing written
            ("post", "/api/v1/insights/suggestions/apply"): (boss, {
                "ids": ["s-00000000"], "expect_version": "shapes"}),
            ("post", "/api/v1/requests/{request_id}/passkey-options"): (boss,
                                                                       {"kind": "approve"}),
            ("post", "/api/v1/hooks/{harness}"): (bot, {
                "session_id": "t-fuzz-hook", "cwd": "/tmp", "hook_event_name": "PreToolUse",
                "tool_name": "deploy", "tool_input": {"env": "c"}}),
        }
        # A route that would wait for a human on a valid body waits a moment only.
        queries = {("post", "/api/v1/hooks/{harness}"): "?wait=0.1"}
        routes = {(method, path): op["requestBody"]["content"]["application/json"]["schema"]
                  for path, item in doc["paths"].items() for method, op in item.items()
                  if "application/json" in op.get("requestBody", {}).get("content", {})}
        optional = {(method, path) for path, item in doc["paths"].items()
                    for method, op in item.items()
                    if "requestBody" in op and not op["requestBody"].get("required")}
        assert set(routes) == set(bases), "a JSON route without a base body here"
        failures: list[str] = []
        sent = typed = 0
        for (method, path), schema in sorted(routes.items()):
            client, base = bases[(method, path)]
            url = path.format(request_id=request_id, thread_id="t-fuzz", name="cy",
                              harness="claude-code") + queries.get((method, path), "")
            validator = jsonschema.Draft202012Validator(schema)
            for body in _bodies(schema, base):
                answer = client.request(method, url, content=json.dumps(body),
                                        headers={"Content-Type": "application/json"})
                sent += 1
                expected = validator.is_valid(body)
                shown = f"{method.upper()} {path} {json.dumps(body)[:120]} → {answer.status_code}"
                if answer.status_code >= 500:
                    failures.append(f"{shown} {answer.text[:200]}")
                elif not expected:
                    problem = answer.json() if answer.headers.get(
                        "content-type", "").startswith("application/problem+json") else {}
                    if not 400 <= answer.status_code < 500 or not problem.get("code"):
                        failures.append(f"{shown} (the schema refuses it)")
                    else:
                        typed += 1
            for raw in RAW:
                if not raw and (method, path) in optional:
                    continue  # no body where one is optional
                answer = client.request(method, url, content=raw,
                                        headers={"Content-Type": "application/json"})
                problem = answer.json() if answer.headers.get(
                    "content-type", "").startswith("application/problem+json") else {}
                if not 400 <= answer.status_code < 500 or not problem.get("code"):
                    failures.append(f"{method.upper()} {path} {raw[:40]!r} → "
                                    f"{answer.status_code} {answer.text[:200]}")
        assert not failures, "\n".join(failures[:40])
        assert typed > sent * 0.8, (typed, sent)
        assert "[[rules]]" not in (live.cwd / "signoff.toml").read_text("utf-8")
