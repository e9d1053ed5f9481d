"""A trivial Claude Code hook for the rig's own tests. It appends its stdin JSON (one
line) to ``$RIG_HOOK_LOG``; for ``PreToolUse`` it then sleeps ``$RIG_HOOK_SLEEP``
seconds, and exits with ``$RIG_HOOK_EXIT`` when that is set (printing nothing), else
answers ``$RIG_HOOK_DECISION`` (allow, deny or ask) in the hook's JSON format."""

import json
import os
import sys
import time

event = json.load(sys.stdin)
with open(os.environ["RIG_HOOK_LOG"], "a", encoding="utf-8") as log:
    log.write(json.dumps(event) + "\n")
if event.get("hook_event_name") == "PreToolUse":
    time.sleep(float(os.environ.get("RIG_HOOK_SLEEP", "0")))
    if os.environ.get("RIG_HOOK_EXIT"):
        print("rig hook exits", os.environ["RIG_HOOK_EXIT"], file=sys.stderr)
        sys.exit(int(os.environ["RIG_HOOK_EXIT"]))
    decision = os.environ.get("RIG_HOOK_DECISION", "allow")
    print(json.dumps({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": decision,
        "permissionDecisionReason": f"rig hook says {decision}",
    }}))
