"""Files shipped inside the package (SQL models, seeds, rule tables), found with importlib.resources so
that an installed wheel reads the same files as a checkout, wherever the current directory is."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def package_path(package: str, *parts: str) -> Path:
    """A file or folder shipped in `package`, as a filesystem path (the package is installed unzipped)."""
    return Path(str(files(package).joinpath(*parts)))
