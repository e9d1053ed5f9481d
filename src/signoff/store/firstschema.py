"""The first schema, migration 1 ("approval kernel"): the tables as signoff first made them.

Kept apart from ``signoff.store.schema`` for its length only: a database made by it must
upgrade to the last schema, so it never changes. Statements use ``schema``'s abstract
types (``<TEXT>``, ``<REAL>``, …).
"""

TABLES: tuple[str, ...] = (
    """CREATE TABLE requests (
                id <TEXT> PRIMARY KEY,
                call_id <TEXT> NOT NULL,
                tool <TEXT> NOT NULL,
                args <TEXT> NOT NULL,
                args_hash <TEXT> NOT NULL,
                status <TEXT> NOT NULL,
                risk <TEXT> NOT NULL,
                summary <TEXT> NOT NULL,
                policy_version <TEXT> NOT NULL,
                created_at <REAL> NOT NULL,
                updated_at <REAL> NOT NULL,
                thread_id <TEXT>,
                run_id <TEXT>,
                session_id <TEXT>,
                parent_call <TEXT>,
                principal <TEXT>,
                agent <TEXT>,
                description <TEXT>,
                expected_effect <TEXT>,
                evidence <TEXT> NOT NULL,
                resource_versions <TEXT> NOT NULL,
                roles <TEXT> NOT NULL,
                approvals_required <INT> NOT NULL,
                expires_at <REAL>,
                mandatory <INT> NOT NULL,
                decision_id <TEXT>,
                reasons <TEXT> NOT NULL,
                review_mode <TEXT> NOT NULL,
                approved_args <TEXT>,
                approved_hash <TEXT>,
                outcome_code <TEXT>,
                outcome_reason <TEXT>,
                alternatives <TEXT> NOT NULL,
                response <TEXT>,
                result <TEXT>,
                error <TEXT>,
                fencing_token <BIGINT>,
                lease_until <REAL>,
                executor <TEXT>,
                version <INT> NOT NULL
            )<WITHOUT_ROWID>""",
    "CREATE INDEX requests_status ON requests (status, created_at)",
    "CREATE UNIQUE INDEX requests_call ON requests (thread_id, call_id)",
    """CREATE TABLE decisions (
                id <TEXT> PRIMARY KEY,
                request_id <TEXT> NOT NULL REFERENCES requests (id),
                kind <TEXT> NOT NULL,
                approver <TEXT> NOT NULL,
                created_at <REAL> NOT NULL,
                args_hash <TEXT>,
                reason <TEXT>,
                alternatives <TEXT> NOT NULL,
                args <TEXT>,
                message <TEXT>,
                scope <TEXT> NOT NULL,
                UNIQUE (request_id, approver, args_hash)
            )<WITHOUT_ROWID>""",
    """CREATE TABLE audit (
                idx <BIGINT> PRIMARY KEY,
                at_us <BIGINT> NOT NULL,
                kind <TEXT> NOT NULL,
                request_id <TEXT>,
                actor <TEXT>,
                data <TEXT> NOT NULL,
                prev_hash <TEXT> NOT NULL,
                hash <TEXT> NOT NULL
            )""",
    "CREATE INDEX audit_request ON audit (request_id)",
    """CREATE TABLE audit_head (
                id <INT> PRIMARY KEY,
                idx <BIGINT> NOT NULL,
                hash <TEXT> NOT NULL
            )""",
    """CREATE TABLE users (
                name <TEXT> PRIMARY KEY,
                kind <TEXT> NOT NULL,
                roles <TEXT> NOT NULL,
                token_hash <TEXT> NOT NULL UNIQUE,
                disabled <INT> NOT NULL,
                created_at <REAL> NOT NULL
            )""",
    """CREATE TABLE grants (
                id <TEXT> PRIMARY KEY,
                scope <TEXT> NOT NULL,
                tool <TEXT> NOT NULL,
                args <TEXT> NOT NULL,
                thread_id <TEXT>,
                session_id <TEXT>,
                expires_at <REAL>,
                max_uses <INT>,
                uses <INT> NOT NULL,
                created_by <TEXT>,
                created_at <REAL> NOT NULL,
                request_id <TEXT>
            )""",
    "CREATE INDEX grants_thread ON grants (thread_id, tool)",
    "CREATE INDEX grants_session ON grants (session_id, tool)",
    """CREATE TABLE rejections (
                thread_id <TEXT> NOT NULL,
                tool <TEXT> NOT NULL,
                args_hash <TEXT> NOT NULL,
                reason <TEXT> NOT NULL,
                alternatives <TEXT> NOT NULL,
                request_id <TEXT>,
                created_at <REAL> NOT NULL,
                PRIMARY KEY (thread_id, tool, args_hash)
            )""",
    """CREATE TABLE idempotency (
                key <TEXT> PRIMARY KEY,
                request_id <TEXT> NOT NULL,
                body_hash <TEXT> NOT NULL,
                response <TEXT> NOT NULL,
                created_at <REAL> NOT NULL
            )""",
    """CREATE TABLE threads (
                id <TEXT> PRIMARY KEY,
                review_mode <TEXT> NOT NULL,
                updated_at <REAL> NOT NULL
            )""",
    """CREATE TABLE counters (
                name <TEXT> PRIMARY KEY,
                value <BIGINT> NOT NULL
            )""",
    "INSERT INTO counters (name, value) VALUES ('fencing', 0)",
    "INSERT INTO audit_head (id, idx, hash) VALUES (1, 0, '"
    "sha256:0000000000000000000000000000000000000000000000000000000000000000')",
)
SQLITE_ONLY: tuple[str, ...] = (
    """CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
               BEGIN SELECT RAISE(ABORT, 'audit is append-only'); END""",
    """CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
               BEGIN SELECT RAISE(ABORT, 'audit is append-only'); END""",
)
POSTGRES_ONLY: tuple[str, ...] = (
    """CREATE FUNCTION signoff_audit_append_only() RETURNS trigger
               LANGUAGE plpgsql AS $$
               BEGIN RAISE EXCEPTION 'audit is append-only'; END $$""",
    """CREATE TRIGGER audit_no_change BEFORE UPDATE OR DELETE ON audit
               FOR EACH ROW EXECUTE FUNCTION signoff_audit_append_only()""",
    """CREATE TRIGGER audit_no_truncate BEFORE TRUNCATE ON audit
               FOR EACH STATEMENT EXECUTE FUNCTION signoff_audit_append_only()""",
    "REVOKE UPDATE, DELETE, TRUNCATE ON audit FROM PUBLIC",
)
