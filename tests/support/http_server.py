"""A real HTTP/1.1 server on 127.0.0.1 for tests: static files, routes, and scripted faults.

    with LoopbackServer(tmp_path) as server:
        server.script("/data.json", [Status(503), Drop(), Truncate(10)])
        fetch_to_file(server.url + "/data.json", dest)
        assert [r[0] for r in server.requests] == ["GET"] * 4

`server.requests` holds (method, raw path incl. query, headers with lower-cased names).
"""

from __future__ import annotations

import email.utils
import hashlib
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit


def free_port() -> int:
    """A 127.0.0.1 port nothing listens on (bound, then released): for a server to come, or a refused connection."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


# Faults: each scripted request consumes one, then normal serving resumes.
@dataclass(frozen=True)
class Status:
    """Answer with this status (and optional Retry-After) instead of the real reply."""
    code: int
    retry_after: str | None = None
    body: bytes = b""


@dataclass(frozen=True)
class Drop:
    """Close the socket without sending anything."""


@dataclass(frozen=True)
class Truncate:
    """Send the real headers (full Content-Length) but only the first n body bytes, then close."""
    n: int


@dataclass(frozen=True)
class Slow:
    """Sleep before answering normally."""
    seconds: float


Fault = Status | Drop | Truncate | Slow
Handler = Callable[[str, dict[str, str], dict[str, str]], Reply]


class LoopbackServer:
    def __init__(self, root: Path | None = None, port: int = 0) -> None:
        """`port` 0: a free one; another: that one (to serve again under the same URLs)."""
        self.root = Path(root).resolve() if root is not None else None
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self._lock = threading.Lock()
        self._routes: dict[str, Handler] = {}
        self._scripts: dict[str, deque[Fault]] = {}
        # a served file's ETag by (path, mtime, size, inode): a 304 is answered without reading the file, as a
        # real server does (hashing 30 MB archives on each conditional GET would time this server, not the client)
        self._etags: dict[tuple, str] = {}
        owner = self

        class _Handler(_RequestHandler):
            server_owner = owner

        self._httpd = _Server(("127.0.0.1", port), _Handler)
        self.port = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"loopback-http-{self.port}", daemon=True)
        self._thread.start()
        self._closed = False

    # -- configuration -------------------------------------------------------------------------
    def route(self, path: str, handler: Handler) -> None:
        with self._lock:
            self._routes[path] = handler

    def script(self, path: str, faults: Iterable[Fault]) -> None:
        with self._lock:
            self._scripts.setdefault(path, deque()).extend(faults)

    def requests_for(self, path: str) -> list[tuple[str, str, dict[str, str]]]:
        """Requests whose path (query string ignored) equals `path`."""
        with self._lock:
            return [r for r in self.requests if urlsplit(r[1]).path == path]

    # -- lifecycle -------------------------------------------------------------------------------
    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> LoopbackServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- used by the handler ---------------------------------------------------------------------
    def _record(self, method: str, raw_path: str, headers: dict[str, str]) -> tuple[Fault | None, Handler | None]:
        path = urlsplit(raw_path).path
        with self._lock:
            self.requests.append((method, raw_path, headers))
            queue = self._scripts.get(path)
            fault = queue.popleft() if queue else None
            return fault, self._routes.get(path)

    def _serve_file(self, path: str, headers: dict[str, str]) -> Reply:
        if self.root is None:
            return Reply(404, b"no root\n")
        target = (self.root / unquote(path).lstrip("/")).resolve()
        if target != self.root and self.root not in target.parents:
            return Reply(403, b"path traversal refused\n")
        if not target.is_file():
            return Reply(404, b"not found\n")
        stat = target.stat()
        mtime, version = int(stat.st_mtime), (target, stat.st_mtime_ns, stat.st_size, stat.st_ino)
        body = None
        with self._lock:
            etag = self._etags.get(version)
        if etag is None:
            body = target.read_bytes()
            etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
            with self._lock:
                self._etags[version] = etag
        reply_headers = {"ETag": etag, "Last-Modified": email.utils.formatdate(mtime, usegmt=True)}
        if "if-none-match" in headers:  # RFC 9110: If-None-Match wins over If-Modified-Since
            tags = [t.strip().removeprefix("W/") for t in headers["if-none-match"].split(",")]
            if "*" in tags or etag in tags:
                return Reply(304, b"", reply_headers)
        elif "if-modified-since" in headers:
            try:
                since = email.utils.parsedate_to_datetime(headers["if-modified-since"]).timestamp()
            except (TypeError, ValueError):
                since = None
            if since is not None and mtime <= since:
                return Reply(304, b"", reply_headers)
        return Reply(200, target.read_bytes() if body is None else body, reply_headers)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's default listen backlog is 5: a client opening more connections at once (the refresh's
    # pre-flight asks 8) had some SYNs dropped and retried after 1 s, a delay no real server adds.
    request_queue_size = 128

    def handle_error(self, request, client_address) -> None:
        pass  # clients hanging up mid-reply is expected here (timeouts, faults); keep output clean


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like real servers; every reply sets Content-Length
    # Headers and body go out as two writes: with Nagle on, the body waited for the ACK of the headers, which the
    # client delays (40 ms per reply on Linux loopback). Real servers set TCP_NODELAY too.
    disable_nagle_algorithm = True
    server_owner: LoopbackServer

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self._handle(head=False)

    def do_HEAD(self) -> None:
        self._handle(head=True)

    def _handle(self, head: bool) -> None:
        owner = self.server_owner
        headers = {k.lower(): v for k, v in self.headers.items()}
        fault, route = owner._record(self.command, self.path, headers)
        if isinstance(fault, Slow):
            time.sleep(fault.seconds)
        if isinstance(fault, Drop):
            self._hang_up()
            return
        if isinstance(fault, Status):
            extra = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
            self._send(Reply(fault.code, fault.body, extra), head)
            return
        parts = urlsplit(self.path)
        if route is not None:
            reply = route(parts.path, dict(parse_qsl(parts.query, keep_blank_values=True)), headers)
        else:
            reply = owner._serve_file(parts.path, headers)
        self._send(reply, head, truncate=fault.n if isinstance(fault, Truncate) else None)

    def _send(self, reply: Reply, head: bool, truncate: int | None = None) -> None:
        body = b"" if reply.status in (204, 304) else reply.body
        try:
            phrase = HTTPStatus(reply.status).phrase
        except ValueError:
            phrase = ""
        self.send_response(reply.status, phrase)
        for name, value in reply.headers.items():
            if name.lower() != "content-length":
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if head:
            return
        if truncate is None:
            self.wfile.write(body)
        else:
            self.wfile.write(body[:truncate])
            self._hang_up()

    def _hang_up(self) -> None:
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
