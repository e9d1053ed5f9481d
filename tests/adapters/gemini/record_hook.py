"""A trivial Gemini CLI hook for the rig's own tests. It appends its stdin JSON (one
line) to ``$RIG_HOOK_LOG``; for ``BeforeTool`` it then sleeps ``$RIG_HOOK_SLEEP``
seconds, and exits with ``$RIG_HOOK_EXIT`` when that is set (printing nothing), else
answers in the hook's JSON format: the n-th BeforeTool call gets the n-th word of
``$RIG_HOOK_DECISION`` (allow, deny or ask; the last word repeats)."""

import json
import os
import sys
import time

event = json.load(sys.stdin)
log_path = os.environ["RIG_HOOK_LOG"]
try:
    with open(log_path, encoding="utf-8") as old:
        before = sum(json.loads(line)["hook_event_name"] == "BeforeTool" for line in old)
except FileNotFoundError:
    before = 0
with open(log_path, "a", encoding="utf-8") as log:
    log.write(json.dumps(event) + "\n")
if event.get("hook_event_name") == "BeforeTool":
    time.sleep(float(os.environ.get("RIG_HOOK_SLEEP", "0")))
    if os.environ.get("RIG_HOOK_EXIT"):
        print("rig hook exits", os.environ["RIG_HOOK_EXIT"], file=sys.stderr)
        sys.exit(int(os.environ["RIG_HOOK_EXIT"]))
    words = os.environ.get("RIG_HOOK_DECISION", "allow").split()
    decision = words[min(before, len(words) - 1)]
    print(json.dumps({"decision": decision, "reason": f"rig hook says {decision}"}))
