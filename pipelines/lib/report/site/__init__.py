"""The static results site (see `builder`)."""

from pipelines.lib.report.site.builder import Site, build_site, github_links, slug

__all__ = ["Site", "build_site", "github_links", "slug"]
