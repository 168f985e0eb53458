"""Arguments-command stand-in: reads the JSON request on stdin and answers by its first argument.

good: {"to": <first e-mail in the message>, "tool": <tool id>, "schema_keys": [...]}
env: {"names": [environment variable names]}; text: not JSON; list: a JSON array;
fail: exits 4 with a complaint; sleep: hangs (optionally writes its pid to argv[2]).
"""

import json
import os
import re
import sys
import time

mode = sys.argv[1] if len(sys.argv) > 1 else "good"
request = json.loads(sys.stdin.read())
if mode == "good":
    found = re.findall(r"\S+@\S+", request["message"])
    print(json.dumps({"to": found[0] if found else "", "tool": request["tool"], "schema_keys": sorted(request["schema"])}))
elif mode == "env":
    print(json.dumps({"names": sorted(os.environ)}))
elif mode == "text":
    print("sure! here are the arguments: to=someone")
elif mode == "list":
    print("[1, 2]")
elif mode == "fail":
    print("cannot build arguments: model offline", file=sys.stderr)
    sys.exit(4)
elif mode == "sleep":
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as handle:
            handle.write(str(os.getpid()))
    time.sleep(60)
