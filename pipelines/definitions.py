import warnings
from pathlib import Path

import dagster as dg

import pipelines.defs


@dg.definitions
def defs() -> dg.Definitions:
    """Everything under `pipelines/defs/`. In a checkout the project's pyproject.toml names that folder;
    an installed copy (a wheel) has no pyproject.toml, so the same folder is loaded as a module."""
    here = Path(__file__).parent
    if any((parent / name).is_file() for parent in here.parents for name in ("pyproject.toml", "dg.toml")):
        try:
            return dg.load_from_defs_folder(path_within_project=here)
        except Exception as exc:  # a pyproject.toml above site-packages that is not this project's
            if "Could not find config file" not in str(exc):
                raise
    with warnings.catch_warnings():
        # load_defs is the module-based form of load_from_defs_folder (deprecated only in name).
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.filterwarnings("ignore", message=".*load_defs.*")
        return dg.load_defs(pipelines.defs, project_root=here.parent)
