"""What a thread remembers and who may act: grants, rejections, users, accounts, login
links, sessions, idempotency keys and review modes."""

from __future__ import annotations

import pytest

from signoff.errors import Conflict
from signoff.identity import Identity, IdentityKind, Session, token_hash
from signoff.model import Grant, GrantScope, Rejection
from signoff.store.base import Store

from .harness import Base, Harness, make_request


class MemoryContract(Base):
    """Thread memory, users and accounts."""

    def test_grants_for_scopes_and_use_limits(self, store: Store) -> None:
        thread = Grant(id="g-thread", scope=GrantScope.THREAD, tool="execute",
                       args={"command": "ls -la"}, thread_id="t-1", session_id="s-1",
                       expires_at=1e12 + 0.5, max_uses=2, created_by="alice")
        once = Grant(id="g-once", scope=GrantScope.ONCE, tool="write_file", args={},
                     thread_id="t-1", max_uses=1)
        session = Grant(id="g-session", scope=GrantScope.SESSION, tool="execute",
                        args={"command": "re:^make( .*)?$"}, thread_id="t-9", session_id="s-1")
        other = Grant(id="g-other", scope=GrantScope.THREAD, tool="execute", thread_id="t-2")
        with store.transaction() as tx:
            for at, grant in enumerate((thread, once, session, other)):
                tx.insert_grant(grant, at=float(at), request_id="req_1")
        got = list(store.grants_for(thread_id="t-1", session_id="s-1", tool="execute"))
        assert got == [thread, once, session]
        assert list(store.grants_for(thread_id="t-1", session_id=None, tool="x")) == [thread, once]
        assert list(store.grants_for(thread_id=None, session_id="s-1", tool="x")) == [session]
        assert list(store.grants_for(thread_id="t-2", session_id="s-2", tool="x")) == [other]
        assert list(store.grants_for(thread_id=None, session_id=None, tool="x")) == []
        with store.transaction() as tx:
            assert tx.use_grant("g-thread")
            assert tx.use_grant("g-thread")
            assert not tx.use_grant("g-thread")  # max_uses = 2
            assert tx.use_grant("g-once")
            assert not tx.use_grant("g-once")
            assert not tx.use_grant("g-missing")
            for _ in range(5):
                assert tx.use_grant("g-session")  # unlimited
        uses = {g.id: g.uses for g in store.grants_for(thread_id="t-1", session_id="s-1", tool="x")}
        assert uses == {"g-thread": 2, "g-once": 1, "g-session": 5}

    def test_rejections_put_get_and_replace(self, store: Store) -> None:
        first = Rejection(thread_id="t", tool="execute", args_hash="sha256:1", reason="no",
                          alternatives=("ls", "pwd"), request_id="req_1")
        with store.transaction() as tx:
            tx.put_rejection(first, at=1.0)
            assert tx.rejection_for("t", "execute", "sha256:1") == first
        assert store.rejection_for("t", "execute", "sha256:1") == first
        assert store.rejection_for("t", "execute", "sha256:2") is None
        assert store.rejection_for("u", "execute", "sha256:1") is None
        assert store.rejection_for("t", "deploy", "sha256:1") is None
        second = Rejection(thread_id="t", tool="execute", args_hash="sha256:1", reason="still no")
        with store.transaction() as tx:
            tx.put_rejection(second, at=2.0)
        assert store.rejection_for("t", "execute", "sha256:1") == second

    def test_users(self, store: Store, refused: tuple[type[BaseException], ...],
                   harness: Harness) -> None:
        alice = Identity(name="alice", roles=("ops", "sre"))
        bot = Identity(name="bot", kind=IdentityKind.AGENT)
        with store.transaction() as tx:
            tx.insert_user(alice, token_hash=token_hash("so_alice"), at=1.0)
            tx.insert_user(bot, token_hash=token_hash("so_bot"), at=2.0)
        with store.transaction() as tx:
            assert tx.get_user("alice") == alice
            assert tx.get_user("bot") == bot
            assert tx.get_user("nobody") is None
            assert tx.user_by_token(token_hash("so_alice")) == alice
            assert tx.user_by_token(token_hash("so_wrong")) is None
            assert tx.user_by_token("so_alice") is None  # only the hash is a key
            assert tx.set_user("alice", roles=("ops",))
            assert tx.get_user("alice") == Identity(name="alice", roles=("ops",))
            assert tx.set_user("alice", disabled=True)
            got = tx.get_user("alice")
            assert got is not None and got.disabled and not got.may_decide
            assert tx.set_user("alice", roles=(), disabled=False)
            assert tx.get_user("alice") == Identity(name="alice")
            assert not tx.set_user("nobody", roles=("x",))
            assert not tx.set_user("nobody", disabled=True)
        with harness.raw(store) as conn:
            stored = conn.execute("SELECT token_hash FROM users ORDER BY name").fetchall()
        assert [r[0] for r in stored] == [token_hash("so_alice"), token_hash("so_bot")]
        with pytest.raises((Conflict, *refused)), store.transaction() as tx:
            tx.insert_user(Identity(name="alice"), token_hash="sha256:other", at=3.0)

    def test_accounts_login_links_and_sessions(self, store: Store) -> None:
        boss = Identity(name="boss", kind=IdentityKind.ADMIN)
        with store.transaction() as tx:
            tx.insert_user(boss, token_hash=token_hash("so_boss"), at=1.0)
            tx.insert_user(Identity(name="ann", roles=("ops",)), token_hash=token_hash("so_ann"),
                           at=2.0, expires_at=100.0)
        ann = store.account_by_token(token_hash("so_ann"))
        assert ann is not None and ann.token_expires_at == 100.0 and ann.token_issued_at == 2.0
        assert ann.status(99.0) == "active" and ann.status(100.0) == "token_expired"
        with store.transaction() as tx:
            assert tx.active_admins() == ["boss"]
            assert tx.set_token("ann", token_hash=token_hash("so_ann2"), at=5.0, expires_at=None)
            tx.insert_login_link("sha256:link", user="ann", at=10.0, expires_at=20.0,
                                 created_by="boss")
            tx.insert_login_link("sha256:late", user="ann", at=10.0, expires_at=11.0,
                                 created_by=None)
        assert store.account_by_token(token_hash("so_ann")) is None
        renewed = store.account_by_token(token_hash("so_ann2"))
        assert renewed is not None and renewed.token_issued_at == 5.0
        assert renewed.token_expires_at is None
        with store.transaction() as tx:
            assert tx.use_login_link("sha256:link", at=12.0) == ("ok", "ann")
            assert tx.use_login_link("sha256:link", at=13.0) == ("used", "ann")  # once
            assert tx.use_login_link("sha256:late", at=12.0) == ("expired", "ann")
            assert tx.use_login_link("sha256:none", at=12.0) == ("unknown", None)
        first = Session(id="ses_1", user="ann", created_at=12.0, last_seen=12.0, expires_at=50.0,
                        idle_timeout=10.0, via="link")
        second = Session(id="ses_2", user="ann", created_at=13.0, last_seen=13.0, expires_at=50.0,
                         idle_timeout=10.0, via="token")
        with store.transaction() as tx:
            tx.insert_session(first, secret_hash="sha256:s1")
            tx.insert_session(second, secret_hash="sha256:s2")
            tx.touch_session("ses_1", at=15.0)
            tx.touch_session("ses_1", at=14.0)  # never backwards
        found = store.session_by_secret("sha256:s1")
        assert found is not None and found[1].name == "ann"
        assert found[0] == Session(id="ses_1", user="ann", created_at=12.0, last_seen=15.0,
                                   expires_at=50.0, idle_timeout=10.0, via="link")
        assert store.session_by_secret("ses_1") is None  # the id is no secret
        assert [s.id for s in store.sessions_of("ann")] == ["ses_1", "ses_2"]
        with store.transaction() as tx:
            assert [s.id for s in tx.delete_sessions(secret_hash="sha256:s2")] == ["ses_2"]
            assert tx.delete_sessions(user="ann", session_id="ses_2") == []
            assert tx.mark_removed("ann", at=30.0, tombstone_hash="removed:x")
            assert not tx.mark_removed("ann", at=31.0, tombstone_hash="removed:y")
            assert [s.id for s in tx.delete_sessions(user="ann")] == ["ses_1"]
            gone = tx.account("ann")
            assert gone is not None and gone.removed_at == 30.0 and gone.status(31.0) == "removed"
            assert not tx.set_token("ann", token_hash="sha256:z", at=32.0, expires_at=None)
        assert store.account_by_token(token_hash("so_ann2")) is None
        assert [a.name for a in store.accounts()] == ["boss"]
        assert [a.name for a in store.accounts(removed=True)] == ["ann", "boss"]

    def test_idempotency_records(self, store: Store, refused: tuple[type[BaseException],
                                 ...]) -> None:
        with store.transaction() as tx:
            assert tx.idempotent_response("key-1") is None
            tx.put_idempotent_response("key-1", request_id="req_1", body_hash="sha256:b",
                                       response='{"decision_id": "dec_1"}', at=1.0)
        with store.transaction() as tx:
            assert tx.idempotent_response("key-1") == ("req_1", "sha256:b",
                                                       '{"decision_id": "dec_1"}')
            assert tx.idempotent_response("key-2") is None
        with pytest.raises((Conflict, *refused)), store.transaction() as tx:
            tx.put_idempotent_response("key-1", request_id="req_2", body_hash="x", response="{}",
                                       at=2.0)
        with store.transaction() as tx:
            assert tx.idempotent_response("key-1") == ("req_1", "sha256:b",
                                                       '{"decision_id": "dec_1"}')

    def test_thread_modes(self, store: Store) -> None:
        assert store.thread_mode("t") is None
        with store.transaction() as tx:
            tx.set_thread_mode("t", "auto", at=1.0)
            assert tx.thread_mode("t") == "auto"
        assert store.thread_mode("t") == "auto"
        with store.transaction() as tx:
            tx.set_thread_mode("t", "full", at=2.0)
            tx.set_thread_mode("u", "manual", at=2.0)
        assert store.thread_mode("t") == "full"
        assert store.thread_mode("u") == "manual"

    def test_who_set_a_mode_and_who_asked_on_a_thread(self, store: Store) -> None:
        with store.transaction() as tx:
            tx.set_thread_mode("t", "full", at=1.0, by="ann")
            tx.set_thread_mode("u", "auto", at=1.0)
            tx.insert_request(make_request(id="req_p1", call_id="c1", thread_id="t",
                                           principal="ann", agent=None))
            tx.insert_request(make_request(id="req_p2", call_id="c2", thread_id="t",
                                           principal="bot", agent="runner"))
            tx.insert_request(make_request(id="req_p3", call_id="c3", thread_id="t",
                                           principal="ann", agent="runner"))
            tx.insert_request(make_request(id="req_p4", call_id="c4", thread_id="v",
                                           principal="cy", agent=None))
            assert tx.thread_parties("t") == {"ann", "bot", "runner"}
        assert store.thread_parties("t") == {"ann", "bot", "runner"}
        assert store.thread_parties("none") == frozenset()
        memory = store.thread_memory("t", fresh=True)
        assert (memory.mode, memory.mode_by) == ("full", "ann")
        assert store.thread_memory("u", fresh=True).mode_by is None
