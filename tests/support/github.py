"""A fake of GitHub's REST API for `mlcommons/logging` on a LoopbackServer (real HTTP): its tags as
`GET /repos/mlcommons/logging/tags` lists them (GitHub's default of 30 a page, `per_page` up to 100, `Link:
rel="next"`, an ETag on the first page) and its default branch's head (`GET .../commits/HEAD`)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from support.http_server import LoopbackServer, Reply
from support.paths import SHARED_MLPERF

TAGS_JSON = SHARED_MLPERF / "logging" / "github_tags.json"
# The head of mlcommons/logging's default branch on 2026-07-29 (../shared/mlperf/README.md): it holds training_6.1.0
DEFAULT_HEAD = ("7bbf792686936919201796120b970dd820331099", "2026-07-29T12:00:00Z")
TAGS_PATH = "/repos/mlcommons/logging/tags"
HEAD_PATH = "/repos/mlcommons/logging/commits/HEAD"


@dataclass
class FakeLoggingRepository:
    server: LoopbackServer
    tags: list[dict] = field(default_factory=list)
    head: tuple[str, str] | None = DEFAULT_HEAD
    rate_limited: bool = False

    def __post_init__(self) -> None:
        self.server.route(TAGS_PATH, self.list_tags)
        self.server.route(HEAD_PATH, self.head_commit)

    def list_tags(self, path: str, query: dict, headers: dict) -> Reply:
        if self.rate_limited:
            return Reply(403, b'{"message": "API rate limit exceeded"}',
                         {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "4102444800"})
        per_page, page = min(int(query.get("per_page", "30")), 100), int(query.get("page", "1"))
        items = self.tags[(page - 1) * per_page:page * per_page]
        body = json.dumps(items).encode()
        etag = '"' + hashlib.sha256(json.dumps(self.tags).encode() + str(per_page).encode()).hexdigest()[:16] + '"'
        if page == 1 and headers.get("if-none-match") == etag:
            return Reply(304, b"", {"ETag": etag})
        sent = {"ETag": etag} if page == 1 else {}
        if page * per_page < len(self.tags):
            sent["Link"] = f'<{self.server.url}{path}?per_page={per_page}&page={page + 1}>; rel="next"'
        return Reply(200, body, sent)

    def head_commit(self, path: str, query: dict, headers: dict) -> Reply:
        if self.head is None:
            return Reply(404, b'{"message": "Not Found"}')
        sha, date = self.head
        body = json.dumps({"sha": sha, "commit": {"committer": {"date": date}}}).encode()
        etag = '"' + sha[:16] + '"'
        if headers.get("if-none-match") == etag:
            return Reply(304, b"", {"ETag": etag})
        return Reply(200, body, {"ETag": etag})


def shared_tags() -> list[dict]:
    """The tags of mlcommons/logging as GitHub listed them (../shared), newest first."""
    return json.loads(TAGS_JSON.read_text())


def serve_logging_repository(server: LoopbackServer, tags: list[dict] | None = None,
                             head: tuple[str, str] | None = DEFAULT_HEAD) -> FakeLoggingRepository:
    return FakeLoggingRepository(server, shared_tags() if tags is None else tags, head)
