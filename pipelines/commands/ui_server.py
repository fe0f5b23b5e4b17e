"""The Dagster webserver of `mlperf-warehouse ui`, served in this process behind `ui_guard.RequestGuard`,
read-only unless launching is allowed.

`dagster-webserver` offers no hook for a middleware, so the app is built here the way its CLI builds it.
This module is the one place that uses Dagster's private webserver API (`WorkspaceProcessContext`,
`WorkspaceFileTarget`); tests/integration/test_ui_security.py and test_dagster_ui.py exercise it, and a
Dagster upgrade must keep them passing.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path

import dagster as dg
import uvicorn
from dagster._core.workspace.context import WorkspaceProcessContext
from dagster._core.workspace.load_target import WorkspaceFileTarget
from dagster_webserver.app import create_app_from_workspace_process_context
from dagster_webserver.version import __version__

from pipelines.commands.ui_guard import RequestGuard, allowed_hosts


@contextlib.asynccontextmanager
async def _lifespan(_app):
    try:
        yield
    except BaseException:  # Ctrl-C cancels the server task: a normal end  # noqa: BLE001
        pass


def serve(workspace: Path, host: str, port: int, *, read_only: bool) -> None:
    """Serve the UI of the instance in DAGSTER_HOME until interrupted."""
    with dg.DagsterInstance.get() as instance, WorkspaceProcessContext(
        instance, version=__version__, read_only=read_only,
        workspace_load_target=WorkspaceFileTarget(paths=[str(workspace)]),
    ) as context:
        app = create_app_from_workspace_process_context(context, "", lifespan=_lifespan)
        logging.getLogger("uvicorn.error").setLevel(logging.WARNING)
        uvicorn.run(RequestGuard(app, allowed_hosts(host, port)), host=host, port=port, log_level="warning")
