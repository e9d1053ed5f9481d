"""``signoff hook <harness>`` (a coding agent's pre-call / post-call hook) and
``signoff hook install <harness>`` (those hooks written into its settings).

The hook never fails open: any error — bad input, a policy or database that does not
open, a server that does not answer — is answered as the harness's refusal, with the
reason. Each harness is a ``signoff.adapters.hooks.harness.Harness`` (the hook's input
and output forms) and an installer. With ``--url`` the event is sent whole to a running
server; the command installed for that is the standard-library client
``signoff.adapters.hooks.resident``. See docs/coding-agents.md.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from signoff.cli.common import DEFAULT_DB, close_opened, open_gate, token_of
from signoff.errors import ConfigurationError

WAIT = 45.0  # seconds: inside Claude Code's default 60 s hook timeout


def add_hook(commands: Any, only: str | None = None) -> None:
    """``signoff hook``'s parsers; ``only``: just that harness's (the one a hook runs)."""
    hook = commands.add_parser(
        "hook", help="answer a coding agent's tool-call hooks",
        description="Answer a coding agent's tool-call hooks through the gate (Claude Code's "
        "and Codex CLI's PreToolUse/PostToolUse, Gemini CLI's BeforeTool/AfterTool), or "
        "install those hooks into its settings. See docs/coding-agents.md.")
    sub = hook.add_subparsers(title="harnesses", metavar="HARNESS")
    if only in _HARNESS_PARSERS:  # a hook's own start: the other parsers would cost more than it
        _HARNESS_PARSERS[only](sub)
        return
    for add in _HARNESS_PARSERS.values():
        add(sub)
    _install(sub)


def _claude_code_parser(sub: Any) -> None:
    _harness(sub, "claude-code", "Claude Code", ("PreToolUse", "PostToolUse"),
             answers="allow, deny with the policy's message",
             ask_help="hand an ask to Claude Code's own permission prompt instead of waiting "
             "(the request is cancelled; the local answer is Claude Code's, not a signoff "
             "approval)")


def _codex_parser(sub: Any) -> None:
    _harness(sub, "codex", "Codex CLI", ("PreToolUse", "PostToolUse"),
             answers="let it run (no output), or deny with the policy's message",
             ask_help="not supported for codex (it has no prompt a hook can hand an ask "
             "to): every call is denied, saying so")


def _gemini_parser(sub: Any) -> None:
    _harness(sub, "gemini", "Gemini CLI", ("BeforeTool", "AfterTool"),
             answers="allow, deny with the policy's message",
             ask_help="hand an ask to Gemini CLI's own confirmation instead of waiting (the "
             "request is cancelled; the local answer is Gemini CLI's, not a signoff "
             "approval; headless runs cannot answer it)")


_HARNESS_PARSERS: dict[str, Callable[[Any], None]] = {
    "claude-code": _claude_code_parser, "codex": _codex_parser, "gemini": _gemini_parser}


def _install(sub: Any) -> None:
    install = sub.add_parser(
        "install", help="write the hooks into a harness's settings",
        description="Merge signoff's PreToolUse and PostToolUse hooks into a harness's "
        "settings. claude-code: .claude/settings.json in the project (--project, the "
        "default) or ~/.claude/settings.json (--user). codex: .codex/hooks.json in the "
        "project or $CODEX_HOME/hooks.json (--user; ~/.codex), and their trust written "
        "into $CODEX_HOME/config.toml (Codex runs no hook nobody trusted). gemini: its "
        "BeforeTool and AfterTool hooks into .gemini/settings.json or "
        "~/.gemini/settings.json. Other settings and hooks are kept; installing again "
        "changes nothing; the previous file is kept beside it as .bak.")
    install.add_argument("harness", choices=["claude-code", "codex", "gemini"],
                         help="the coding agent whose settings get the hooks: claude-code, "
                         "codex or gemini")
    where = install.add_mutually_exclusive_group()
    where.add_argument("--project", action="store_true", help="this project (the default)")
    where.add_argument("--user", action="store_true", help="every project of this user")
    install.add_argument("--dir", default=".", help="the project directory (default: here)")
    install.add_argument("--url", help="a `signoff serve` to ask instead of a database")
    install.add_argument("--token-file", help="with --url: the agent's token file")
    install.add_argument("--db", help="the database the hook opens (default: $SIGNOFF_DB "
                         f"or {DEFAULT_DB}, made absolute)")
    install.add_argument("--policy", help="the policy file (made absolute)")
    install.add_argument("--wait", type=float, default=WAIT, metavar="SECONDS",
                         help=f"the hook's --wait (default {WAIT:g}); its timeout is 15 s more")
    install.add_argument("--signoff",
                         help="the command that runs signoff, split as a shell would (default: "
                         "signoff; with --url, this Python running signoff's standard-library "
                         "hook client, which starts in milliseconds)")
    install.add_argument("--json", action="store_true", help="machine-readable output")
    install.set_defaults(handler=cmd_hook_install)


def _harness(sub: Any, name: str, title: str, events: tuple[str, str], *, answers: str,
             ask_help: str) -> None:
    """``signoff hook <name>``: one harness's pre-call (or ``--event post``) hook."""
    pre, post = events
    parser = sub.add_parser(
        name, help=f"{title}'s {pre} (or --event post) hook",
        description=f"Read one {title} hook event as JSON on stdin and answer it. {pre}: "
        f"propose the call; {answers}, or for an ask wait up to --wait seconds for a human "
        "(inbox, Slack, `signoff requests approve`), then let it run or deny naming the "
        f"request; the same call made again joins it. {post} (--event post): record the "
        "tool's result in the audit. Any error denies.")
    _gate_args(parser)
    parser.add_argument("--event", choices=["pre", "post"], default="pre",
                        help=f"pre ({pre}, the default) or post ({post})")
    parser.add_argument("--wait", type=float, default=WAIT, metavar="SECONDS",
                        help=f"how long an asked call waits for a human (default {WAIT:g}; "
                        "keep it under the hook's timeout, 60 s unless set: a hook past its "
                        "timeout lets the call run)")
    parser.add_argument("--ask-locally", action="store_true", help=ask_help)
    parser.add_argument("--inbox-url", help="the inbox's address, named in a denial that "
                        "waits for approval (default: --url)")
    parser.add_argument("--json", action="store_true",
                        help="accepted for uniformity: an answer is always JSON")
    parser.set_defaults(handler=cmd_hook, harness=name)


def _gate_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", help=f"database: a file or postgresql:// URL (default: "
                        f"$SIGNOFF_DB or {DEFAULT_DB})")
    parser.add_argument("--policy", help="policy file (default: signoff.toml if present)")
    parser.add_argument("--url", help="ask this `signoff serve` instead of opening a database")
    parser.add_argument("--token", help="with --url: the agent's token (default: "
                        "$SIGNOFF_TOKEN; prefer --token-file)")
    parser.add_argument("--token-file", help="with --url: read the token from this file")


def cmd_hook(args: argparse.Namespace) -> int:
    """Answer one hook event of ``args.harness`` read on stdin: judged here on the
    database, or (``--url``) sent whole to a running server (``signoff.adapters.hooks.served``)."""
    from signoff.adapters.hooks import HookOptions  # noqa: PLC0415
    from signoff.adapters.hooks.harness import Reply, harness_named  # noqa: PLC0415

    harness = harness_named(args.harness)
    raw = sys.stdin.buffer.read()
    options = HookOptions(agent=harness.agent, principal=_os_user(), wait_seconds=args.wait,
                          ask_locally=getattr(args, "ask_locally", False),
                          inbox_url=args.inbox_url or args.url)
    try:
        if not 0 < args.wait <= 86400:
            raise ConfigurationError("--wait must be between 0 and 86400 seconds",
                                     code="invalid_wait")
        if args.url:
            from signoff.adapters.hooks import resident  # noqa: PLC0415

            token = token_of(args)
            if not token:
                raise ConfigurationError("--url needs a token (--token-file, --token or "
                                         "SIGNOFF_TOKEN)", code="token_missing")
            try:
                out, code, err = resident.send(args.url, token, args.harness, raw,
                                           event=args.event, wait=args.wait,
                                           ask_locally=options.ask_locally)
            except (resident.WireError, OSError) as exc:
                raise ConfigurationError(str(exc), code="server_unreachable") from None
            return _emit(Reply(out.decode("utf-8", "replace").rstrip("\n"), code, err))
        gate = _gate(args, harness.agent)
    except Exception as exc:  # fail closed
        if args.event == "post":
            print(f"signoff hook: {exc}", file=sys.stderr)
            return 1
        return _emit(harness.refuse(f"signoff is not reachable ({exc}); the call was not "
                                    "allowed"))
    try:
        if args.event == "post":
            try:
                harness.post(gate, raw, options)
            except Exception as exc:  # a lost result is said, not hidden
                print(f"signoff hook: the result was not recorded: {exc}", file=sys.stderr)
                return 1
            return 0
        return _emit(harness.pre(gate, raw, options))
    finally:
        try:
            gate.close()
        finally:
            close_opened()


def _emit(reply: Any) -> int:
    if reply.stdout:
        print(reply.stdout, flush=True)
    if reply.stderr:
        print(reply.stderr, file=sys.stderr, flush=True)
    return int(reply.exit_code)


def _gate(args: argparse.Namespace, agent: str) -> Any:
    gate = open_gate(argparse.Namespace(policy=args.policy, db=args.db), proposes=True,
                     creates=True)
    gate.agent = agent
    return gate


def _resident_client() -> list[str]:
    """The fast command for a resident hook: this Python with no site and no environment
    (``-S -I``) importing only the standard-library client ``signoff.adapters.hooks.resident``
    from its directory (its compiled form cached as any module's is). The word
    ``signoff`` after the code is where the settings installers look for their hooks."""
    from signoff.adapters.hooks import resident  # noqa: PLC0415

    where = os.path.dirname(os.path.abspath(resident.__file__))
    code = (f"import sys;sys.path[:0]=[{json.dumps(where)}];import resident;"
            "sys.exit(resident.main(sys.argv[1:]))")
    return [sys.executable, "-S", "-I", "-c", code, "signoff"]


def _os_user() -> str | None:
    try:
        return "os:" + getpass.getuser()
    except Exception:  # no user name: the agent is the actor
        return None


def cmd_hook_install(args: argparse.Namespace) -> int:
    extra: list[str] = ["--wait", f"{args.wait:g}"]
    if args.url:
        extra += ["--url", args.url]
        if args.token_file:
            extra += ["--token-file", os.path.abspath(args.token_file)]
    else:
        db = args.db or os.environ.get("SIGNOFF_DB") or DEFAULT_DB
        extra += ["--db", db if "://" in db else os.path.abspath(db)]
    if args.policy:
        extra += ["--policy", os.path.abspath(args.policy)]
    base = shlex.split(args.signoff) if args.signoff else \
        _resident_client() if args.url else ["signoff"]
    timeout = int(args.wait) + 15
    notes: list[str] = []
    if args.harness == "codex":
        from signoff.adapters.codex import hooks_file  # noqa: PLC0415

        home = hooks_file.codex_home()
        path = home / "hooks.json" if args.user \
            else Path(os.path.abspath(args.dir)) / ".codex" / "hooks.json"
        if not args.user:
            notes.append(f"Codex reads {path} only in a project it trusts: answer its trust "
                         "prompt, or add [projects.\"<dir>\"] trust_level = \"trusted\" to "
                         f"{home / 'config.toml'}")
    else:
        folder = ".gemini" if args.harness == "gemini" else ".claude"
        path = Path.home() / folder / "settings.json" if args.user \
            else Path(args.dir) / folder / "settings.json"
    try:
        if args.harness == "codex":
            changed, backup = hooks_file.install_hooks(
                path, home / "config.toml", hooks_file.hook_commands(base), extra=extra,
                timeout=timeout)
        elif args.harness == "gemini":
            from signoff.adapters.gemini import settings as gemini  # noqa: PLC0415

            changed, backup = gemini.install_hooks(path, gemini.hook_commands(base),
                                                   extra=extra, timeout_ms=timeout * 1000)
        else:
            from signoff.adapters.claude_code import settings  # noqa: PLC0415

            changed, backup = settings.install_hooks(
                path, settings.hook_commands(base), extra=extra, timeout=timeout)
    except (ValueError, OSError) as exc:
        raise ConfigurationError(f"{path}: {exc}", code="settings_unreadable") from None
    if args.harness == "codex" and (rivals := hooks_file.others(path)):
        notes.append(f"{path} has other PreToolUse hooks ({'; '.join(rivals)}): Codex runs "
                     "the input a hook answering allow with updatedInput gives, not what "
                     "signoff judged; remove them or make sure they never rewrite a call")
    if args.json:
        out: dict[str, Any] = {"path": str(path), "changed": changed,
                               "backup": None if backup is None else str(backup)}
        if args.harness == "codex":
            out |= {"trust": str(home / "config.toml"), "notes": notes}
        print(json.dumps(out))
        return 0
    for note in notes:
        print(note)
    if changed:
        print(f"wrote the signoff hooks into {path}"
              + (f" (the previous file is {backup})" if backup else ""))
    else:
        print(f"{path} already has the signoff hooks")
    return 0
