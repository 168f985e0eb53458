"""Fallback stand-in: prints the message from stdin upper-cased, and the env copy's length."""

import os
import sys

text = sys.stdin.read()
sys.stdout.write("LLM: " + text.upper() + "\n")
sys.stdout.write(f"env chars: {len(os.environ.get('TUI_ROUTER_MESSAGE', ''))}\n")
