"""One writer at a time on a PostgreSQL database: a session advisory lock, held by the publishing process.

Refreshes on several machines publish into one DuckLake catalog (and one BI mirror); two at once would
interleave their snapshots. The lock is PostgreSQL's own: `pg_try_advisory_lock` on a connection the holder keeps
open, released by the server when that connection ends, so a killed or crashed holder never leaves it stale. A
second writer does not queue (a refresh started twice should not run twice): it stops at once with a message
naming the holder (its application name says what, which process and which machine, and since when).
Re-entrant within a process: the refresh holds it, and the publish inside the refresh takes it again.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator

LOCK_CLASS = 0x6D6C7066  # 'mlpf': the advisory lock space of mlperf-warehouse in a database
PUBLISH, MIRROR = 1, 2  # the lake's writers (refresh, rollback); the BI mirror's swap
_held: dict[tuple[str, int], list] = {}  # (url, key) → [connection, depth] held by this process


class CatalogBusy(Exception):
    """Another process holds the lock."""


def connect(url: str, purpose: str, **kwargs):
    """A psycopg connection whose application name says who holds it (shown to a second writer)."""
    import psycopg

    name = f"mlperf-warehouse {purpose}, pid {os.getpid()} on {socket.gethostname()}"[:63]
    return psycopg.connect(url, application_name=name, connect_timeout=10, **kwargs)


def holder(con, key: int) -> str:
    """Who holds the lock `key`, as the server sees it."""
    row = con.execute(
        "select a.application_name, date_trunc('second', a.backend_start)::text, host(a.client_addr) "
        "from pg_locks l join pg_stat_activity a on a.pid = l.pid where l.locktype = 'advisory' and l.granted "
        "and l.classid = %s::oid and l.objid = %s::oid", (LOCK_CLASS, key)).fetchone()
    if row is None:
        return "another process"
    name, since, address = row
    return f"{name or 'a session'} (connected since {since}{f' from {address}' if address else ''})"


@contextlib.contextmanager
def catalog_lock(url: str, purpose: str, key: int = PUBLISH, what: str = "the team catalog") -> Iterator[None]:
    """Hold the advisory lock `key` of the database at `url` for the block; raise CatalogBusy at once if another
    session holds it."""
    held = _held.get((url, key))
    if held is not None:
        held[1] += 1
        try:
            yield
        finally:
            held[1] -= 1
        return
    con = connect(url, purpose, autocommit=True)
    try:
        if not con.execute("select pg_try_advisory_lock(%s, %s)", (LOCK_CLASS, key)).fetchone()[0]:
            raise CatalogBusy(f"another writer holds {what}: {holder(con, key)}; this {purpose} does nothing "
                              "(try again when it has finished)")
        _held[(url, key)] = [con, 1]
        try:
            yield
        finally:
            del _held[(url, key)]
            with contextlib.suppress(Exception):  # closing the session releases it anyway
                con.execute("select pg_advisory_unlock(%s, %s)", (LOCK_CLASS, key))
    finally:
        con.close()
