"""Pause the cyclic garbage collector while many objects that live on are made at once.

Reading a folder of sessions (20,000 turns, each a few pydantic models) makes hundreds of thousands
of objects that all stay alive: each time they pass the collector's threshold it scans the whole
heap again, and those full collections took about half the time of the read (1.9 s instead of
1.0 s for 50 files). In the console they ran in the reader thread holding the GIL, 100 to 300 ms
each, the UI frozen meanwhile.

When the last pause (in any thread) ends, what is alive is moved out of the collector's sight
(`gc.freeze`, which costs nothing): else the first collections after it scanned every object made
during the pause, 100 to 350 ms each, now on the UI thread. Reference counting still frees those
objects as usual; only a reference cycle among them that becomes garbage later is never collected,
and sessions, turns and catalogs hold none.

But `gc.freeze` freezes every live object, not only what the pause read: in the console that
includes cyclic garbage not collected yet (a closed review queue, its screen and every session it
showed), which then could never be collected: about 22,000 objects leaked per open of the palette's
review queue over 600 turns. So the outermost pause starts with a full collection: what is garbage
then goes first, and what gets frozen is only what is alive. It scans only what is not frozen yet
(the console's widgets, a session typed into since): 5 to 35 ms in the console with a 5,000-turn
session open, far less than the collections the pause saves (the palette's review queue over 50
files: 38 ms median stall, 45 ms before). Objects alive at the freeze and freed later by
reference counting still go as usual.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0  # pauses in progress, in any thread
_was_enabled = False


@contextmanager
def gc_paused() -> Iterator[None]:
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.collect()  # garbage now is not frozen with the rest at the end (see above)
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                gc.freeze()
                if _was_enabled:
                    gc.enable()
