"""Fallback stand-in that fails: reads stdin, complains on stderr, exits 3."""

import sys

sys.stdin.read()
print("partial answer")
print("model overloaded, try later", file=sys.stderr)
sys.exit(3)
