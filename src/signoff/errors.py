"""One small hierarchy of errors, each with a stable ``code``.

Codes are part of the contract: the CLI prints them, the HTTP API will put them
in ``application/problem+json`` bodies, and tests assert them. Messages may be
reworded; codes may not.

    SignoffError                      code varies; base of everything below
    ├── InvalidArguments              a tool call's arguments break the limits
    ├── InvalidInput           422    a text field breaks the input contract (signoff.inputs)
    ├── InvalidCall                   a tool call that can never be bound to a decision
    ├── PathError                     a path that cannot be judged or opened safely
    ├── ConfigurationError            a caller or operator asked for something undefined
    │   └── PolicyError               signoff.toml does not load; names file, rule, field
    ├── ShellError                    reserved for shell analysis failures surfaced to callers
    ├── Unauthenticated        401    no identity, or a token nobody holds
    ├── Forbidden              403    role_missing, self_approval, agent_cannot_decide
    │   └── PasskeyRequired           passkey_required: only an approval with a passkey counts
    ├── NotFound               404    no such request, user or tool; receipt_unavailable
    ├── Conflict               409    already_decided, already_voted, idempotency_conflict,
    │   │                             call_id_reused, thread_waiting, illegal_transition
    │   └── ArgsChanged               args_changed: decided on a view of other arguments
    ├── Expired                410    the request expired (judged by the server's clock)
    ├── InvalidDecision        422    invalid_edit, edit_denied, missing_reason
    ├── SignatureInvalid       422    a signature that does not hold: malformed, unknown_key,
    │                                 signature_invalid, expired, key_invalid, wrong_issuer,
    │                                 passkey_invalid, passkey_unknown, passkey_not_yours,
    │                                 passkey_unverified, passkey_replayed
    │                                 wrong_request, wrong_args (a receipt: signoff.receipts)
    ├── StoreError             503    the database is unreachable, busy, full or read-only:
    │                                 retry after ``retry_after`` seconds
    └── ListenError                   a server cannot listen where it was asked: port_in_use,
                                      bad_host, port_denied, listen_failed

Control-flow outcomes (``deny``, ``ask``, ``blocked``) are *verdicts*, not
errors: they are returned, never raised.
"""

from __future__ import annotations

from typing import ClassVar


class SignoffError(Exception):
    """Base class. ``code`` is stable and machine-readable; ``http_status`` maps it to HTTP."""

    code: str = "signoff_error"
    http_status: int = 500

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else self.code

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


class InvalidArguments(SignoffError):
    """Arguments that do not parse as one JSON object within the limits.

    Codes: ``invalid_json``, ``not_an_object``, ``duplicate_key``,
    ``non_finite_number``, ``lone_surrogate``, ``too_deep``, ``too_large``,
    ``integer_out_of_range``, ``unsupported_type``, ``non_string_key``.
    """

    code = "invalid_arguments"
    http_status = 422


class BodyTooLarge(SignoffError):
    """A request body over the server's limit, refused before the rest is read."""

    code = "too_large"
    http_status = 413


class InvalidInput(SignoffError):
    """A text field that breaks the input contract (``signoff.inputs``); ``field`` names it.

    Codes: ``nul_character``, ``lone_surrogate``, ``too_long``, ``invalid_identifier``,
    ``invalid_tool_name``, ``invalid_index``, ``unknown_interaction_mode`` (a run context
    claiming a mode that does not exist), ``invalid_input`` (a value the database
    refused to store, or of the wrong type).
    """

    code = "invalid_input"
    http_status = 422

    def __init__(self, message: str, *, code: str | None = None, field: str | None = None
                 ) -> None:
        super().__init__(message, code=code)
        self.field = field

    def to_dict(self) -> dict[str, str]:
        out = super().to_dict()
        if self.field:
            out["field"] = self.field
        return out


class InvalidCall(SignoffError):
    """A call whose id or name makes it impossible to bind a decision to it.

    Codes: ``missing_call_id``, ``duplicate_call_id``, ``invalid_tool_name``.
    """

    code = "invalid_call"
    http_status = 422


class PathError(SignoffError):
    """A path that is not a path (``invalid_path``, ``nul_byte``, ``empty_path``),
    loops (``symlink_loop``), or escapes the root when opened (``path_escape``)."""

    code = "invalid_path"
    http_status = 422


class ConfigurationError(SignoffError):
    """An explicit setting with no defined meaning, e.g. ``unknown_interaction_mode``.

    Never silently replaced by a default: an unknown interaction mode must not
    fall back to ``interactive``.
    """

    code = "configuration_error"
    http_status = 400


class PolicyError(ConfigurationError):
    """``signoff.toml`` failed to load. The message names the file, the rule and the field."""

    code = "policy_invalid"

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        rule: str | None = None,
        field: str | None = None,
        code: str | None = None,
    ) -> None:
        self.file = file
        self.rule = rule
        self.field = field
        where = []
        if file:
            where.append(file)
        if rule:
            where.append(rule)
        if field:
            where.append(f"field '{field}'")
        super().__init__(": ".join([*where, message]), code=code)


class ShellError(SignoffError):
    """A shell command that cannot be analysed (``shell_unparseable``, ``shell_too_large``)."""

    code = "shell_error"
    http_status = 422


class Unauthenticated(SignoffError):
    code = "unauthenticated"
    http_status = 401


class Forbidden(SignoffError):
    """An authenticated identity may not do this (``role_missing``, ``self_approval``,
    ``agent_cannot_decide``)."""

    code = "forbidden"
    http_status = 403


class PasskeyRequired(Forbidden):
    """An approval of a request that needs a passkey, from a surface that cannot give one
    (an API token without an assertion, the CLI, Slack, a LangChain resume, MCP
    elicitation): ``passkey_required``. ``url``: where it can be approved, when known."""

    code = "passkey_required"

    def __init__(self, message: str, *, url: str | None = None) -> None:
        super().__init__(message)
        self.url = url


class NotFound(SignoffError):
    """``not_found``; ``receipt_unavailable``: a request with no signed receipt (not
    approved, or approved by a server without a signing key)."""

    code = "not_found"
    http_status = 404


class Conflict(SignoffError):
    """The state moved on: ``already_decided`` (carries ``status``), ``already_voted``,
    ``idempotency_conflict``, ``call_id_reused``, ``thread_waiting``, ``illegal_transition``."""

    code = "conflict"
    http_status = 409

    def __init__(self, message: str, *, code: str | None = None, status: str | None = None) -> None:
        super().__init__(message, code=code)
        self.status = status


class ArgsChanged(Conflict):
    """``args_changed``: the decision was made on a view of other arguments than the ones
    that would run (an edit moved them). Carries what would run now, to show the approver."""

    def __init__(self, message: str, *, args_hash: str, args: str) -> None:
        super().__init__(message, code="args_changed", status="pending")
        self.args_hash = args_hash
        self.current_args = args  # canonical JSON text

    def to_dict(self) -> dict[str, str]:
        return {**super().to_dict(), "args_hash": self.args_hash, "args": self.current_args}


class Expired(SignoffError):
    code = "expired"
    http_status = 410


class InvalidDecision(SignoffError):
    """A decision that cannot apply: ``invalid_edit`` (schema), ``edit_denied`` (policy),
    ``missing_reason``."""

    code = "invalid_decision"
    http_status = 422


class SignatureInvalid(SignoffError):
    """A signed thing (a receipt, an audit checkpoint, a passkey assertion) that does not
    verify: ``malformed``, ``unknown_key`` (no published key by its id), ``signature_invalid``
    (the bytes signed are not these), ``expired``, ``key_invalid``, ``wrong_issuer``; for a
    passkey approval (``signoff.kernel.assertions``): ``passkey_invalid`` (not over this
    request, these arguments and this decision, or not signed by the key), ``passkey_unknown``
    (no such registered passkey), ``passkey_not_yours`` (another user's), ``passkey_unverified``
    (the authenticator did not verify the user), ``passkey_replayed`` (its sign count did
    not move on); for a receipt (``signoff.receipts``) also ``wrong_request`` and
    ``wrong_args`` (another request's, or other arguments')."""

    code = "signature_invalid"
    http_status = 422


class StoreError(SignoffError):
    """The database failed, not the request: ``store_unavailable`` (unreachable, or an I/O
    error), ``store_busy`` (no connection or lock within the time limit), ``store_full``
    (no space left), ``store_read_only``, ``schema_outdated``. Nothing was half-written;
    the same request may be sent again after ``retry_after`` seconds."""

    code = "store_unavailable"
    http_status = 503
    reported = False  # already logged by the store (an outage, said once when it began)
    RETRY_AFTER: ClassVar[dict[str, int]] = {
        "store_busy": 1, "store_unavailable": 5, "store_full": 30, "store_read_only": 30,
        "schema_outdated": 60}

    @property
    def retry_after(self) -> int:
        return self.RETRY_AFTER.get(self.code, 5)


class ListenError(SignoffError):
    """``signoff serve`` or ``mcp-proxy --listen`` cannot listen where it was asked:
    ``port_in_use`` (names the holder when it can be found), ``bad_host`` (not an address
    or a name that resolves, or not one of this machine's), ``port_denied`` (a privileged
    port), ``listen_failed`` (anything else the system refused). Said before anything is
    announced; the command exits 2."""

    code = "listen_failed"
    http_status = 500
