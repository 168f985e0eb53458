"""Fallback stand-in that writes far more than the output cap (and never reads stdin)."""

import sys

sys.stdout.write("x" * int(sys.argv[1]))
