"""Test helpers (a loopback HTTP server, ...)."""
