"""Team mode's configuration: the DuckLake catalog a refresh publishes into and readers read, and the PostgreSQL
mirror for BI tools. Both are the active run context's (`lib/io/context.py`, built by the settings layer), as the
warehouse folder is; `pipelines/lib` never reads the environment. Unset (the default): the local file is the
warehouse."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, urlsplit

from pipelines.lib.io.context import current
from pipelines.lib.io.redaction import redact_url

KEEP_SNAPSHOTS = 5  # published snapshots kept for rollback, as the local warehouse keeps five builds


@dataclass(frozen=True)
class S3Access:
    """How DuckDB reaches an s3:// data path (a DuckDB S3 secret; unset fields: DuckDB's defaults)."""

    key_id: str | None = None
    secret: str | None = field(default=None, repr=False)  # a secret: never shown
    session_token: str | None = field(default=None, repr=False)
    region: str | None = None
    endpoint: str | None = None  # host[:port] of an S3-compatible store (MinIO, R2, ...)
    url_style: str | None = None  # vhost or path
    use_ssl: bool = True


@dataclass(frozen=True)
class TeamCatalog:
    """The DuckLake: its catalog in PostgreSQL (`url`: postgresql://user:password@host:port/dbname, a secret) and
    where its Parquet files go (`data_path`: a folder every machine mounts at the same path, or s3://bucket/prefix/;
    needed to create the lake, recorded in it, so readers need only the URL)."""

    url: str = field(repr=False)  # a secret: `shown` is what may be printed
    data_path: str | None = None
    s3: S3Access | None = None
    keep_snapshots: int = KEEP_SNAPSHOTS
    extensions: Path | None = None  # the extension folder to install DuckDB's extensions into (None: load only)

    @property
    def shown(self) -> str:
        """The catalog URL as it may be printed: without its credentials."""
        return redact_url(self.url)

    @property
    def on_s3(self) -> bool:
        return bool(self.data_path and self.data_path.lower().startswith("s3://"))


@dataclass(frozen=True)
class BiMirror:
    """The PostgreSQL database (`url`, a secret) whose `schema` a refresh fills with every public table, readable by
    `reader_role`."""

    url: str = field(repr=False)  # a secret
    schema: str = "mlperf"
    reader_role: str = "mlperf_reader"

    @property
    def shown(self) -> str:
        return redact_url(self.url)


# --- what the settings accept (pipelines/settings.py reads each with these) -----------------------------------
_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_REGION = re.compile(r"^[a-z0-9][a-z0-9-]{0,31}$")
_ENDPOINT = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.-]{0,252})(:[0-9]{1,5})?$")


def check_postgres_url(text: str) -> str:
    """A PostgreSQL URL as libpq reads it: postgresql:// (or postgres://), a host (or `?host=` a socket folder) and a
    database. Messages never show its password."""
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"not a URL ({exc}): {redact_url(text)!r}") from None
    if parts.scheme.lower() not in ("postgresql", "postgres"):
        raise ValueError(f"must be a postgresql:// URL, not {redact_url(text)!r}")
    if not parts.hostname and "host=" not in parts.query:
        raise ValueError(f"names no host: {redact_url(text)!r}")
    if not parts.path.strip("/"):
        raise ValueError(f"names no database (postgresql://user@host:5432/DBNAME): {redact_url(text)!r}")
    if port == 0:
        raise ValueError(f"port 0 is no port: {redact_url(text)!r}")
    return text


def check_data_path(text: str) -> str:
    """A DuckLake data path: s3://bucket[/prefix] or an absolute folder (every machine mounts it at the same path:
    the lake records it), returned ending in `/`."""
    if text.lower().startswith("s3://"):
        if not urlsplit(text).netloc:
            raise ValueError(f"names no bucket: {text!r}")
        return text.rstrip("/") + "/"
    if "://" in text:
        raise ValueError(f"must be a folder or s3://bucket/prefix, not {text.split('://')[0]}://")
    if not Path(text).is_absolute():
        raise ValueError(f"must be an absolute folder (the lake records it for every machine), not {text!r}")
    return str(Path(text)) + "/"


def check_identifier(text: str) -> str:
    """A PostgreSQL schema or role name used as it is: lower case letters, digits and _ (no quoting needed)."""
    if not _IDENTIFIER.match(text):
        raise ValueError(f"must be a lower-case PostgreSQL name (letters, digits, _; at most 63), not {text!r}")
    return text


def check_s3_region(text: str) -> str:
    if not _REGION.match(text):
        raise ValueError(f"not an S3 region (e.g. eu-west-1): {text!r}")
    return text


def check_s3_endpoint(text: str) -> str:
    """host[:port] of an S3-compatible store, without scheme or path (`use_ssl` says https or http)."""
    if not _ENDPOINT.match(text):
        raise ValueError(f"must be host[:port], without scheme or path (e.g. minio.internal:9000), not {text!r}")
    return text


def check_s3_url_style(text: str) -> str:
    if text.lower() not in ("vhost", "path"):
        raise ValueError(f"must be vhost or path, not {text!r}")
    return text.lower()


def team_catalog_of(url: str | None, data_path: str | None, s3: S3Access,
                    extensions: Path | None = None) -> TeamCatalog | None:
    """The team catalog the settings describe, or None; ValueError when they do not fit together."""
    given_s3 = [name for name in ("key_id", "secret", "session_token", "region", "endpoint", "url_style")
                if getattr(s3, name)]
    if url is None:
        if data_path or given_s3:
            raise ValueError("MLPERF_CATALOG_DATA_PATH and the MLPERF_S3_* settings need MLPERF_CATALOG (the team "
                             "catalog they belong to)")
        return None
    on_s3 = bool(data_path and data_path.lower().startswith("s3://"))
    if given_s3 and data_path and not on_s3:  # a reader gives no data path: the lake records it, maybe on S3
        raise ValueError("the MLPERF_S3_* settings apply to an s3:// MLPERF_CATALOG_DATA_PATH only")
    if bool(s3.key_id) != bool(s3.secret):
        raise ValueError("MLPERF_S3_ACCESS_KEY_ID and MLPERF_S3_SECRET_ACCESS_KEY go together: set both or neither")
    if s3.session_token and not s3.key_id:
        raise ValueError("MLPERF_S3_SESSION_TOKEN needs MLPERF_S3_ACCESS_KEY_ID and MLPERF_S3_SECRET_ACCESS_KEY")
    return TeamCatalog(url, data_path, s3 if on_s3 or (given_s3 and not data_path) else None, extensions=extensions)


def team_catalog() -> TeamCatalog | None:
    return current().team_catalog


def bi_mirror() -> BiMirror | None:
    return current().bi_mirror


def local_sqlalchemy_url(published: Path) -> str:
    """What a BI tool (Superset, Metabase's DuckDB driver, a notebook) opens the local file with: duckdb-engine,
    read-only (a refresh publishes a new file beside it: recycle pooled connections to see it)."""
    return f"duckdb:///{quote(str(published.resolve()))}?access_mode=read_only"


def libpq_keywords(url: str) -> str:
    """The PostgreSQL URL as libpq's keyword form without its password (`dbname=db host=h port=5432 user=u
    sslmode=require`): what a SQLAlchemy URL can carry inside its database part, whose own `?` would otherwise
    swallow the catalog URL's parameters."""
    from urllib.parse import parse_qsl, unquote

    parts = urlsplit(url)
    pairs = [("dbname", unquote(parts.path.lstrip("/"))), ("host", parts.hostname), ("port", parts.port),
             ("user", unquote(parts.username) if parts.username else None)]
    pairs += [(k, v) for k, v in parse_qsl(parts.query) if k != "password"]

    def value(text: object) -> str:
        text = str(text)
        if text and not re.search(r"[\s'\\]", text):
            return text
        return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"

    return " ".join(f"{k}={value(v)}" for k, v in pairs if v not in (None, ""))


def team_sqlalchemy_url(catalog: TeamCatalog, extensions: Path) -> str:
    """The same for the team catalog: DuckDB opens the DuckLake as its database (`ducklake:postgres:<libpq
    keywords>`), loading `ducklake` and `postgres` by name from `extensions` (the warehouse's extension folder,
    which a refresh or any command in team mode fills from the PyPI packages), never downloading one. Without
    the password: a tool is given it as libpq's PGPASSWORD (or ~/.pgpass)."""
    return (f"duckdb:///ducklake:postgres:{libpq_keywords(catalog.url)}?access_mode=read_only"
            f"&extension_directory={quote(str(extensions.resolve()))}&autoinstall_known_extensions=false")
