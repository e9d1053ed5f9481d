"""The ``signoff`` command.

Exit codes: 0 when the command did its job (``check`` produced a verdict,
whatever the verdict); 2 for bad input (a policy that does not load,
arguments that are not a JSON object, an unknown interaction mode), with the
error's stable code in the message (and in the JSON with ``--json``); 141 when
whoever read the output closed it early (``signoff check … | head``), quietly, as a
program ended by SIGPIPE would.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from signoff import __version__
from signoff.cli.common import DEFAULT_DB, close_opened
from signoff.errors import ConfigurationError, InvalidArguments, PolicyError, SignoffError
from signoff.store.faults import classify

if TYPE_CHECKING:
    from signoff.model import Verdict

# The commands' modules are imported when the parser that needs them is built, and what
# a command runs when it runs: a coding agent starts ``signoff hook`` once per tool call,
# and it imports only the hook's modules.

EXIT_OK = 0
EXIT_BAD_INPUT = 2
EXIT_BROKEN_PIPE = 141  # the reader of our output went away (128 + SIGPIPE)


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(given[0] if given and given[0] in _ALONE else None, given)
    args = parser.parse_args(given)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return EXIT_BAD_INPUT
    try:
        result: int = handler(args)
        sys.stdout.flush()  # here, where a closed pipe can still be answered quietly
    except SignoffError as exc:
        return _fail(exc, as_json=getattr(args, "json", False))
    except BrokenPipeError:
        # `signoff check … | head`: the reader has all it wanted. Exit as a program
        # killed by SIGPIPE would (128 + 13), with no traceback and no second error when
        # the interpreter flushes stdout on exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except Exception as exc:  # a database failure outside the stores' typing: typed here
        typed = classify(exc)
        if typed is None:
            raise
        return _fail(typed, as_json=getattr(args, "json", False))
    finally:
        close_opened()
    return result


# Commands whose parser is built alone when they are the one run: a coding agent starts
# ``signoff hook`` once per tool call, and the whole parser (50 subcommands, each help
# text looked up through gettext) costs more than the rest of the hook's start.
def _add_hook(commands: Any, given: Sequence[str]) -> None:
    from signoff.cli.hook import add_hook  # noqa: PLC0415

    add_hook(commands, given[1] if len(given) > 1 else None)


_ALONE: dict[str, Callable[[Any, Sequence[str]], None]] = {"hook": _add_hook}


def build_parser(only: str | None = None, argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The ``signoff`` command's parser; ``only``: just that command of ``_ALONE``, as
    much of it as ``argv`` (the command line it will parse) needs."""
    parser = argparse.ArgumentParser(
        prog="signoff",
        description="Keep a human hand on what AI agents do: decide allow / ask / deny for "
        "every tool call, and explain why.",
    )
    parser.add_argument("--version", action="version", version=f"signoff {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")
    if only is not None:
        _ALONE[only](commands, argv)
        return parser
    from signoff.cli.db import add_db  # noqa: PLC0415
    from signoff.cli.doctor import add_doctor  # noqa: PLC0415
    from signoff.cli.hook import add_hook  # noqa: PLC0415
    from signoff.cli.kernel import add_commands  # noqa: PLC0415
    from signoff.cli.keys import add_keys  # noqa: PLC0415
    from signoff.cli.mcp import add_mcp_proxy  # noqa: PLC0415
    from signoff.cli.receipts import add_receipts  # noqa: PLC0415
    from signoff.cli.server import add_serve  # noqa: PLC0415
    from signoff.cli.suggest import add_insights  # noqa: PLC0415
    from signoff.cli.users import add_users  # noqa: PLC0415
    from signoff.cli.webhooks import add_webhooks  # noqa: PLC0415
    from signoff.policy.starter import PRESETS  # noqa: PLC0415

    init = commands.add_parser(
        "init", help="write a commented starter signoff.toml",
        description="Write a commented starter policy. The workspace root defaults to the "
        "current directory.")
    init.add_argument("path", nargs="?", default="signoff.toml", help="where to write it")
    init.add_argument("--root", help="workspace root (default: the current directory)")
    init.add_argument("--create-root", action="store_true",
                      help="create the --root directory if it does not exist (without it, "
                      "a missing root is an error: root_missing)")
    init.add_argument("--force", action="store_true", help="overwrite an existing file")
    init.add_argument("--preset", choices=sorted(PRESETS), default="default",
                      help="the agent harness whose tools it declares: default (read_file, "
                      "write_file, execute), deepagents (create_deep_agent's tools, virtual "
                      "paths, task subagents), mcp-filesystem or mcp-git (the official MCP "
                      "servers' tools behind signoff mcp-proxy)")
    init.add_argument("--json", action="store_true", help="machine-readable output")
    init.set_defaults(handler=cmd_init)

    check = commands.add_parser(
        "check", help="explain the verdict for one tool call",
        description="Evaluate one tool call against a policy and explain the verdict: "
        "effect (allow, ask, deny, blocked), every rule that matched, risk and source.")
    check.add_argument("--policy", default="signoff.toml", help="policy file (signoff.toml)")
    check.add_argument("--tool", required=True, help="tool name, e.g. execute")
    check.add_argument("--args", default="{}", help="the call's arguments as a JSON object")
    check.add_argument("--mode", choices=["manual", "auto", "full"],
                       help="the run's review mode (default: the policy's)")
    check.add_argument("--interaction",
                       help="interactive | scheduled | webhook | autonomous (default: "
                       "interactive)")
    check.add_argument("--thread", help="thread id (for rejection memory and grants)")
    check.add_argument("--session", help="session id (for session grants)")
    check.add_argument("--parent-call", help="the parent call id, for a subagent's call")
    check.add_argument("--call-id", default="cli-check", help="tool call id")
    check.add_argument("--memory", help="JSON file of earlier rejections and grants")
    check.add_argument("--db", help="the database the server uses (default: $SIGNOFF_DB or "
                       "signoff.db): protected, as the server protects it")
    check.add_argument("--explain", action="store_true",
                       help="also show how a shell command was read: each command, each "
                       "option and operand with its class, and the rule that admitted it")
    check.add_argument("--json", action="store_true", help="print the verdict as JSON")
    check.set_defaults(handler=cmd_check)

    demo = commands.add_parser(
        "demo", help="run the approval server and a scripted agent, end to end",
        description="Start the approval server on a temporary SQLite database and workspace, "
        "print a one-time inbox login link, run a scripted agent (no LLM) whose tools really "
        "run in the workspace through the gate, wait for decisions from the inbox or the CLI, then "
        "print the audit trail and verify it. Exits 0 when every step went as scripted and "
        "the audit verifies. Without a terminal on stdin it behaves as "
        "--auto-approve-after 3.")
    demo.add_argument("--port", type=int, default=8765,
                      help="the inbox's port (default 8765; taken or 0: a free one)")
    auto = demo.add_mutually_exclusive_group()
    auto.add_argument("--auto-approve-after", type=float, metavar="SECONDS",
                      help="'demo-approver' approves each request nobody decided within "
                      "SECONDS")
    auto.add_argument("--no-auto-approve", action="store_true",
                      help="always wait for a human, even without a terminal")
    demo.add_argument("--keep-serving", action="store_true",
                      help="keep the inbox running after the script, until Ctrl-C")
    demo.add_argument("--dir", help="keep the database, policy and workspace in this new (or "
                      "empty) directory instead of a temporary one")
    demo.add_argument("--json", action="store_true", help="print JSON lines")
    demo.set_defaults(handler=cmd_demo)
    add_commands(commands)
    add_db(commands)
    add_keys(commands)
    add_receipts(commands)
    add_users(commands)
    add_webhooks(commands)
    add_insights(commands)
    add_serve(commands)
    add_mcp_proxy(commands)
    add_hook(commands)
    add_doctor(commands)
    return parser


def cmd_init(args: argparse.Namespace) -> int:
    from signoff.cli.boundary import warn_init  # noqa: PLC0415
    from signoff.policy import Policy  # noqa: PLC0415
    from signoff.policy.starter import starter_toml  # noqa: PLC0415

    target = Path(args.path)
    if target.exists() and not args.force:
        raise ConfigurationError(f"{target} exists; use --force to overwrite",
                                 code="file_exists")
    root = _workspace_root(args.root, create=args.create_root)
    target.write_text(starter_toml(root, args.preset), "utf-8")
    Policy.load(target)  # the starter must load; fail loudly if it ever does not
    warn_init(root, str(target))
    if args.json:
        print(json.dumps({"path": str(target), "root": root, "preset": args.preset}))
    else:
        print(f"wrote {target} (workspace root {root}, preset {args.preset})")
    return EXIT_OK


def _workspace_root(given: str | None, *, create: bool) -> str:
    """The absolute root ``init`` writes into the policy: a mistyped ``--root`` is caught
    here, not later as a workspace that no call can ever be inside."""
    root = os.path.abspath(given or os.getcwd())
    if os.path.isdir(root):
        return root
    if os.path.lexists(root):
        raise ConfigurationError(f"--root {root} is not a directory", code="root_not_a_directory")
    if not create:
        raise ConfigurationError(f"--root {root} does not exist: create it first, or add "
                                 "--create-root", code="root_missing")
    try:
        os.makedirs(root)
    except OSError as exc:
        raise ConfigurationError(f"--root {root}: cannot create it: {exc.strerror}",
                                 code="root_uncreatable") from exc
    return root


def cmd_check(args: argparse.Namespace) -> int:
    from signoff.canonical import parse_args  # noqa: PLC0415
    from signoff.model import ToolCall  # noqa: PLC0415
    from signoff.policy import Memory, Policy, trusted_context  # noqa: PLC0415
    from signoff.policy.explain import explain_call, format_explained  # noqa: PLC0415
    from signoff.policy.guarded import guard_database  # noqa: PLC0415

    try:
        call_args = parse_args(args.args)
    except InvalidArguments as exc:
        raise InvalidArguments(f"--args: {exc.message}", code=exc.code) from exc
    memory = Memory.from_file(args.memory) if args.memory else Memory()
    if not os.path.lexists(args.policy):
        init = f"signoff init {shlex.quote(args.policy)}"
        raise PolicyError(f"cannot read policy: no such file: write one with `{init}` (or "
                          "name another with --policy)", file=args.policy,
                          code="policy_unreadable")
    policy = Policy.load(args.policy, memory=memory)
    # The verdict the server would give: its database is protected too (policy/guarded.py).
    database = args.db or os.environ.get("SIGNOFF_DB") or DEFAULT_DB
    scheme, _, rest = database.partition("://") if "://" in database else ("", "", database)
    if scheme.lower() in ("", "sqlite"):
        policy.config = guard_database(policy.config, rest)
    context = trusted_context(
        thread_id=args.thread, session_id=args.session, review_mode=args.mode,
        interaction_mode=args.interaction, parent_call=args.parent_call, run_id="cli",
    )
    verdict = policy.evaluate(ToolCall(id=args.call_id, name=args.tool, args=call_args), context)
    parsed = explain_call(policy, args.tool, call_args) if args.explain else None
    if args.json:
        body = verdict.to_dict()
        if parsed is not None:
            body["explain"] = parsed
        print(json.dumps(body, indent=2, ensure_ascii=False))
    else:
        print(explain(verdict))
        if parsed:
            print(format_explained(parsed))
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    from signoff.demo import run_demo  # noqa: PLC0415

    return run_demo(as_json=args.json, port=args.port,
                    auto_approve_after=args.auto_approve_after,
                    no_auto_approve=args.no_auto_approve, keep_serving=args.keep_serving,
                    directory=args.dir, interactive=sys.stdin.isatty())


def explain(verdict: Verdict) -> str:
    """A verdict for humans: the effect first, then why."""
    lines = [
        f"{verdict.effect.value.upper()}  {verdict.tool}  (risk {verdict.risk.value}, "
        f"source {verdict.source}, code {verdict.code})",
        f"  {verdict.message}",
        f"  review mode {verdict.review_mode.value}, interaction "
        f"{verdict.interaction_mode.value}, policy {verdict.policy_version}",
    ]
    if verdict.effect.value in ("ask", "blocked"):
        roles = ", ".join(verdict.roles) or "any approver"
        expiry = f"{verdict.expires_in:.0f}s" if verdict.expires_in else "never"
        lines.append(f"  needs {verdict.approvals} approval(s) from {roles}; expires in {expiry}"
                     + ("; mandatory" if verdict.mandatory else "")
                     + ("; with a passkey" if verdict.passkey else ""))
    if verdict.reasons:
        lines.append("  because:")
        for reason in verdict.reasons:
            rule = f" [{reason.rule}]" if reason.rule else ""
            lines.append(f"    - {reason.step.value}{rule}: {reason.text}")
    lines.append(f"  decision {verdict.decision_id}")
    return "\n".join(lines)


def _fail(exc: SignoffError, *, as_json: bool) -> int:
    if as_json:
        body: dict[str, Any] = {"error": exc.to_dict()}
        print(json.dumps(body))
    print(f"signoff: error [{exc.code}]: {exc.message}", file=sys.stderr)
    return EXIT_BAD_INPUT

