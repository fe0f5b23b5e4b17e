"""A temporary PostgreSQL cluster from Debian's packages, for the team-mode tests.

`initdb` and `pg_ctl` run as PostgreSQL's own user when the tests run as root (PostgreSQL refuses root). The
cluster listens on 127.0.0.1 at a free port and on a socket in its own temporary folder; password logins over
TCP (scram-sha-256), as a team's server would ask. Tests skip, naming what is missing, where the server
binaries are absent (`apt-get install postgresql`, as .ci/run does).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

SUPERUSER_PASSWORD = "pg-super-Secret-7"  # noqa: S105 - a throw-away cluster's password


def server_binaries() -> Path | None:
    """The newest installed PostgreSQL server's bin folder (Debian: /usr/lib/postgresql/<major>/bin)."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/postgres"), key=lambda p: int(p.parent.parent.name)
                   if p.parent.parent.name.isdigit() else 0)
    if found:
        return found[-1].parent
    pg_ctl = shutil.which("pg_ctl")
    return Path(pg_ctl).parent if pg_ctl and (Path(pg_ctl).parent / "postgres").exists() else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Cluster:
    bin: Path
    root: Path
    port: int
    as_user: list[str]  # the prefix that runs a command as the cluster's owner

    @property
    def socket_dir(self) -> Path:
        return self.root / "socket"

    def url(self, database: str = "postgres", user: str = "postgres", password: str = SUPERUSER_PASSWORD) -> str:
        return f"postgresql://{user}:{password}@127.0.0.1:{self.port}/{database}"

    def psql(self, sql: str, database: str = "postgres", user: str = "postgres",
             password: str = SUPERUSER_PASSWORD, check: bool = True) -> subprocess.CompletedProcess:
        """`psql` over TCP as `user` (the way a BI user connects), one command, unaligned output."""
        return subprocess.run([str(self.bin / "psql") if (self.bin / "psql").exists() else "psql", "-X", "-A", "-t",
                               "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", str(self.port), "-U", user,
                               "-d", database, "-c", sql],
                              capture_output=True, text=True, check=check, timeout=60,
                              env={**os.environ, "PGPASSWORD": password, "PGCONNECT_TIMEOUT": "10"})

    def create_database(self, name: str, owner: str, password: str) -> str:
        """A login role `owner` (with `password`) owning a new database `name`; its URL."""
        self.psql(f"create role {owner} login password '{password}'")
        self.psql(f"create database {name} owner {owner}")
        return self.url(name, owner, password)

    def stop(self) -> None:
        subprocess.run([*self.as_user, str(self.bin / "pg_ctl"), "-D", str(self.root / "data"), "-m", "immediate",
                        "-w", "stop"], capture_output=True, timeout=60)


@contextlib.contextmanager
def temporary_cluster():
    """Start a cluster in a temporary folder; stop it and delete the folder after."""
    bin_dir = server_binaries()
    if bin_dir is None:
        raise FileNotFoundError("PostgreSQL's server is not installed (apt-get install postgresql)")
    root = Path(tempfile.mkdtemp(prefix="mlperf-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root: its own user owns the cluster
        owner = pwd.getpwnam("postgres")
        os.chown(root, owner.pw_uid, owner.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    (root / "socket").mkdir()
    if as_user:
        shutil.chown(root / "socket", "postgres", "postgres")
    pwfile = root / "pw"
    pwfile.write_text(SUPERUSER_PASSWORD + "\n")
    if as_user:
        shutil.chown(pwfile, "postgres", "postgres")
    cluster = Cluster(bin_dir, root, _free_port(), as_user)
    try:
        subprocess.run([*as_user, str(bin_dir / "initdb"), "-D", str(root / "data"), "-U", "postgres",
                        f"--pwfile={pwfile}", "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8",
                        "--no-sync"], check=True, capture_output=True, timeout=120)
        subprocess.run([*as_user, str(bin_dir / "pg_ctl"), "-D", str(root / "data"), "-l", str(root / "log"), "-w",
                        "-t", "60", "-o",
                        f"-p {cluster.port} -k {root / 'socket'} -c listen_addresses=127.0.0.1 -c fsync=off "
                        "-c max_connections=100 -c shared_buffers=32MB",
                        "start"], check=True, capture_output=True, timeout=120)
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
