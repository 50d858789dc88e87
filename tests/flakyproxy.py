"""A fault-injecting HTTP proxy for an S3-compatible server, on loopback only.

It stands between seedsweep and a loopback S3 server (moto's server mode)
and answers a share of the requests itself, the way an overloaded object
store does:

* ``500`` InternalError, before the request reaches the store;
* ``503`` SlowDown (S3's throttling answer), before the request reaches the store;
* ``500`` *after* the store has done the request (the answer is lost on the
  way back: a write or delete did happen, and the client cannot know);
* a slow answer (0.2-1.5 s of delay, then the store's real answer).

The first three are "failing requests" (``fail`` is their share, split
evenly); slow answers come on top (``slow``). While :attr:`FlakyProxy.outage`
is set, every write (PUT, POST) is answered 503 SlowDown: a store that has
stopped taking writes, as when a quota is reached. Which request gets which fault
is drawn from a seeded generator, so a run is reproducible up to the order
in which concurrent requests arrive. Counts per kind are kept in
:attr:`FlakyProxy.counts`.

Used by ``tests/test_s3.py`` and ``benchmarks/soak.py``; run alone it serves
until stopped (``python -m tests.flakyproxy UPSTREAM_PORT PORT --fail 0.05``).
"""

from __future__ import annotations

import argparse
import http.client
import random
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["FlakyProxy"]

ERROR_BODY = ('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code><Message>{message}</Message>'
              '<RequestId>flaky-{n}</RequestId></Error>')
FAULTS = {
    "error_before": (500, "InternalError", "We encountered an internal error. Please try again."),
    "slowdown": (503, "SlowDown", "Please reduce your request rate."),
    "error_after": (500, "InternalError", "We encountered an internal error. Please try again."),
}
HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade"}


class FlakyProxy:
    """Forward HTTP requests from ``127.0.0.1:port`` to ``127.0.0.1:upstream``,
    failing a share ``fail`` of them and slowing a share ``slow``."""

    def __init__(self, upstream: int, *, fail: float = 0.05, slow: float = 0.02, seed: int = 0,
                 port: int = 0) -> None:
        if not 0 <= fail + slow <= 1:
            raise ValueError("fail + slow must be a share in [0, 1]")
        self.upstream, self.fail, self.slow = upstream, fail, slow
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.counts: Counter = Counter()
        self.outage = False
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def handle_any(self):
                body = self.read_body()
                fault = proxy.draw()
                if proxy.outage and self.command in ("PUT", "POST"):
                    proxy.counts["outage"] += 1
                    return self.answer_error("slowdown")
                if fault in ("error_before", "slowdown"):
                    return self.answer_error(fault)
                if fault == "slow":
                    time.sleep(0.2 + 1.3 * proxy.uniform())
                status, headers, data = proxy.forward(self.command, self.path, self.headers, body)
                if fault == "error_after":
                    return self.answer_error(fault)
                self.send_response(status)
                head = self.command == "HEAD"           # a HEAD answer's length is the object's, with no body
                for name, value in headers:
                    if name.lower() not in HOP and (head or name.lower() != "content-length"):
                        self.send_header(name, value)
                if not head:
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if not head:
                    self.wfile.write(data)

            def read_body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    chunks = []
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                        if size == 0:
                            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                                pass
                            return b"".join(chunks)
                        chunks.append(self.rfile.read(size))
                        self.rfile.readline()
                length = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(length) if length else b""

            def answer_error(self, fault: str):
                status, code, message = FAULTS[fault]
                data = ERROR_BODY.format(code=code, message=message, n=proxy.counts["requests"]).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = handle_any

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread: threading.Thread | None = None

    def draw(self) -> str | None:
        """This request's fault (None: forward it as it is)."""
        with self.lock:
            self.counts["requests"] += 1
            u = self.rng.random()
            if u < self.fail:
                fault = list(FAULTS)[min(int(u / self.fail * 3), 2)]
            elif u < self.fail + self.slow:
                fault = "slow"
            else:
                return None
            self.counts[fault] += 1
            return fault

    def uniform(self) -> float:
        with self.lock:
            return self.rng.random()

    def forward(self, method: str, path: str, headers, body: bytes) -> tuple[int, list, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.upstream, timeout=120)
        try:
            sent = {k: v for k, v in headers.items() if k.lower() not in HOP}
            if body or method in ("PUT", "POST"):
                sent["Content-Length"] = str(len(body))
            conn.request(method, path, body=body, headers=sent)
            reply = conn.getresponse()
            return reply.status, reply.getheaders(), reply.read()
        finally:
            conn.close()

    @property
    def failed(self) -> int:
        """Requests answered with an error (before or after the store saw them; outages aside)."""
        return sum(self.counts[k] for k in FAULTS)

    def start(self) -> "FlakyProxy":
        self.thread = threading.Thread(target=self.server.serve_forever, name="flaky-proxy", daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> "FlakyProxy":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("upstream", type=int)
    parser.add_argument("port", type=int)
    parser.add_argument("--fail", type=float, default=0.05)
    parser.add_argument("--slow", type=float, default=0.02)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    proxy = FlakyProxy(args.upstream, fail=args.fail, slow=args.slow, seed=args.seed, port=args.port)
    try:
        proxy.server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        print(dict(proxy.counts), flush=True)


if __name__ == "__main__":
    main()
