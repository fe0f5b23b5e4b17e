"""`mlperf-warehouse ui`: the Dagster UI (`dg dev`) on this warehouse's Dagster instance, so it shows
the runs, materializations, round partitions and check results of the CLI's refreshes."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from pipelines.commands import add_warehouse_dir, export_warehouse_dir

EXAMPLES = """examples:
  mlperf-warehouse ui                          # http://127.0.0.1:3000
  mlperf-warehouse ui --port 3333 --warehouse-dir /data/warehouse
  DAGSTER_HOME=/srv/dagster mlperf-warehouse ui   # another instance (refresh uses it too)"""


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "ui", help="start the Dagster UI (dg dev) on this warehouse's runs, assets and checks",
        description="Start `dg dev` (the Dagster webserver and daemon) with DAGSTER_HOME set to the instance "
        "`refresh` records its runs in: DAGSTER_HOME when set, else <warehouse>/dagster. The UI then shows the "
        "CLI's runs, materializations, round partitions and check results; the schedules and sensors that are turned on run while it "
        "is up. Ctrl-C stops it.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=3000, help="port (default: 3000)")
    add_warehouse_dir(p)
    p.set_defaults(handler=run)


# The installed package has no pyproject.toml for `dg dev`: `dagster dev` loads the definitions module
# through this workspace file, under the same code location name as in the checkout (the name is part
# of every schedule's and sensor's stored on/off state).
WORKSPACE_YAML = """\
# Written by `mlperf-warehouse ui`: the definitions of the installed mlperf-warehouse package.
load_from:
  - python_module:
      module_name: pipelines.definitions
      location_name: mlperf_warehouse
"""


def command(host: str, port: int, home: Path) -> tuple[list[str], Path | None]:
    """`dg dev` in the checkout (its pyproject.toml names the project), else `dagster dev` on the
    definitions module of the installed package."""
    import pipelines
    from pipelines.lib.io.files import atomic_write_text

    scripts = Path(sys.executable).parent
    root = Path(pipelines.__file__).resolve().parent.parent
    pyproject = root / "pyproject.toml"
    if pyproject.exists() and "[tool.dg" in pyproject.read_text(encoding="utf-8"):
        return [str(scripts / "dg"), "dev", "--host", host, "--port", str(port)], root
    workspace = atomic_write_text(home / "workspace.yaml", WORKSPACE_YAML)
    return [str(scripts / "dagster"), "dev", "-w", str(workspace), "-h", host, "-p", str(port)], None


def run(args: argparse.Namespace) -> int:
    export_warehouse_dir(args)
    from pipelines.defs.operations.instance import prepare_home
    from pipelines.lib.io.paths import warehouse_dir

    home = prepare_home()
    # absolute: dg dev runs in the checkout, not in the current directory
    env = os.environ | {"DAGSTER_HOME": str(home), "MLPERF_WAREHOUSE_DIR": str(warehouse_dir())}
    argv, cwd = command(args.host, args.port, home)
    print(f"Dagster UI at http://{args.host}:{args.port} on the instance in {home}; Ctrl-C stops it",
          file=sys.stderr)
    process = subprocess.Popen(argv, cwd=cwd, env=env)
    try:
        return process.wait()
    except KeyboardInterrupt:  # the UI got the same Ctrl-C and shuts down on its own
        return process.wait()
