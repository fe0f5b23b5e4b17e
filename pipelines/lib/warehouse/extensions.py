"""DuckDB extensions from their PyPI packages, never from the network.

`duckdb-extension-<name>` ships `extensions/v<duckdb version>/<name>.duckdb_extension` for one DuckDB
version. `load_extensions` turns DuckDB's automatic download of known extensions off for the connection and
loads each extension from that file. Given a `folder` (the warehouse's own extension folder, `paths.extensions_dir`;
never DuckDB's default in the user's home), it makes that the connection's extension folder and installs each
extension there first (`INSTALL '<path>'`, a copy: a BI tool's DuckDB given that folder as its
`extension_directory` loads it by name); where it cannot be written, the file is loaded where the package put it.
"""

from __future__ import annotations

import importlib.util
import tempfile
from pathlib import Path

import duckdb

from pipelines.lib.warehouse.query import quote_literal

# the name DuckDB knows a loaded extension by, where it differs from its package's
LOADED_AS = {"postgres": "postgres_scanner"}


class ExtensionMissing(Exception):
    """The package that ships an extension for this DuckDB is not installed."""


def extension_file(name: str) -> Path:
    """The extension's file in its PyPI package, for the DuckDB version running here."""
    package = f"duckdb-extension-{name}"
    spec = importlib.util.find_spec(package.replace("-", "_"))
    if spec is None or not spec.submodule_search_locations:
        raise ExtensionMissing(f"the DuckDB extension {name!r} is not installed: pip install "
                               f"{package}=={duckdb.__version__} (team mode loads it from that package)")
    path = Path(next(iter(spec.submodule_search_locations))) / "extensions" / f"v{duckdb.__version__}" / \
        f"{name}.duckdb_extension"
    if not path.is_file():
        raise ExtensionMissing(f"{package} ships no extension for DuckDB {duckdb.__version__} ({path} is missing): "
                               f"install {package}=={duckdb.__version__}, the version of duckdb")
    return path


def load_extensions(con: duckdb.DuckDBPyConnection, *names: str, folder: Path | None = None) -> None:
    """Load each extension on `con` from its package's file (installed into `folder` first, if given); nothing is
    downloaded."""
    con.execute("set autoinstall_known_extensions = false")
    con.execute("set autoload_known_extensions = false")
    if folder is not None:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            con.execute(f"set extension_directory = {quote_literal(str(folder))}")
        except OSError:
            folder = None
    loaded = {n for (n,) in con.execute("select extension_name from duckdb_extensions() where loaded").fetchall()}
    for name in names:
        if LOADED_AS.get(name, name) in loaded:
            continue
        path = extension_file(name)
        try:
            if folder is None:
                raise duckdb.IOException("no extension folder to install into")
            con.execute(f"install {quote_literal(str(path))}")
            con.execute(f"load {name}")
        except duckdb.IOException:  # no folder, or one that cannot be written: the package's file itself
            _load_file(con, name, path)


def _load_file(con: duckdb.DuckDBPyConnection, name: str, path: Path) -> None:
    """LOAD the package's file where it is. DuckDB finds an extension's entry point by its file's name, which for
    some (postgres: postgres_scanner) is not the package's: those are loaded through a link of that name."""
    loaded_as = LOADED_AS.get(name, name)
    if loaded_as == name:
        con.execute(f"load {quote_literal(str(path))}")
        return
    with tempfile.TemporaryDirectory(prefix="mlperf-extension-") as folder:
        link = Path(folder) / f"{loaded_as}.duckdb_extension"
        link.symlink_to(path)
        con.execute(f"load {quote_literal(str(link))}")
