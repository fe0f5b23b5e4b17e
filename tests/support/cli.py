"""The `mlperf-warehouse` command, as a process or in this one.

A test about processes (a kill, a lock held by another process, queries racing a refresh) runs the installed
command as a process (`CLI`). A refresh that only sets the scene for such a test runs in this process
(`in_process`): the same `main()` with the same arguments and environment, without a second interpreter
importing Dagster and building the definitions again (seconds per refresh, most of a small refresh)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CLI = [str(Path(sys.executable).parent / "mlperf-warehouse")]


def in_process(args: list[str], env: dict[str, str], monkeypatch, capsys) -> subprocess.CompletedProcess:
    """`mlperf-warehouse *args` run by this process's `main()` with exactly `env` as its environment (restored
    when the test ends), its exit code and output returned as `subprocess.run` would."""
    from pipelines.cli import main

    for name in set(os.environ) - set(env):
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    capsys.readouterr()  # what the test printed before is not this command's
    code = main(list(args))
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(CLI + list(args), code, out, err)
