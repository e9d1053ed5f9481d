"""The schema as an ordered list of migrations; a migration's index + 1 is its version.

Each migration is applied in its own transaction and recorded in
``signoff_migrations``, so a half-applied migration never happens and
``migrate()`` is safe to run again (and from several processes at once).
Types are written once and mapped per dialect.
"""

from __future__ import annotations

from dataclasses import dataclass

from signoff.store import firstschema

_TYPES = {
    # WITHOUT ROWID: a table keyed by its TEXT primary key needs no second B-tree, so
    # each write touches one page fewer (every commit is a WAL flush of its pages).
    "sqlite": {"TEXT": "TEXT", "REAL": "REAL", "INT": "INTEGER", "BIGINT": "INTEGER",
               "SERIAL": "INTEGER", "WITHOUT_ROWID": " WITHOUT ROWID"},
    "postgres": {"TEXT": "TEXT", "REAL": "DOUBLE PRECISION", "INT": "INTEGER",
                 "BIGINT": "BIGINT", "SERIAL": "BIGINT", "WITHOUT_ROWID": ""},
}


@dataclass(frozen=True, slots=True)
class Migration:
    name: str
    statements: tuple[str, ...]
    sqlite_only: tuple[str, ...] = ()
    postgres_only: tuple[str, ...] = ()

    def for_dialect(self, dialect: str) -> list[str]:
        extra = self.sqlite_only if dialect == "sqlite" else self.postgres_only
        return [_typed(s, dialect) for s in (*self.statements, *extra)]


def _typed(statement: str, dialect: str) -> str:
    for abstract, concrete in _TYPES[dialect].items():
        statement = statement.replace(f"<{abstract}>", concrete)
    return statement


# signoff.store.postgres.channel_for(the schema of the table a trigger fires on), in SQL.
_CHANNEL = ("CASE WHEN TG_TABLE_SCHEMA = 'public' THEN 'signoff_requests' ELSE "
            "'signoff_requests_' || left(encode(sha256(convert_to(TG_TABLE_SCHEMA, 'UTF8')), "
            "'hex'), 16) END")

# How a decision settled a request ``{r}``, from its status and its decisions.
_DECIDED = ("CASE {r}.status WHEN 'rejected' THEN 'reject' WHEN 'responded' THEN 'respond' "
            "ELSE CASE WHEN EXISTS (SELECT 1 FROM decisions e WHERE e.request_id = {r}.id "
            "AND e.kind = 'edit') THEN 'edit' ELSE 'approve' END END")

MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        name="approval kernel",
        statements=firstschema.TABLES,
        sqlite_only=firstschema.SQLITE_ONLY,
        postgres_only=firstschema.POSTGRES_ONLY,
    ),
    Migration(
        name="fencing tokens are audit indexes",
        # A claim's fencing token is now its audit event's index (signoff.kernel.lifecycle.claim).
        statements=("DROP TABLE counters",),
    ),
    Migration(
        name="the audit head follows each event by trigger",
        # The head was written by one more statement per transaction from Python (a round
        # trip on PostgreSQL); a trigger writes it with each event, inside the database.
        statements=(),
        sqlite_only=(
            """CREATE TRIGGER audit_head_follows AFTER INSERT ON audit
               BEGIN UPDATE audit_head SET idx = NEW.idx, hash = NEW.hash WHERE id = 1; END""",
        ),
        postgres_only=(
            """CREATE FUNCTION signoff_audit_head() RETURNS trigger
               LANGUAGE plpgsql AS $$
               BEGIN UPDATE audit_head SET idx = NEW.idx, hash = NEW.hash WHERE id = 1;
               RETURN NULL; END $$""",
            """CREATE TRIGGER audit_head_follows AFTER INSERT ON audit
               FOR EACH ROW EXECUTE FUNCTION signoff_audit_head()""",
        ),
    ),
    Migration(
        name="PostgreSQL wake-ups are sent by triggers",
        # Every request event is audited with its request id, and every write to thread
        # memory lands in one of three tables: triggers send the NOTIFY that the store sent
        # from Python before (one round trip per transaction less), and no code path can
        # forget one.
        statements=(),
        postgres_only=(
            f"""CREATE OR REPLACE FUNCTION signoff_audit_head() RETURNS trigger
               LANGUAGE plpgsql AS $$
               BEGIN UPDATE audit_head SET idx = NEW.idx, hash = NEW.hash WHERE id = 1;
               IF NEW.request_id IS NOT NULL THEN
                 PERFORM pg_notify({_CHANNEL}, NEW.request_id);
               END IF;
               RETURN NULL; END $$""",
            f"""CREATE FUNCTION signoff_memory_changed() RETURNS trigger
               LANGUAGE plpgsql AS $$
               BEGIN PERFORM pg_notify({_CHANNEL}, ':memory');
               RETURN NULL; END $$""",
            *(f"""CREATE TRIGGER {table}_notify AFTER INSERT OR UPDATE OR DELETE ON {table}
               FOR EACH STATEMENT EXECUTE FUNCTION signoff_memory_changed()"""
              for table in ("threads", "rejections", "grants")),
        ),
    ),
    Migration(
        name="a thread's mode remembers who set it",
        # A mode raised by a thread's own principal does not count for that principal's
        # calls (signoff.kernel.ownership): the review of a call is never chosen by its asker.
        statements=("ALTER TABLE threads ADD COLUMN set_by <TEXT>",),
    ),
    Migration(
        name="user lifecycle, login links and sessions",
        # A token may expire and be rotated; a removed user stays as a tombstone (decisions
        # and audit events name users). A login link is used once; a session is what it is
        # exchanged for — the cookie holds the session's secret, never the user's token.
        statements=(
            "ALTER TABLE users ADD COLUMN token_expires_at <REAL>",
            "ALTER TABLE users ADD COLUMN token_issued_at <REAL>",
            "ALTER TABLE users ADD COLUMN removed_at <REAL>",
            """CREATE TABLE login_links (
                code_hash <TEXT> PRIMARY KEY,
                user_name <TEXT> NOT NULL,
                created_at <REAL> NOT NULL,
                expires_at <REAL> NOT NULL,
                used_at <REAL>,
                created_by <TEXT>
            )""",
            """CREATE TABLE sessions (
                id <TEXT> PRIMARY KEY,
                secret_hash <TEXT> NOT NULL UNIQUE,
                user_name <TEXT> NOT NULL,
                created_at <REAL> NOT NULL,
                last_seen <REAL> NOT NULL,
                expires_at <REAL> NOT NULL,
                idle_timeout <REAL> NOT NULL,
                via <TEXT> NOT NULL
            )""",
            "CREATE INDEX sessions_user ON sessions (user_name)",
        ),
    ),
    Migration(
        name="reviews are kept, and child waits name their worker",
        # The auto reviewer is asked once per call: its answer is kept (with the request it
        # escalated to, or on its own for a call it approved) and recalled on a resume. A
        # child's request names the worker waiting on it, so a restart can withdraw it.
        statements=(
            "ALTER TABLE requests ADD COLUMN review <TEXT>",
            "ALTER TABLE requests ADD COLUMN waiter <TEXT>",
            """CREATE TABLE reviews (
                thread_id <TEXT> NOT NULL,
                call_id <TEXT> NOT NULL,
                args_hash <TEXT> NOT NULL,
                record <TEXT> NOT NULL,
                created_at <REAL> NOT NULL,
                PRIMARY KEY (thread_id, call_id)
            )<WITHOUT_ROWID>""",
        ),
    ),
    Migration(
        name="dual control",
        # A request may need approvals from several roles at once (signoff.kernel.quorum).
        statements=("ALTER TABLE requests ADD COLUMN requires <TEXT> NOT NULL DEFAULT '[]'",),
    ),
    Migration(
        name="a mode chosen while a run waits",
        # The run that was waiting on the thread when its mode was set: that run takes the
        # new mode when it resumes; any other keeps the mode it started with.
        statements=("ALTER TABLE threads ADD COLUMN waiting_run <TEXT>",),
    ),
    Migration(
        name="write evidence",
        # What a proposed write changes, per file (signoff.kernel.write_evidence): a unified diff
        # against the file at proposal time, or a description; a JSON list.
        statements=("ALTER TABLE requests ADD COLUMN changes <TEXT> NOT NULL DEFAULT '[]'",),
    ),
    Migration(
        name="notifications",
        # The audit log drives notifications (signoff.notify): a cursor per channel says how
        # far events were fanned out to it; a delivery per (channel, event) is retried until
        # it lands or goes dead; webhook endpoints may also be registered by admins (API).
        statements=(
            """CREATE TABLE notify_cursor (
                name <TEXT> PRIMARY KEY,
                idx <BIGINT> NOT NULL
            )""",
            """CREATE TABLE deliveries (
                id <TEXT> PRIMARY KEY,
                channel <TEXT> NOT NULL,
                event_index <BIGINT> NOT NULL,
                event_type <TEXT> NOT NULL,
                request_key <TEXT> NOT NULL,
                payload <TEXT> NOT NULL,
                status <TEXT> NOT NULL,
                attempts <INT> NOT NULL,
                next_at <REAL> NOT NULL,
                lease_until <REAL>,
                lease_owner <TEXT>,
                event_at <REAL> NOT NULL,
                created_at <REAL> NOT NULL,
                delivered_at <REAL>,
                last_status <INT>,
                last_error <TEXT>,
                UNIQUE (channel, event_index)
            )""",
            "CREATE INDEX deliveries_due ON deliveries (status, next_at)",
            "CREATE INDEX deliveries_order ON deliveries (channel, request_key, event_index)",
            """CREATE TABLE webhook_endpoints (
                name <TEXT> PRIMARY KEY,
                url <TEXT> NOT NULL,
                secret <TEXT> NOT NULL,
                filters <TEXT> NOT NULL,
                created_at <REAL> NOT NULL,
                created_by <TEXT>
            )""",
        ),
    ),
    Migration(
        name="slack",
        # Where each request's Slack message is (to update it with the outcome), and the
        # interaction signatures already used (a replayed callback is refused).
        statements=(
            """CREATE TABLE slack_messages (
                request_id <TEXT> PRIMARY KEY,
                channel <TEXT> NOT NULL,
                ts <TEXT> NOT NULL,
                created_at <REAL> NOT NULL
            )""",
            """CREATE TABLE slack_seen (
                signature <TEXT> PRIMARY KEY,
                seen_at <REAL> NOT NULL
            )""",
        ),
    ),
    Migration(
        name="reminders, escalations and expiry on timers",
        # Timers the notifier fires once, across every server (signoff.notify.timers).
        statements=(
            """CREATE TABLE notify_timers (
                request_id <TEXT> NOT NULL,
                kind <TEXT> NOT NULL,
                due_at <REAL> NOT NULL,
                rule <INT> NOT NULL,
                done_at <REAL>,
                PRIMARY KEY (request_id, kind)
            )""",
            "CREATE INDEX notify_timers_due ON notify_timers (done_at, due_at)",
        ),
    ),
    Migration(
        name="PostgreSQL seals the audit after commit",
        # A transaction appends its events to audit_pending without waiting on any other
        # (no head row to lock); the sealer chains committed events into audit, in (txid,
        # seq) order, below the oldest running transaction (signoff.store.sealer,
        # docs/kernel.md "Sealing"). The statement trigger moves the head and sends the
        # wake-ups once per seal, not once per event and commit.
        statements=(),
        postgres_only=(
            """CREATE TABLE audit_pending (
                seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                txid xid8 NOT NULL DEFAULT pg_current_xact_id(),
                at_us BIGINT NOT NULL,
                kind TEXT NOT NULL,
                request_id TEXT,
                actor TEXT,
                data TEXT NOT NULL
            )""",
            "CREATE INDEX audit_pending_order ON audit_pending (txid, seq)",
            # Sequence numbers (fencing tokens) go on above every index issued before.
            """SELECT setval(pg_get_serial_sequence('audit_pending', 'seq'),
                      (SELECT idx FROM audit_head WHERE id = 1) + 1, false)""",
            "DROP TRIGGER audit_head_follows ON audit",
            f"""CREATE OR REPLACE FUNCTION signoff_audit_sealed() RETURNS trigger
               LANGUAGE plpgsql AS $$
               DECLARE r TEXT;
               BEGIN
                 UPDATE audit_head SET (idx, hash) =
                   (SELECT idx, hash FROM sealed ORDER BY idx DESC LIMIT 1)
                   WHERE id = 1 AND EXISTS (SELECT 1 FROM sealed);
                 FOR r IN SELECT DISTINCT request_id FROM sealed
                          WHERE request_id IS NOT NULL LOOP
                   PERFORM pg_notify({_CHANNEL}, r);
                 END LOOP;
                 RETURN NULL;
               END $$""",
            """CREATE TRIGGER audit_head_follows AFTER INSERT ON audit
               REFERENCING NEW TABLE AS sealed
               FOR EACH STATEMENT EXECUTE FUNCTION signoff_audit_sealed()""",
            "REVOKE UPDATE, TRUNCATE ON audit_pending FROM PUBLIC",
        ),
    ),
    Migration(
        name="keyset pages of requests",
        # Lists are newest first, a page after the last key (signoff.store.pages): the
        # unfiltered list reads this index backwards and stops at the page's end.
        statements=("CREATE INDEX requests_created ON requests (created_at, id)",),
    ),
    Migration(
        name="retention checkpoints",
        # ``signoff db purge`` removes a prefix of the chain; the checkpoint it records first
        # (the last removed event's index and hash) is where verification starts from
        # (signoff.store.retention). The audit refuses every DELETE but of events at or
        # below the newest checkpoint; checkpoints themselves are append-only.
        statements=(
            """CREATE TABLE audit_checkpoints (
                idx <BIGINT> PRIMARY KEY,
                hash <TEXT> NOT NULL,
                at_us <BIGINT> NOT NULL,
                before_us <BIGINT> NOT NULL,
                created_at <REAL> NOT NULL,
                actor <TEXT>
            )""",
        ),
        sqlite_only=(
            "DROP TRIGGER audit_no_delete",
            """CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
               WHEN OLD.idx > (SELECT COALESCE(MAX(idx), 0) FROM audit_checkpoints)
               BEGIN SELECT RAISE(ABORT, 'audit is append-only'); END""",
            """CREATE TRIGGER audit_checkpoints_no_update BEFORE UPDATE ON audit_checkpoints
               BEGIN SELECT RAISE(ABORT, 'audit checkpoints are append-only'); END""",
            """CREATE TRIGGER audit_checkpoints_no_delete BEFORE DELETE ON audit_checkpoints
               BEGIN SELECT RAISE(ABORT, 'audit checkpoints are append-only'); END""",
        ),
        postgres_only=(
            # The checkpoint table is named by the trigger's own schema, never by whatever
            # search_path the deleting session has.
            """CREATE OR REPLACE FUNCTION signoff_audit_append_only() RETURNS trigger
               LANGUAGE plpgsql AS $$
               DECLARE anchor BIGINT;
               BEGIN
                 IF TG_OP = 'DELETE' AND TG_TABLE_NAME = 'audit' THEN
                   EXECUTE format('SELECT COALESCE(MAX(idx), 0) FROM %I.audit_checkpoints',
                                  TG_TABLE_SCHEMA) INTO anchor;
                   IF OLD.idx <= anchor THEN RETURN OLD; END IF;
                 END IF;
                 RAISE EXCEPTION '% is append-only', TG_TABLE_NAME;
               END $$""",
            """CREATE TRIGGER audit_checkpoints_no_change
               BEFORE UPDATE OR DELETE ON audit_checkpoints
               FOR EACH ROW EXECUTE FUNCTION signoff_audit_append_only()""",
            """CREATE TRIGGER audit_checkpoints_no_truncate BEFORE TRUNCATE ON audit_checkpoints
               FOR EACH STATEMENT EXECUTE FUNCTION signoff_audit_append_only()""",
            "REVOKE UPDATE, DELETE, TRUNCATE ON audit_checkpoints FROM PUBLIC",
        ),
    ),
    Migration(
        name="a compare-and-set that must hold, checked inside PostgreSQL",
        # A transaction sends the writes nobody waits on with its next statement or its
        # COMMIT, in one round trip (signoff.store.pgbatch). A compare-and-set on a row the
        # transaction holds travels so too: this raises, and rolls the whole transaction
        # back, if it ever matched no row.
        statements=(),
        postgres_only=(
            """CREATE OR REPLACE FUNCTION signoff_expect_one(changed BIGINT, what TEXT)
               RETURNS BOOLEAN LANGUAGE plpgsql AS $$
               BEGIN
                 IF changed <> 1 THEN
                   RAISE EXCEPTION USING ERRCODE = 'SO409', MESSAGE = what;
                 END IF;
                 RETURN TRUE;
               END $$""",
        ),
    ),
    Migration(
        name="account changes heard by every server",
        # A server answers a token it checked a moment ago from memory
        # (signoff.kernel.accounts.remembered_identity). Every write to ``users`` — a user
        # disabled, removed, given other roles or a new token, by any server, the CLI or
        # plain SQL — tells every listening server at commit, which forgets its tokens.
        statements=(),
        postgres_only=(
            f"""CREATE FUNCTION signoff_accounts_changed() RETURNS trigger
               LANGUAGE plpgsql AS $$
               BEGIN PERFORM pg_notify({_CHANNEL}, ':accounts');
               RETURN NULL; END $$""",
            """CREATE TRIGGER users_notify AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
               ON users FOR EACH STATEMENT EXECUTE FUNCTION signoff_accounts_changed()""",
        ),
    ),
    Migration(
        name="approvals bound to what was shown",
        # A thread grant made by "approve for this thread" covers the exact canonical
        # arguments it was given for (``args_hash``), not patterns that admit an argument
        # added later. An MCP tool's definition (description, input schema, annotations)
        # is hashed into its requests and grants: a tool that changes mid-session is asked
        # anew, and the inbox shows the change.
        statements=(
            "ALTER TABLE grants ADD COLUMN args_hash <TEXT>",
            "ALTER TABLE grants ADD COLUMN definition_hash <TEXT>",
            "ALTER TABLE requests ADD COLUMN definition_hash <TEXT>",
        ),
    ),
    Migration(
        name="requests by the agent's call id",
        # ``GET /api/v1/calls/{id}`` takes the call id the agent proposed with as well as the
        # request id; the unique (thread_id, call_id) index serves no lookup without the thread.
        statements=("CREATE INDEX requests_call_id ON requests (call_id)",),
    ),
    Migration(
        name="signing keys",
        # The public halves of the keys receipts and audit checkpoints are signed with
        # (signoff.keys); every server publishes its own, so the JWKS holds them all.
        statements=(
            """CREATE TABLE signing_keys (
                kid <TEXT> PRIMARY KEY,
                jwk <TEXT> NOT NULL,
                created_at <REAL> NOT NULL,
                retired_at <REAL>
            )<WITHOUT_ROWID>""",
        ),
    ),
    Migration(
        name="passkeys",
        # Approvers' WebAuthn credentials (signoff.kernel.passkeys), with the relying party
        # and origin each was made for (a removed one is kept, marked, for the history it
        # signed); a request whose approvals need one, and each
        # decision's assertion with what its challenge was made of (re-verified at the claim).
        statements=(
            """CREATE TABLE passkeys (
                id <TEXT> PRIMARY KEY,
                user_name <TEXT> NOT NULL,
                public_key <TEXT> NOT NULL,
                sign_count <BIGINT> NOT NULL,
                name <TEXT> NOT NULL,
                rp_id <TEXT> NOT NULL,
                origin <TEXT> NOT NULL,
                created_at <REAL> NOT NULL,
                last_used_at <REAL>,
                removed_at <REAL>
            )""",
            "CREATE INDEX passkeys_user ON passkeys (user_name)",
            "ALTER TABLE requests ADD COLUMN passkey <INT> NOT NULL DEFAULT 0",
            "ALTER TABLE decisions ADD COLUMN assertion <TEXT>",
        ),
    ),
    Migration(
        name="signed audit checkpoints",
        # A server's signature on the audit head, made regularly (signoff.checkpoints,
        # signoff.store.checkpoints): a chain rewritten with every hash recomputed no longer
        # has the signed hashes. Append-only like the audit; kept past a retention purge.
        statements=(
            """CREATE TABLE audit_signatures (
                idx <BIGINT> NOT NULL,
                kid <TEXT> NOT NULL,
                hash <TEXT> NOT NULL,
                at_us <BIGINT> NOT NULL,
                signature <TEXT> NOT NULL,
                PRIMARY KEY (idx, kid)
            )<WITHOUT_ROWID>""",
        ),
        sqlite_only=(
            """CREATE TRIGGER audit_signatures_no_update BEFORE UPDATE ON audit_signatures
               BEGIN SELECT RAISE(ABORT, 'audit signatures are append-only'); END""",
            """CREATE TRIGGER audit_signatures_no_delete BEFORE DELETE ON audit_signatures
               BEGIN SELECT RAISE(ABORT, 'audit signatures are append-only'); END""",
        ),
        postgres_only=(
            """CREATE TRIGGER audit_signatures_no_change
               BEFORE UPDATE OR DELETE ON audit_signatures
               FOR EACH ROW EXECUTE FUNCTION signoff_audit_append_only()""",
            """CREATE TRIGGER audit_signatures_no_truncate BEFORE TRUNCATE ON audit_signatures
               FOR EACH STATEMENT EXECUTE FUNCTION signoff_audit_append_only()""",
            "REVOKE UPDATE, DELETE, TRUNCATE ON audit_signatures FROM PUBLIC",
        ),
    ),
    Migration(
        name="receipts",
        # The signed receipt of each approval (signoff.receipts), written with the move to
        # ``approved``; served to the asker, the approvers and the claim.
        statements=(
            """CREATE TABLE receipts (
                request_id <TEXT> PRIMARY KEY,
                token <TEXT> NOT NULL,
                kid <TEXT> NOT NULL,
                created_at <REAL> NOT NULL
            )<WITHOUT_ROWID>""",
        ),
    ),
    Migration(
        name="insights",
        # ``signoff insights`` aggregates the history in SQL (signoff.store.insights) over
        # one covering index, without reading any row's JSON: the rules that made each ask
        # (``asked_by``, written with the row; computed here for the rows before), and when
        # and how a decision settled it (``decided_at``, ``decided``: stamped by a trigger
        # as the row leaves pending for approved, rejected or responded). The rules verdict
        # events name are indexed in the events without a request (allowed, denied, blocked).
        statements=(
            "ALTER TABLE requests ADD COLUMN asked_by <TEXT>",
            "ALTER TABLE requests ADD COLUMN decided_at <REAL>",
            "ALTER TABLE requests ADD COLUMN decided <TEXT>",
            f"UPDATE requests SET decided_at = (SELECT MAX(d.created_at) FROM decisions d "
            f"WHERE d.request_id = requests.id), decided = {_DECIDED.format(r='requests')} "
            f"WHERE status NOT IN ('pending', 'expired', 'cancelled') "
            f"AND EXISTS (SELECT 1 FROM decisions d WHERE d.request_id = requests.id)",
        ),
        sqlite_only=(
            """UPDATE requests SET asked_by = COALESCE(
                 (SELECT group_concat(rule, ' ') FROM (
                    SELECT DISTINCT value ->> 'rule' AS rule FROM json_each(requests.reasons)
                    WHERE value ->> 'effect' = 'ask' AND value ->> 'rule' IS NOT NULL
                    ORDER BY rule)),
                 '(' || COALESCE(reasons ->> '$[#-1].step', 'none') || ')')""",
            f"""CREATE TRIGGER requests_decided AFTER UPDATE OF status ON requests
               WHEN OLD.status = 'pending' AND NEW.status IN ('approved', 'rejected', 'responded')
               BEGIN UPDATE requests SET decided_at = NEW.updated_at,
                 decided = {_DECIDED.format(r='NEW')} WHERE id = NEW.id; END""",
            # Each figure's GROUP BY walks an index in its own order: SQLite aggregates
            # without sorting (it has no hash aggregation); the window is filtered inside.
            "CREATE INDEX requests_insights ON requests (tool, asked_by, status, decided, "
            "CAST(created_at / 86400 AS INTEGER), created_at)",
            "CREATE INDEX requests_repeats ON requests (tool, args_hash, created_at)",
            "CREATE INDEX requests_thread_asks ON requests (thread_id, created_at)",
            "CREATE INDEX requests_waits ON requests (risk, decided_at - created_at, created_at, "
            "decided_at) WHERE decided_at IS NOT NULL",
            "CREATE INDEX audit_verdict_rules ON audit (kind, (data ->> '$.rules'), at_us) "
            "WHERE request_id IS NULL",
        ),
        postgres_only=(
            # PostgreSQL aggregates by hashing: one index serves the window.
            "CREATE INDEX requests_insights ON requests (created_at, tool, status, asked_by, "
            "decided)",
            """UPDATE requests SET asked_by = COALESCE(
                 (SELECT string_agg(rule, ' ' ORDER BY rule COLLATE "C") FROM (
                    SELECT DISTINCT e ->> 'rule' AS rule
                    FROM jsonb_array_elements(requests.reasons::jsonb) e
                    WHERE e ->> 'effect' = 'ask' AND e ->> 'rule' IS NOT NULL) listed),
                 '(' || COALESCE(requests.reasons::jsonb -> -1 ->> 'step', 'none') || ')')""",
            # The decisions table is named by the trigger's own schema, never by whatever
            # search_path the writing session has.
            """CREATE FUNCTION signoff_request_decided() RETURNS trigger
               LANGUAGE plpgsql AS $$
               DECLARE edited BOOLEAN;
               BEGIN
                 EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I.decisions WHERE request_id '
                                '= $1 AND kind = ''edit'')', TG_TABLE_SCHEMA)
                   INTO edited USING NEW.id;
                 NEW.decided_at := NEW.updated_at;
                 NEW.decided := CASE NEW.status WHEN 'rejected' THEN 'reject'
                   WHEN 'responded' THEN 'respond'
                   ELSE CASE WHEN edited THEN 'edit' ELSE 'approve' END END;
                 RETURN NEW;
               END $$""",
            """CREATE TRIGGER requests_decided BEFORE UPDATE OF status ON requests
               FOR EACH ROW WHEN (OLD.status = 'pending'
                 AND NEW.status IN ('approved', 'rejected', 'responded'))
               EXECUTE FUNCTION signoff_request_decided()""",
            "CREATE INDEX audit_verdict_rules ON audit (kind, ((data::jsonb) ->> 'rules'), at_us) "
            "WHERE request_id IS NULL",
        ),
    ),
)
