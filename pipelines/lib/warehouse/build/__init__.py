"""Build the DuckDB warehouse from staged files and publish it atomically.

A build goes into its own file under `builds/`; the SQL models run there, then the SQL tests; only
if every test passes is the build checkpointed and hard-linked into place as `mlperf.duckdb`
(`os.replace`, atomic). Readers holding the old file keep reading it; nobody ever opens the
published file for writing.

One module per responsibility, each calling only those below it (`.importlinter`):

- `core`: `build()`: the skip decision (inputs' fingerprint against the published build's) and the loop that
  leaves out the rounds whose new data fails a structural test;
- `attempt`: one DuckDB attempt: every model into a new build file, every SQL test;
- `inputs`: the staged files as raw tables, the raw tables computed in Python, the inputs' fingerprint;
- `outcomes`: each SQL test's outcome, and the rounds a structural failure is the fault of.

Publishing, republishing, pruning, rollback and the verified-build record are the store's
(`pipelines.lib.warehouse.store`), which the build calls and which never calls back.
"""

from pipelines.lib.warehouse.build.core import BuildResult, ModelStats, build
from pipelines.lib.warehouse.build.inputs import input_fingerprint
from pipelines.lib.warehouse.build.outcomes import BuildFailed, TestOutcome
from pipelines.lib.warehouse.store import published_opens

__all__ = ["BuildFailed", "BuildResult", "ModelStats", "TestOutcome", "build", "input_fingerprint", "published_opens"]
