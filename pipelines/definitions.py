import warnings
from pathlib import Path

import dagster as dg

import pipelines.defs


@dg.definitions
def defs() -> dg.Definitions:
    """Everything under `pipelines/defs/`. In a checkout the project's pyproject.toml (beside the package)
    names that folder; an installed copy (a wheel) has none, so the same folder is loaded as a module."""
    here = Path(__file__).parent
    if (here.parent / "pyproject.toml").is_file():
        return dg.load_from_defs_folder(path_within_project=here)
    with warnings.catch_warnings():
        # load_defs is the module-based form of load_from_defs_folder (deprecated only in name).
        warnings.filterwarnings("ignore", message=".*load_defs.*")
        return dg.load_defs(pipelines.defs, project_root=here.parent)
