"""Loading ``signoff.toml`` into a validated, immutable ``PolicyConfig``.

A security policy with a typo must not load: unknown keys, wrong types and
impossible combinations are refused with a ``PolicyError`` that names the
file, the rule (id or index) and the field. See docs/policy.md for every key.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from signoff.errors import PolicyError
from signoff.globs.linear import Linear, LinearError
from signoff.model import Effect, ReviewMode, Risk
from signoff.policy.fields import TableReader
from signoff.policy.guarded import guard_policy_file
from signoff.policy.harnesses import DEFAULT_PROTECTED, extra_pattern
from signoff.policy.hints import parse_mcp
from signoff.policy.patterns import (
    CommandPattern,
    ValuePattern,
    compile_command_pattern,
    compile_value_pattern,
    tool_matches,
)
from signoff.policy.reviewing import REVIEWERS, TOKEN_LIMIT_PARAMS, ReviewConfig
from signoff.policy.sensitive import DEFAULT_SECRETS, DEFAULT_SENSITIVE
from signoff.policy.spec import (
    CONCERN_CODES,
    DEFAULT_ALWAYS_ASK,
    DEFAULT_GATED,
    ArgRule,
    EditSpec,
    PolicyConfig,
    Rule,
    ToolSpec,
    WorkspaceConfig,
)

_DURATION = re.compile(r"^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")
_RULE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
_OUTSIDE = {"allow": "allow", "allow_all": "allow", "approve": "approve",
            "approve_outside": "approve", "ask": "approve", "deny": "deny", "deny_outside": "deny"}


def load_policy_file(path: str | Path) -> PolicyConfig:
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise PolicyError(f"cannot read policy: {exc.strerror}", file=str(path),
                          code="policy_unreadable") from exc
    return parse_policy_file(raw.decode("utf-8", "replace"), path)


def parse_policy_file(text: str, path: str | Path, *, source: str | None = None
                      ) -> PolicyConfig:
    """The text of the policy file at ``path``, as ``load_policy_file`` loads it (a server
    that has just written it judges by the text it wrote); ``source``: what it is called
    (``path`` as given)."""
    # The file the gate judges by is protected from the agents it judges (guarded.py).
    return guard_policy_file(parse_policy(text, source=source or str(path)), path)


def parse_policy(text: str, *, source: str = "<policy>") -> PolicyConfig:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PolicyError(f"not valid TOML: {exc}", file=source) from exc
    digest = "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    return _Loader(source).load(data, digest)


def _combine(patterns: tuple[ValuePattern, ...]) -> Linear | None:
    """An argument's patterns as one alternation: one pass over the value, not one each."""
    if len(patterns) == 1:
        return patterns[0].regex
    try:
        return Linear("|".join(f"(?:{p.regex.pattern})" for p in patterns))
    except LinearError:
        return None


def _python_only(source: str) -> bool:
    """Whether Python's ``re`` reads this ``re:`` pattern (RE2 did not)."""
    if not source.startswith("re:"):
        return False
    try:
        re.compile(source[3:])
    except re.error:
        return False
    return True


def parse_duration(value: object) -> float | None:
    """``"30m"``, ``"1h30m"``, ``"2d"``, ``"45s"``, a number of seconds, or ``"never"``."""
    if isinstance(value, bool):
        raise ValueError("expected a duration like '30m'")
    if isinstance(value, int | float):
        if value <= 0:
            raise ValueError("a duration must be positive")
        return float(value)
    if not isinstance(value, str):
        raise ValueError("expected a duration like '30m'")
    if value == "never":
        return None
    match = _DURATION.match(value.strip())
    if not value.strip() or match is None:
        raise ValueError(f"{value!r} is not a duration like '30m', '1h30m' or '2d'")
    days, hours, minutes, seconds = (int(g) if g else 0 for g in match.groups())
    total = days * 86400 + hours * 3600 + minutes * 60 + seconds
    if total <= 0:
        raise ValueError("a duration must be positive")
    return float(total)


class _Loader(TableReader):
    """The tables of ``signoff.toml``, each into its part of a ``PolicyConfig``."""

    def value_pattern(self, source: str, where: str, field: str) -> ValuePattern:
        """A glob or ``re:`` pattern, compiled for RE2 (linear time); one it cannot
        compile (a backreference, a lookaround, a bad regex) is refused here, named."""
        try:
            return compile_value_pattern(source)
        except LinearError as exc:
            error = self.error(f"pattern {source!r} is not a regular expression RE2 can "
                               f"match in linear time: {exc}", rule=where, field=field)
            if _python_only(source):  # valid for Python's re: it needs backtracking
                error.code = "pattern_not_linear"
            raise error from exc

    def load(self, data: dict[str, Any], digest: str) -> PolicyConfig:
        # [server] belongs to `signoff serve` (signoff.server.settings), [notify] to its
        # notifier (signoff.notify.config): each checks its own table.
        self.known(data, {"policy", "workspace", "tools", "rules", "review", "server", "mcp",
                          "notify"},
                   None)
        policy = self.table(data.get("policy", {}), "[policy]")
        self.known(policy, {"version", "default_review_mode", "ceiling", "gated", "unknown_tools",
                            "clarification_tool", "unattended_asks", "default_expires",
                            "default_approvals", "default_roles", "always_ask",
                            "self_service_modes", "protected", "passkey_from_risk"},
                   "[policy]")
        where = "[policy]"
        version = policy.get("version", digest)
        if not isinstance(version, str) or not version.strip():
            raise self.error("must be a non-empty string", rule=where, field="version")
        tools = self.tools(data.get("tools", {}))
        rules = self.rules(data.get("rules", []), tools)
        always_ask = self.strings(policy, "always_ask", DEFAULT_ALWAYS_ASK, where)
        for code in always_ask:
            if code not in CONCERN_CODES:
                raise self.error(f"unknown concern {code!r} (one of "
                                 f"{', '.join(sorted(CONCERN_CODES))})", rule=where,
                                 field="always_ask")
        workspace = self.workspace(data.get("workspace"))
        clarification = policy.get("clarification_tool", "ask_user")
        if clarification is not None and not (isinstance(clarification, str) and clarification):
            raise self.error("must be a tool name", rule=where, field="clarification_tool")
        return PolicyConfig(
            version=version,
            source=self.source,
            default_review_mode=self.mode(policy, "default_review_mode", ReviewMode.MANUAL, where),
            ceiling=self.mode(policy, "ceiling", ReviewMode.FULL, where),
            gated=self.strings(policy, "gated", DEFAULT_GATED, where),
            unknown_tools=self.choice(policy, "unknown_tools", ("allow", "ask", "deny"), "ask",
                                      where),
            clarification_tool=clarification,
            unattended_asks=self.choice(policy, "unattended_asks", ("block", "allow"), "block",
                                        where),
            default_expires=self.duration(policy, "default_expires", 3600.0, where),
            default_approvals=self.count(policy, "default_approvals", 1, where),
            default_roles=self.strings(policy, "default_roles", (), where),
            always_ask=always_ask,
            self_service_modes=self.flag(policy, "self_service_modes", where),
            protected=DEFAULT_PROTECTED + self.protected(policy, where),
            passkey_from_risk=self.risk({"risk": policy.get("passkey_from_risk")}, where,
                                        field="passkey_from_risk"),
            sensitive=workspace.sensitive if workspace is not None else DEFAULT_SENSITIVE,
            secrets=workspace.secrets if workspace is not None else DEFAULT_SECRETS,
            workspace=workspace,
            tools=tools,
            rules=rules,
            review=self.review(data.get("review")),
            mcp=parse_mcp(data.get("mcp"), self.error),
        )

    def protected(self, policy: Mapping[str, Any], where: str) -> tuple[str, ...]:
        """``[policy] protected``: path globs added to the protected paths (a glob without
        a leading ``/`` matches at any depth, ``~/x`` in any home); the built-in ones stay."""
        out: list[str] = []
        for entry in self.strings(policy, "protected", (), where):
            pattern = extra_pattern(entry.strip())
            if not pattern.strip("/*") or "\x00" in pattern or entry.startswith("re:"):
                raise self.error(f"entry {entry!r} must be a path glob naming files "
                                 "(like '.myagent/settings.json' or '/etc/myagent/**')",
                                 rule=where, field="protected")
            out.append(pattern)
        return tuple(out)

    # ---- sections -------------------------------------------------------------------------

    def workspace(self, raw: object) -> WorkspaceConfig | None:
        if raw is None:
            return None
        where = "[workspace]"
        table = self.table(raw, where)
        self.known(table, {"name", "root", "outside", "allowlist", "mandatory", "risk",
                           "sensitive", "sensitive_defaults", "secrets"}, where)
        root = table.get("root")
        if not isinstance(root, str) or not root.startswith("/"):
            raise self.error("must be an absolute path", rule=where, field="root")
        name = table.get("name", "workspace")
        if not isinstance(name, str) or not name:
            raise self.error("must be a non-empty string", rule=where, field="name")
        outside = table.get("outside", "approve")
        if outside not in _OUTSIDE:
            raise self.error("must be one of allow, approve, deny", rule=where, field="outside")
        allowlist = self.strings(table, "allowlist", (), where)
        for entry in allowlist:
            if not entry.startswith(("/", "~")):
                raise self.error(f"entry {entry!r} must be an absolute path", rule=where,
                                 field="allowlist")
        extra = self.strings(table, "sensitive", (), where)
        defaults = table.get("sensitive_defaults", True)
        if not isinstance(defaults, bool):
            raise self.error("must be true or false", rule=where, field="sensitive_defaults")
        return WorkspaceConfig(
            root=root, name=name, outside=_OUTSIDE[outside], allowlist=allowlist,
            mandatory=self.flag(table, "mandatory", where),
            risk=self.risk(table, where) or Risk.HIGH,
            sensitive=(DEFAULT_SENSITIVE if defaults else ()) + extra,
            secrets=DEFAULT_SECRETS + self.strings(table, "secrets", (), where),
        )

    def review(self, raw: object) -> ReviewConfig:
        if raw is None:
            return ReviewConfig()
        where = "[review]"
        table = self.table(raw, where)
        if "api_key" in table:
            raise self.error("an API key is never read from signoff.toml: put it in the "
                             "environment variable api_key_env names (default OPENAI_API_KEY)",
                             rule=where, field="api_key")
        model_keys = {"model", "base_url", "api_key_env", "timeout", "max_retries",
                      "max_output_tokens", "json_mode", "token_limit_param", "temperature",
                      "max_reviews_per_run", "max_reviews_per_minute", "max_concurrent"}
        self.known(table, {"reviewer", "max_risk", "full_mode_role", *model_keys}, where)
        reviewer = self.choice(table, "reviewer", REVIEWERS, "rules", where)
        unused = sorted(model_keys & table.keys()) if reviewer == "rules" else []
        if unused:
            raise self.error('only meaningful with reviewer = "openai"', rule=where,
                             field=unused[0])
        defaults = ReviewConfig()
        max_risk = table.get("max_risk", defaults.max_risk.value)
        if max_risk not in ("low", "medium", "high", "critical"):
            raise self.error("must be one of low, medium, high, critical", rule=where,
                             field="max_risk")
        model = table.get("model")
        if reviewer == "openai" and not (isinstance(model, str) and model.strip()):
            raise self.error('reviewer = "openai" needs a model name', rule=where, field="model")
        base_url = table.get("base_url")
        if base_url is not None and not (isinstance(base_url, str)
                                         and base_url.startswith(("http://", "https://"))):
            raise self.error("must be an http:// or https:// URL", rule=where, field="base_url")
        key_env = table.get("api_key_env", defaults.api_key_env)
        if not isinstance(key_env, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key_env):
            raise self.error("must be the name of an environment variable", rule=where,
                             field="api_key_env")
        full_role = table.get("full_mode_role")
        if full_role is not None and not (isinstance(full_role, str)
                                          and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.@:-]{0,63}",
                                                           full_role)):
            raise self.error("must be a role name (1–64 letters, digits or _ . @ : -)",
                             rule=where, field="full_mode_role")
        temperature = table.get("temperature")
        if temperature is not None:
            temperature = self.number(table, "temperature", 0.0, where, high=2.0, zero=True)
        return ReviewConfig(
            reviewer=reviewer, max_risk=Risk(max_risk), model=model, base_url=base_url,
            full_mode_role=full_role,
            api_key_env=key_env,
            timeout=self.number(table, "timeout", defaults.timeout, where, high=600.0),
            max_retries=self.integer(table, "max_retries", defaults.max_retries, where, low=0,
                                     high=5),
            max_output_tokens=self.integer(table, "max_output_tokens",
                                           defaults.max_output_tokens, where, low=16, high=4096),
            json_mode=self.flag(table, "json_mode", where) if "json_mode" in table
            else defaults.json_mode,
            token_limit_param=self.choice(table, "token_limit_param", TOKEN_LIMIT_PARAMS,
                                          defaults.token_limit_param, where),
            temperature=temperature,
            max_reviews_per_run=self.integer(table, "max_reviews_per_run",
                                             defaults.max_reviews_per_run, where, low=1,
                                             high=100_000),
            max_reviews_per_minute=self.integer(table, "max_reviews_per_minute",
                                                defaults.max_reviews_per_minute, where, low=1,
                                                high=100_000),
            max_concurrent=self.integer(table, "max_concurrent", defaults.max_concurrent,
                                        where, low=1, high=32),
        )

    def tools(self, raw: object) -> dict[str, ToolSpec]:
        table = self.table(raw, "[tools]")
        specs: dict[str, ToolSpec] = {}
        for name, body in table.items():
            where = f"[tools.{name}]"
            spec = self.table(body, where)
            self.known(spec, {"paths", "writes", "shell", "cwd", "risk", "description",
                              "virtual", "subagent", "content", "edit", "objects", "trees"},
                       where)
            shell = spec.get("shell")
            if shell is not None and not (isinstance(shell, str) and shell):
                raise self.error("must name the argument holding the command", rule=where,
                                 field="shell")
            cwd = spec.get("cwd")
            if cwd is not None and not (isinstance(cwd, str) and cwd):
                raise self.error("must name the argument holding the working directory",
                                 rule=where, field="cwd")
            description = spec.get("description")
            if description is not None and not isinstance(description, str):
                raise self.error("must be a string", rule=where, field="description")
            subagent = spec.get("subagent")
            if subagent is not None and not (isinstance(subagent, str) and subagent):
                raise self.error("must name the argument holding the subagent's name",
                                 rule=where, field="subagent")
            paths = self.strings(spec, "paths", (), where)
            writes = self.flag(spec, "writes", where)
            content, edit = self.write_content(spec, paths, writes, where)
            trees = self.strings(spec, "trees", (), where)
            if set(trees) - set(paths):
                raise self.error("must name arguments listed in paths", rule=where,
                                 field="trees")
            specs[name] = ToolSpec(
                name=name, paths=paths, writes=writes, shell=shell, cwd=cwd,
                risk=self.risk(spec, where), description=description,
                virtual=self.flag(spec, "virtual", where), subagent=subagent,
                content=content, edit=edit, objects=self.strings(spec, "objects", (), where),
                trees=trees,
            )
        return specs

    def write_content(self, spec: Mapping[str, Any], paths: tuple[str, ...], writes: bool,
                      where: str) -> tuple[str | None, EditSpec | None]:
        """``content`` / ``edit``: what a write tool will write, for the diff approvers read.
        Either names arguments of a tool that writes exactly one declared path."""
        content = spec.get("content")
        raw_edit = spec.get("edit")
        if content is None and raw_edit is None:
            return None, None
        key = "content" if content is not None else "edit"
        if content is not None and raw_edit is not None:
            raise self.error("a tool writes either its whole content or an edit, not both",
                             rule=where, field="edit")
        if not writes:
            raise self.error("only meaningful on a tool with writes = true", rule=where,
                             field=key)
        if len(paths) != 1:
            raise self.error("needs exactly one argument in paths: the file written",
                             rule=where, field=key)
        if content is not None:
            if not isinstance(content, str) or not content:
                raise self.error("must name the argument holding the file's new text",
                                 rule=where, field="content")
            if content in paths:
                raise self.error("names the path argument, not the content", rule=where,
                                 field="content")
            return content, None
        table = self.table(raw_edit, f"{where} edit")
        self.known(table, {"old", "new", "all"}, f"{where} edit")
        names: dict[str, str] = {}
        for part in ("old", "new", "all"):
            value = table.get(part)
            if value is None and part == "all":
                continue
            if not isinstance(value, str) or not value:
                raise self.error("must name an argument", rule=where, field=f"edit.{part}")
            if value in paths or value in names.values():
                raise self.error(f"argument {value!r} is named twice", rule=where,
                                 field=f"edit.{part}")
            names[part] = value
        return None, EditSpec(old=names["old"], new=names["new"], all=names.get("all"))

    def rules(self, raw: object, tools: Mapping[str, ToolSpec]) -> tuple[Rule, ...]:
        if not isinstance(raw, list):
            raise self.error("must be an array of tables ([[rules]])", field="rules")
        seen: set[str] = set()
        out: list[Rule] = []
        for index, body in enumerate(raw):
            rule_id = body.get("id") if isinstance(body, dict) else None
            where = f"rules[{index}]" + (f" (id '{rule_id}')" if isinstance(rule_id, str) else "")
            table = self.table(body, where)
            self.known(table, {"id", "effect", "tool", "command", "args", "mandatory", "risk",
                               "roles", "approvals", "requires", "expires", "reason", "writes",
                               "signature"},
                       where)
            if not isinstance(rule_id, str) or not _RULE_ID.fullmatch(rule_id):
                raise self.error("every rule needs an id (letters, digits, _ . : -)",
                                 rule=where, field="id")
            if rule_id in seen:
                raise self.error("duplicate rule id", rule=where, field="id")
            seen.add(rule_id)
            out.append(self.rule(table, index, rule_id, where, tools))
        return tuple(out)

    def rule(self, table: dict[str, Any], index: int, rule_id: str, where: str,
             tools: Mapping[str, ToolSpec]) -> Rule:
        effect_raw = table.get("effect")
        if effect_raw not in ("allow", "ask", "deny"):
            raise self.error("must be one of allow, ask, deny", rule=where, field="effect")
        effect = Effect(effect_raw)
        tool = table.get("tool", "*")
        if not isinstance(tool, str) or not tool:
            raise self.error("must be a tool name or glob", rule=where, field="tool")
        commands: tuple[CommandPattern, ...] = ()
        if "command" in table:
            raw_cmd = table["command"]
            sources = [raw_cmd] if isinstance(raw_cmd, str) else raw_cmd
            if not isinstance(sources, list) or not sources or not all(
                    isinstance(s, str) for s in sources):
                raise self.error("must be a command pattern or a list of them", rule=where,
                                 field="command")
            try:
                commands = tuple(compile_command_pattern(s) for s in sources)
            except ValueError as exc:
                raise self.error(f"bad command pattern: {exc}", rule=where,
                                 field="command") from exc
            if not any(spec.shell and tool_matches(tool, name) for name, spec in tools.items()):
                raise self.error(
                    f"no tool matching {tool!r} declares a shell argument "
                    f"(add [tools.NAME] shell = \"command\")", rule=where, field="command")
        args: list[ArgRule] = []
        raw_args = table.get("args", {})
        if not isinstance(raw_args, dict):
            raise self.error("must be a table of argument patterns", rule=where, field="args")
        for arg_name, pattern in raw_args.items():
            sources = [pattern] if isinstance(pattern, str) else pattern
            if not isinstance(sources, list) or not sources or not all(
                    isinstance(s, str) for s in sources):
                raise self.error("must be a pattern or a list of patterns", rule=where,
                                 field=f"args.{arg_name}")
            compiled = tuple(self.value_pattern(s, where, f"args.{arg_name}") for s in sources)
            args.append(ArgRule(name=arg_name, patterns=compiled, combined=_combine(compiled)))
        mandatory = self.flag(table, "mandatory", where)
        if mandatory and effect is not Effect.ASK:
            raise self.error("only ask rules can be mandatory (deny rules always are)",
                             rule=where, field="mandatory")
        for key in ("roles", "approvals", "requires", "expires"):
            if key in table and effect is not Effect.ASK:
                raise self.error("only meaningful on ask rules", rule=where, field=key)
        reason = table.get("reason")
        if reason is not None and not isinstance(reason, str):
            raise self.error("must be a string", rule=where, field="reason")
        writes = self.strings(table, "writes", (), where)
        if writes and (effect is not Effect.ALLOW or not commands):
            raise self.error("only allow rules with a command may name the paths they write",
                             rule=where, field="writes")
        rule = Rule(
            id=rule_id, index=index, effect=effect, tool=tool, commands=commands,
            args=tuple(args), mandatory=mandatory, risk=self.risk(table, where),
            roles=self.strings(table, "roles", (), where),
            approvals=self.count(table, "approvals", None, where) if "approvals" in table
            else None,
            requires=self.requires(table, where),
            expires=self.duration(table, "expires", None, where), reason=reason,
            writes=tuple(self.value_pattern(w, where, "writes") for w in writes),
            passkey=self.signature(table, where, effect is Effect.ASK) == "passkey",
        )
        by_name: dict[str, list[CommandPattern]] = {}
        wild: list[CommandPattern] = []
        for pattern in commands:
            if any(c in pattern.name for c in "*?["):
                wild.append(pattern)
            else:
                by_name.setdefault(pattern.name, []).append(pattern)
        return dataclasses.replace(rule, text=rule.describe(), wild=tuple(wild),
                                   by_name={k: tuple(v) for k, v in by_name.items()})

    def duration(self, table: Mapping[str, Any], key: str, default: float | None,
                 where: str) -> float | None:
        if key not in table:
            return default
        try:
            return parse_duration(table[key])
        except ValueError as exc:
            raise self.error(str(exc), rule=where, field=key) from None
