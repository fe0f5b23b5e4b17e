"""`mlperf-warehouse ui`: the Dagster UI on this warehouse's Dagster instance, so it shows the runs,
materializations, round partitions and check results of the CLI's refreshes; read-only by default and
guarded against other sites (ui_guard.py)."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from pathlib import Path

from pipelines.commands import add_warehouse_dir

EXAMPLES = """examples:
  mlperf-warehouse ui                          # http://127.0.0.1:3000, read-only
  mlperf-warehouse ui --port 3333 --warehouse-dir /data/warehouse
  mlperf-warehouse ui --allow-launch           # launch runs from the UI too
  DAGSTER_HOME=/srv/dagster mlperf-warehouse ui   # another instance (refresh uses it too)"""


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "ui", help="start the Dagster UI on this warehouse's runs, assets and checks (read-only by default)",
        description="Start the Dagster UI (its webserver, and the daemon that runs the schedules and sensors) on "
        "the instance `refresh` records its runs in: DAGSTER_HOME when set, else <warehouse>/dagster. The UI is "
        "read-only unless --allow-launch: it shows the CLI's runs, materializations, round partitions and check "
        "results but launches nothing. In either mode it answers only requests naming its own address and "
        "coming from its own pages (no foreign Host or Origin, no GraphQL mutation over GET). Ctrl-C stops it.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default: 127.0.0.1; any other address is reachable from the network: "
                        "a warning says so)")
    p.add_argument("--port", type=int, default=3000, help="port (default: 3000)")
    p.add_argument("--allow-launch", action="store_true",
                   help="let the UI launch runs and change schedules and sensors (read-only without it); run "
                        "config still cannot change source URLs, the warehouse folder or limits")
    add_warehouse_dir(p)
    p.set_defaults(handler=run)


# The UI loads the definitions module through this workspace file, under the code location name the
# checkout's `dg` tooling uses too (the name is part of every schedule's and sensor's stored state).
WORKSPACE_YAML = """\
# Written by `mlperf-warehouse ui`: the definitions of the installed mlperf-warehouse package.
load_from:
  - python_module:
      module_name: pipelines.definitions
      location_name: mlperf_warehouse
"""
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def run(args: argparse.Namespace) -> int:
    from pipelines.lib.io.files import atomic_write_text
    from pipelines.lib.io.paths import warehouse_dir
    from pipelines.runner.instance import prepare_home

    home = prepare_home()
    workspace = atomic_write_text(home / "workspace.yaml", WORKSPACE_YAML)
    # The one place the CLI sets environment variables: for the processes the UI starts (the daemon, the
    # code server and the runs they launch), which read their settings from the environment, as Dagster
    # gives no other channel to them.
    os.environ.update(DAGSTER_HOME=str(home), MLPERF_WAREHOUSE_DIR=str(warehouse_dir()))
    if args.host not in LOOPBACK:
        print(f"warning: --host {args.host} makes the UI reachable from other machines; it has no login",
              file=sys.stderr)
    if args.allow_launch:
        print("warning: --allow-launch: the UI can launch runs and turn schedules and sensors on and off",
              file=sys.stderr)
    # The instance's SQLite storage is created here, once: the daemon and the webserver starting on a new
    # home at the same moment would both run its migrations.
    from pipelines.runner.instance import warehouse_instance

    with warehouse_instance():
        pass
    mode = "launching allowed" if args.allow_launch else "read-only"
    print(f"Dagster UI at http://{args.host}:{args.port} ({mode}) on the instance in {home}; Ctrl-C stops it",
          file=sys.stderr)
    # SIGTERM (a service manager's stop, `kill`) ends the UI as Ctrl-C does, with the daemon and the code servers
    # it started: uvicorn re-raises a signal it caught after its shutdown, which by default would end this process
    # at once and leave them running, the daemon still ticking schedules and sensors.
    signal.signal(signal.SIGTERM, _interrupted)
    daemon = subprocess.Popen([str(Path(sys.executable).parent / "dagster-daemon"), "run", "-w", str(workspace)],
                              env=os.environ.copy())
    try:
        from pipelines.commands.ui_server import serve

        serve(workspace, args.host, args.port, read_only=not args.allow_launch)
    except KeyboardInterrupt:
        pass
    finally:
        daemon.terminate()
        try:
            daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            daemon.kill()
    return 0


def _interrupted(_signum, _frame) -> None:
    raise KeyboardInterrupt
