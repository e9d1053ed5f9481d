"""A trivial Claude Code hook for the rig's own tests. It appends its stdin JSON (one
line) to ``$RIG_HOOK_LOG``; for ``PreToolUse`` it then sleeps ``$RIG_HOOK_SLEEP``
seconds, and exits with ``$RIG_HOOK_EXIT`` when that is set (printing nothing), else
answers in the hook's JSON format: the n-th PreToolUse call gets the n-th word of
``$RIG_HOOK_DECISION`` (allow, deny or ask; the last word repeats), with
``$RIG_HOOK_UPDATED`` (JSON) as its ``updatedInput`` when that is set."""

import json
import os
import sys
import time

event = json.load(sys.stdin)
log_path = os.environ["RIG_HOOK_LOG"]
try:
    with open(log_path, encoding="utf-8") as old:
        before = sum(json.loads(line)["hook_event_name"] == "PreToolUse" for line in old)
except FileNotFoundError:
    before = 0
with open(log_path, "a", encoding="utf-8") as log:
    log.write(json.dumps(event) + "\n")
if event.get("hook_event_name") == "PreToolUse":
    time.sleep(float(os.environ.get("RIG_HOOK_SLEEP", "0")))
    if os.environ.get("RIG_HOOK_EXIT"):
        print("rig hook exits", os.environ["RIG_HOOK_EXIT"], file=sys.stderr)
        sys.exit(int(os.environ["RIG_HOOK_EXIT"]))
    words = os.environ.get("RIG_HOOK_DECISION", "allow").split()
    decision = words[min(before, len(words) - 1)]
    specific = {"hookEventName": "PreToolUse", "permissionDecision": decision,
                "permissionDecisionReason": f"rig hook says {decision}"}
    if os.environ.get("RIG_HOOK_UPDATED"):
        specific["updatedInput"] = json.loads(os.environ["RIG_HOOK_UPDATED"])
    print(json.dumps({"hookSpecificOutput": specific}))
