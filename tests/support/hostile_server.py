"""A hostile HTTP server on 127.0.0.1: the upstream behaviours a download must survive.

Each route is a function that writes a raw HTTP response (status line, headers, body) to the
socket, so it can do what a well-behaved server never does: send forever, drip one byte at a
time, promise more bytes than it sends and then hang, compress a bomb, nest JSON 100k deep.

    with HostileServer() as server:
        server.route("/offer.json", endless())
        fetch_to_file(server.url + "/offer.json", dest, policy=...)

`server.requests` lists (path incl. query, headers with lower-cased names); `server.sent[path]`
counts the body bytes the kernel accepted for that path.
"""

from __future__ import annotations

import socket
import socketserver
import threading
import time
import zlib
from collections import defaultdict
from collections.abc import Callable

Behaviour = Callable[["_Conn"], None]


class _Conn:
    def __init__(self, sock: socket.socket, path: str, server: HostileServer) -> None:
        self.sock, self.path, self.server = sock, path, server

    def head(self, status: str = "200 OK", **headers: str) -> None:
        lines = [f"HTTP/1.1 {status}"] + [f"{k.replace('_', '-')}: {v}" for k, v in headers.items()]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())

    def body(self, data: bytes) -> None:
        self.sock.sendall(data)
        self.server.sent[self.path.split("?")[0]] += len(data)

    def alive(self) -> bool:
        return not self.server.closing


def endless(piece: int = 64 << 10) -> Behaviour:
    """200 with no Content-Length: zeros until the client hangs up."""
    def run(c: _Conn) -> None:
        c.head(Connection="close", Content_Type="application/octet-stream")
        chunk = b"\0" * piece
        while c.alive():
            c.body(chunk)
    return run


def drip(total: int = 10_000, interval: float = 1.0) -> Behaviour:
    """Announces `total` bytes, then sends one byte every `interval` seconds."""
    def run(c: _Conn) -> None:
        c.head(Content_Length=str(total))
        for _ in range(total):
            if not c.alive():
                return
            c.body(b"x")
            time.sleep(interval)
    return run


def short_and_hang(promised: int = 100_000, sent: int = 1000, hang: float = 60.0) -> Behaviour:
    """Content-Length larger than the body, and the connection kept open."""
    def run(c: _Conn) -> None:
        c.head(Content_Length=str(promised))
        c.body(b"x" * sent)
        end = time.monotonic() + hang
        while c.alive() and time.monotonic() < end:
            time.sleep(0.05)
    return run


def steady(rate: int = 50_000, total: int = 100 << 20) -> Behaviour:
    """A healthy-looking transfer at `rate` bytes/s that takes far too long overall."""
    def run(c: _Conn) -> None:
        c.head(Content_Length=str(total))
        piece = b"y" * (rate // 10)
        while c.alive():
            c.body(piece)
            time.sleep(0.1)
    return run


def huge_length(length: int = 10 << 30) -> Behaviour:
    def run(c: _Conn) -> None:
        c.head(Content_Length=str(length))
        c.body(b"z" * 1000)
    return run


def encoded(body: bytes, encoding: str, content_type: str = "application/octet-stream") -> Behaviour:
    def run(c: _Conn) -> None:
        c.head(Content_Length=str(len(body)), Content_Encoding=encoding, Content_Type=content_type)
        c.body(body)
    return run


def gzip_bomb(decoded_bytes: int) -> bytes:
    """gzip of `decoded_bytes` zeros, compressed in pieces (never held whole)."""
    out = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts, piece = [], b"\0" * (1 << 20)
    for _ in range(decoded_bytes >> 20):
        parts.append(out.compress(piece))
    parts.append(out.flush())
    return b"".join(parts)


def fixed(body: bytes, status: str = "200 OK", content_type: str = "application/json") -> Behaviour:
    def run(c: _Conn) -> None:
        c.head(status, Content_Length=str(len(body)), Content_Type=content_type, Connection="close")
        c.body(body)
    return run


def deep_json(depth: int = 100_000) -> bytes:
    return b"[" * depth + b"]" * depth


class HostileServer:
    def __init__(self) -> None:
        self.routes: dict[str, Behaviour] = {}
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.sent: dict[str, int] = defaultdict(int)
        self.closing = False
        owner = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                rfile = self.request.makefile("rb")
                request_line = rfile.readline().decode("latin-1").split()
                headers = {}
                while (line := rfile.readline()) not in (b"\r\n", b"\n", b""):
                    name, _, value = line.decode("latin-1").partition(":")
                    headers[name.strip().lower()] = value.strip()
                if len(request_line) < 2:
                    return
                path = request_line[1]
                owner.requests.append((path, headers))
                behaviour = owner.routes.get(path.split("?")[0]) or fixed(b"not found", "404 Not Found", "text/plain")
                try:
                    behaviour(_Conn(self.request, path, owner))
                except OSError:
                    pass  # the client hung up: that is what these behaviours are for

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

            def handle_error(self, request, client_address) -> None:
                pass

        self._server = Server(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def route(self, path: str, behaviour: Behaviour) -> None:
        self.routes[path] = behaviour

    def requests_for(self, path: str) -> list[tuple[str, dict[str, str]]]:
        return [r for r in self.requests if r[0].split("?")[0] == path]

    def close(self) -> None:
        self.closing = True
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> HostileServer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
