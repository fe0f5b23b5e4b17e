"""An ASGI middleware in front of Dagster's webserver: only this machine's own pages may drive it.

Dagster's GraphQL endpoint answers mutations over GET and accepts any `Host`, so one `<img src=...>` on a
page of another site (or a DNS-rebound name) could launch runs. Refused here, with 403 and one line:
- a `Host` that is not the address the UI was started on (or a loopback name for its port);
- an `Origin` (browsers send it on cross-site requests and websockets) of any other host;
- a GraphQL mutation in a GET (or HEAD) request: a GET never changes anything;
- a POST to the GraphQL endpoint that is not `application/json` (a form can post text across sites
  without a CORS preflight; JSON cannot).
No Dagster import: plain ASGI, tested by itself.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
_MUTATION = re.compile(r"\bmutation\b")


def allowed_hosts(host: str, port: int) -> frozenset[str]:
    """`host:port` values a request may name: the address served, and the loopback names when the UI
    listens on loopback (or on every address)."""
    names = {host if ":" not in host or host.startswith("[") else f"[{host}]"}
    if host in ("127.0.0.1", "localhost", "::1", "0.0.0.0", "::"):
        names |= set(LOOPBACK_NAMES)
    return frozenset(f"{name}:{port}" for name in names)


class RequestGuard:
    def __init__(self, app, hosts: frozenset[str]):
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope, receive, send):
        if scope["type"] in ("http", "websocket"):
            problem = self.problem(scope)
            if problem is not None:
                if scope["type"] == "http":
                    body = (problem + "\n").encode()
                    await send({"type": "http.response.start", "status": 403,
                                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                                            (b"content-length", str(len(body)).encode())]})
                    await send({"type": "http.response.body", "body": body})
                else:  # closing before accepting: the handshake gets 403
                    await send({"type": "websocket.close", "code": 1008, "reason": problem[:120]})
                return
        await self.app(scope, receive, send)

    def problem(self, scope) -> str | None:
        """Why the request is refused, or None."""
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        host = headers.get("host", "")
        if host not in self.hosts:
            return f"refused: Host {host[:80]!r} is not this UI's address"
        origin = headers.get("origin")
        if origin is not None and origin != "null" and urlsplit(origin).netloc not in self.hosts:
            return f"refused: requests from {origin[:80]!r} may not drive this UI"
        if origin == "null":
            return "refused: requests from an opaque origin may not drive this UI"
        path = scope.get("path", "")
        if scope["type"] == "http" and path.rstrip("/").endswith("/graphql"):
            method = scope.get("method", "GET")
            if method in ("GET", "HEAD"):
                query = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("query", [""])
                if any(_MUTATION.search(q) for q in query):
                    return "refused: GraphQL mutations are not accepted over GET"
            elif method == "POST":
                content_type = headers.get("content-type", "").split(";")[0].strip().lower()
                if content_type != "application/json":
                    return "refused: GraphQL requests are POSTed as application/json"
        return None
