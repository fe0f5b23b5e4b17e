"""The rules a round's runs are judged by, as published and today's, and when the two judge a log alike."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from pipelines.lib.mlperf.rcp_records import RcpRules
from pipelines.lib.mlperf.rules import RuleSet


@dataclass(frozen=True)
class RoundRules:
    """The rules a round's runs are judged by: as published (the round's own release) and today's
    pinned package. None means no rules exist for the generation (v0.5): start, stop, success; `current` is
    None as well where the package ships none of the round's rules (`current_missing` says so, and the
    scorer gives no verdict under today's rules)."""

    published: RuleSet | None
    current: RuleSet | None
    rcp: RcpRules | None = None  # the published release's RCP checker (Training, from release 1.0 on)
    # why today's rules give no verdict on the round (rules.current_rules_missing), else None
    current_missing: str | None = None

    @cached_property
    def _differing_files(self) -> frozenset[str]:
        return self.published.differing_files(self.current)

    def same_verdict(self, configs: frozenset[str]) -> bool:
        """Would today's rules judge a log as the published ones did, given the rule files that
        decided the published verdict? Yes when those files are the same text in both releases and
        the two checkers differ in nothing those files exercise. (Most logs of a round run the same
        few config sets: the answer is kept per set.)"""
        known = self.__dict__.setdefault("_verdicts_by_configs", {})
        if configs not in known:
            known[configs] = self._same_verdict(configs)
        return known[configs]

    def _same_verdict(self, configs: frozenset[str]) -> bool:
        p, c = self.published, self.current
        if p is None or c is None:
            return p is None and c is None
        if p.entry != c.entry or configs & self._differing_files:
            return False
        text = "".join(p.config_text(name) or "" for name in sorted(configs))
        return p.semantics.exercised_by(text) == c.semantics.exercised_by(text)
