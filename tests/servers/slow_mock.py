"""`jevcompat mock` with a fixed model time per answer: python slow_mock.py LATENCY_MS [mock flags].

The reference mock answers in microseconds; a real decision model takes tens to hundreds of
milliseconds, which is what client-side concurrency is for. Only `respond` is wrapped.
"""

import http.server
import sys
import time

import jevcompat.mock as mock
from jevcompat.cli import main

latency = float(sys.argv[1]) / 1000.0
respond = mock.respond


def slow_respond(cfg, body):
    time.sleep(latency)
    return respond(cfg, body)


mock.respond = slow_respond
# The default listen backlog (5) drops connections when 16 clients connect at once.
http.server.ThreadingHTTPServer.request_queue_size = 128
# The mock speaks HTTP/1.0 (a new connection per request); servers in production keep connections
# alive, and every reply carries Content-Length, so HTTP/1.1 keep-alive is safe here.
if "--http10" in sys.argv:
    sys.argv.remove("--http10")
else:
    mock.Handler.protocol_version = "HTTP/1.1"
    # headers and body go out in two writes: without TCP_NODELAY, Nagle holds the body back until
    # the client's delayed ACK (about 40 ms) on a kept-alive connection
    mock.Handler.disable_nagle_algorithm = True
sys.exit(main(["mock", "--host", "127.0.0.1", "--port", "0", *sys.argv[2:]]))
