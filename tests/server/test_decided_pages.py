"""What a request page says once it is decided: no expiry any more but who decided and
when; a rejection shows the approver's reason and alternatives, not "Approvals 0 of 1";
every time on a page says it is UTC."""

from __future__ import annotations

import re

from server_helpers import Served, propose_make

from signoff.times import shown

UTC_TIME = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC")


def _facts(page: str) -> str:
    return page.split('id="facts"')[1]


def test_a_pending_request_shows_its_expiry_in_utc(served: Served) -> None:
    request_id = propose_make(served, "t-pending")
    request = served.gate.get_request(request_id)
    assert request.expires_at is not None
    with served.client(served.alice) as alice:
        page = alice.get(f"/requests/{request_id}").text
    facts = _facts(page)
    assert '<dd id="expires"><time datetime="' in facts
    assert f">{shown(request.expires_at)}</time> (<span class=\"countdown\"" in facts
    assert f">{shown(request.created_at)}</time>" in facts
    assert 'id="settled"' not in facts and 'id="approvals">Approvals: 0 of 1' in page


def test_a_rejected_request_shows_the_rejection_and_its_alternatives(served: Served) -> None:
    request_id = propose_make(served, "t-rejected")
    with served.client(served.alice) as alice:
        assert alice.post(f"/api/v1/requests/{request_id}/decisions", json={
            "kind": "reject", "reason": "not on Fridays",
            "alternatives": ["make test", "ask again on Monday"]}).status_code == 200
        page = alice.get(f"/requests/{request_id}").text
    decided = served.gate.store.decisions(request_id)[0].created_at
    facts = _facts(page)
    assert "Expires" not in facts and "countdown" not in facts
    assert '<dd id="settled">rejected by alice, <time datetime="' in facts
    assert f">{shown(decided)}</time></dd>" in facts
    assert "Approvals" not in page
    assert re.search(r'<p id="decision"><strong>Rejected</strong> by alice, <time [^>]+>'
                     + re.escape(shown(decided)) + r"</time>: not on Fridays</p>", page)
    alternatives = page.split('<ul id="alternatives">')[1].split("</ul>")[0]
    assert alternatives == "<li>make test</li><li>ask again on Monday</li>"


def test_an_approved_request_shows_who_approved_it_and_when(served: Served) -> None:
    request_id = propose_make(served, "t-approved")
    with served.client(served.alice) as alice:
        assert alice.post(f"/api/v1/requests/{request_id}/decisions",
                          json={"kind": "approve"}).status_code == 200
        page = alice.get(f"/requests/{request_id}").text
        inbox = alice.get("/inbox").text
    facts = _facts(page)
    assert "Expires" not in facts and '<dd id="settled">approved by alice, ' in facts
    assert 'id="approvals">Approvals: 1 of 1 — alice' in page
    # The inbox's "recently decided" says when, in UTC.
    recent = inbox.split("<h2>Recently decided</h2>")[1]
    assert UTC_TIME.search(recent)


def test_an_expired_request_says_so_without_a_countdown(served: Served) -> None:
    request_id = propose_make(served, "t-expired")
    request = served.gate.get_request(request_id)
    assert request.expires_at is not None
    served.clock.now = request.expires_at + 1
    served.gate.recover(run_approved=False)
    with served.client(served.alice) as alice:
        facts = _facts(alice.get(f"/requests/{request_id}").text)
    assert "countdown" not in facts
    assert '<dd id="settled">expired unanswered, <time datetime="' in facts
    assert f">{shown(request.expires_at)}</time>" in facts
