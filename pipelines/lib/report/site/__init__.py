"""The static results site (see `builder`)."""

from pipelines.lib.report.site.builder import SITE_MARKER, Site, build_site, github_links, slug, write_site

__all__ = ["SITE_MARKER", "Site", "build_site", "github_links", "slug", "write_site"]
