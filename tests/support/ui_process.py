"""`mlperf-warehouse ui` as a real process for tests: started on a free loopback port, waited for until its
code location has loaded, stopped (with its whole process group) afterwards."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.cli import CLI
from support.http_server import free_port

STARTUP_SECONDS = 240  # the UI loads the definitions in a subprocess; slow on a busy machine


def graphql(url: str, query: str, *, expect_errors: bool = False) -> dict:
    request = urllib.request.Request(f"{url}/graphql", data=json.dumps({"query": query}).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        body = json.loads(response.read())
    if not expect_errors:
        assert "errors" not in body, body
    return body if expect_errors else body["data"]


def wait_for_location(url: str, process: subprocess.Popen, log: Path) -> None:
    """Until the webserver answers and the code location has loaded (or the process died)."""
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        assert process.poll() is None, f"the UI exited: {log.read_text()[-3000:]}"
        try:
            data = graphql(url, "{ workspaceOrError { ... on Workspace { locationEntries { name "
                                "locationOrLoadError { __typename ... on PythonError { message } } } } } }")
            entries = data["workspaceOrError"]["locationEntries"]
            if entries and all(e["locationOrLoadError"] and e["locationOrLoadError"]["__typename"] == "RepositoryLocation"
                               for e in entries):
                return
            assert not any(e["locationOrLoadError"] and e["locationOrLoadError"]["__typename"] == "PythonError"
                           for e in entries), entries
        except OSError:
            pass
        time.sleep(2)
    pytest.fail(f"the UI did not come up in {STARTUP_SECONDS}s: {log.read_text()[-3000:]}")


@contextlib.contextmanager
def running_ui(environment: dict, log: Path, *args: str) -> Iterator[str]:
    """`mlperf-warehouse ui` with `args`; yields its URL."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with log.open("w") as out:
        process = subprocess.Popen(CLI + ["ui", "--port", str(port), *args], env=environment, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for_location(url, process, log)
        yield url
    except BaseException:
        _end_group(process)
        raise
    # stopped as a service manager stops it: SIGTERM to the UI alone, which ends the daemon and code servers it
    # started (the process group this test started holds them all)
    process.send_signal(signal.SIGTERM)
    left = _group_after(process.pid, STOP_SECONDS)
    _end_group(process)
    assert left == [], f"SIGTERM ended the UI but left {left} of its processes running: {log.read_text()[-2000:]}"


STOP_SECONDS = 60  # the daemon's and code servers' shutdown; slow on a busy machine


def _group_after(group: int, seconds: float) -> list[str]:
    """The processes of `group` still running after up to `seconds` (their command lines)."""
    deadline = time.monotonic() + seconds
    while True:
        found = _group_members(group)
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


def _group_members(group: int) -> list[str]:
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            state, _parent, pgrp = stat.read_text().rsplit(")", 1)[1].split()[:3]
            if int(pgrp) == group and state != "Z":  # a zombie has ended
                command = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                members.append(f"{stat.parent.name}: {command[:200]}")
    return members


def _end_group(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
