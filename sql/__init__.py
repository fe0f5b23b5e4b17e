"""The SQL models (staging/, intermediate/, marts/) and SQL tests (tests/), shipped as package data."""
