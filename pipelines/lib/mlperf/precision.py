"""The numeric format a run trains in, where its log or its system description states it.

From the 6.0 rules on, a log may state it in MLLOG lines: the optional `lowest_numerical_precision_in_linear`,
`_in_attn` and `_in_comm` keys (AMD's v6.0 logs spell the first `lowest_numerical_precision_linear`), with values
such as `mxfp4`, `nvfp4`, `fp8`, `bfloat16`. Such a statement wins: the linear layers' format is the one model
FLOPs run in. Its value maps to the precision vocabulary through `precision_spellings.csv` (every spelling the
rules allow, and vendors' variants); a value no spelling maps is kept and flagged, never guessed.

Before that, and in logs that do not use those keys, many print the framework's configuration around the MLLOG
lines, and that is where the format is stated:

- NeMo/Megatron configs (NVIDIA, and others on NeMo, LLM benchmarks v4.0 on) print a YAML dump:
  `fp8: true` (next to `precision: bf16-mixed`: FP8 GEMMs with BF16 elsewhere, i.e. an FP8 run);
  `fp8: false` leaves the `precision:` line to decide;
- command lines and argparse dumps: `--fp8`, `fp8=True`, `'fp8': True`;
- older logs: `precision: fp16` (v1.0 MXNet/PyTorch), `precision: bf16-mixed`.

Not evidence of the training format, on purpose: the framework name (NeMo, "Transformer Engine"),
`using fp8 FMHA` / `FP8_MHA` (FP8 attention kernels only; the GEMMs stay 16-bit),
`--fp8_embedding` / `FP8_EMBEDDING=1` (DLRM stores embeddings in FP8), `fp8_*` tuning keys without
`fp8: true`, and "16bit Automatic Mixed Precision" (does not say FP16 or BF16).
Plain functions, no Dagster.
"""

from __future__ import annotations

import csv
import functools
import os
import re

from pipelines.lib.io.package_data import package_path

PRECISION_SPELLINGS_CSV = package_path("pipelines.lib.reference", "precision_spellings.csv")
# `lowest_numerical_precision_in_linear` (the 6.0 rules), `lowest_numerical_precision_linear` (AMD v6.0), and the
# same for attention and communication: what they apply to is read from the key's last word.
_STATEMENT_KEY = re.compile(r"^lowest_(?:numerical_)?precision(?:_in)?(?:_(\w+))?$")
_SCOPES = (("linear", "linear"), ("attn", "attention"), ("attention", "attention"), ("comm", "communication"))


def _scope(word: str | None) -> str:
    """What a statement's key applies to, from its last word (`linear`, `attn`, `comm`; none: overall)."""
    if not word:
        return "overall"
    return next((scope for prefix, scope in _SCOPES if word.startswith(prefix)), f"other ({word})")

# Start of a log line: an optional rank prefix ("  3: ") and shell trace ("+ ").
_LINE = rb"(?im)^[ \t]*(?:\d+:[ \t]*)?(?:\+[ \t]*)?"
_PREFIX = rb"(?:[\w.:]*[ :])?"  # a logger prefix ("INFO:root:") or a parent key ("trainer.")

# Values that switch a format on: NeMo/Megatron take a bool or the FP8 format ('hybrid', 'e4m3'),
# FP4 its recipe ('nvfp4', 'mxfp4', 'e2m1'). `null`, `None`, `false`, `0` leave it off.
_FP8_ON = rb"""['"]?(?:true|1|yes|on|hybrid|e4m3)\b"""
_FP4_ON = rb"""['"]?(?:true|1|yes|on|nvfp4|mxfp4|e2m1)\b"""


def _stated(key: bytes, on: bytes) -> list[re.Pattern[bytes]]:
    """`key: on` (YAML), `--key` (command line), `key=on` (argparse/dataclass repr), `'key': on` (dict)."""
    return [
        re.compile(_LINE + key + rb"[ \t]*:[ \t]*" + on),
        re.compile(rb"(?i)(?<![\w-])--(?:use[_-])?" + key + rb"(?![\w-])"),
        re.compile(rb"(?i)[\s,(]" + key + rb"[ \t]*=[ \t]*" + on),
        re.compile(rb"""(?i)['"]""" + key + rb"""['"][ \t]*:[ \t]*""" + on),
    ]


# (precision, pattern) in order of priority: a log that states FP8 GEMMs also prints `precision: bf16`.
_LOG_RULES: list[tuple[str, re.Pattern[bytes]]] = [
    *(("fp4", pattern) for pattern in _stated(rb"(?:nv|mx)?fp4", _FP4_ON)),
    *(("fp8", pattern) for pattern in _stated(rb"fp8", _FP8_ON)),
    ("bf16", re.compile(_LINE + _PREFIX + rb"precision[ \t]*[:=][ \t]*['\"]?(?:bf16|bfloat16)\b")),
    ("fp16", re.compile(_LINE + _PREFIX + rb"precision[ \t]*[:=][ \t]*['\"]?(?:fp16|16|float16|half)\b")),
]

# Lines are found by plain substring search (fast on multi-MB logs); the rules then run on them.
# The archive reader keeps the lines holding one of these (lower-cased) before `run_start`.
CONFIG_TOKENS = (b"fp8", b"fp4", b"precision")


def _token_groups(tokens: tuple[bytes, ...]) -> list[tuple[bytes, tuple[bytes, ...]]]:
    """Tokens sharing their first two bytes searched as one: (common prefix, tokens)."""
    groups: dict[bytes, list[bytes]] = {}
    for token in tokens:
        groups.setdefault(token[:2], []).append(token)
    return [(os.path.commonprefix(group), tuple(group)) for group in groups.values()]


_CONFIG_GROUPS = _token_groups(CONFIG_TOKENS)  # fp8 and fp4: one pass over the text for "fp"


def config_line_starts(lowered: bytes) -> set[int]:
    """Where the lines of `lowered` (lower-cased text) that hold a CONFIG_TOKEN start."""
    starts = set()
    for prefix, tokens in _CONFIG_GROUPS:
        at = lowered.find(prefix)
        while at >= 0:
            if any(lowered.startswith(token, at) for token in tokens):
                starts.add(lowered.rfind(b"\n", 0, at) + 1)
                end = lowered.find(b"\n", at)
                if end < 0:
                    break
                at = lowered.find(prefix, end)  # the next line
            else:
                at = lowered.find(prefix, at + 1)
    return starts


def _candidate_lines(data: bytes) -> list[bytes]:
    """The lines holding a token before the run starts, in file order, each once.

    The training configuration is printed before `run_start` (in the shared rounds every statement
    sits there, up to 2.4 MB into a log); what follows is training and evaluation output
    ("Average Precision" ...). A log without `run_start` is read whole."""
    run_start = data.find(b"run_start")
    head = data if run_start < 0 else data[:run_start]
    lowered = head.lower()
    out = []
    for start in sorted(config_line_starts(lowered)):
        end = lowered.find(b"\n", start)
        out.append(head[start:len(lowered) if end < 0 else end])
    return out


def log_precision(data: bytes) -> tuple[str | None, str | None]:
    """(precision, the log line that states it) for one result log, or (None, None).

    precision is 'fp4', 'fp8', 'bf16' or 'fp16'."""
    lines = _candidate_lines(data)
    for precision, pattern in _LOG_RULES:
        for line in lines:
            if pattern.search(line):
                return precision, line.decode("latin-1").strip()[:300]
    return None, None


# In a systems file: a word naming the format. "Transformer Engine" or "mixed precision" is not one.
_SYSTEM_RULES: list[tuple[str, re.Pattern[str]]] = [
    ("fp4", re.compile(r"(?i)(?<![a-z0-9])(?:nv|mx)?fp4(?![a-z0-9])")),
    ("fp8", re.compile(r"(?i)(?<![a-z0-9])(?:fp8|float8|e4m3|e5m2)(?![a-z0-9])")),
    ("bf16", re.compile(r"(?i)(?<![a-z0-9])(?:bf16|bfloat16)(?![a-z0-9])")),
]
_NOT_A_STATEMENT = {"system_name", "submitter", "division", "status", "accelerator_model_name",
                    "host_processor_model_name"}


def _strings(value, key: str = ""):
    if isinstance(value, dict):
        for k, v in value.items():
            if str(k).strip().lower() not in _NOT_A_STATEMENT:
                yield from _strings(v, str(k))
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v, key)
    elif isinstance(value, str):
        yield key, value


def system_precision(doc: dict) -> tuple[str | None, str | None]:
    """(precision, 'key: value' that states it) from a system description, or (None, None)."""
    texts = list(_strings(doc))
    for precision, pattern in _SYSTEM_RULES:
        for key, text in texts:
            if pattern.search(text):
                return precision, f"{key}: {text}"[:300]
    return None, None


@functools.cache
def _spellings() -> dict[str, str]:
    with PRECISION_SPELLINGS_CSV.open(newline="", encoding="utf-8") as fh:
        return {row["spelling"].strip().lower(): row["precision"].strip() for row in csv.DictReader(fh)}


def precision_of_spelling(value: object) -> str | None:
    """The precision (vocabulary) a stated value spells, or None when no spelling maps it."""
    if not isinstance(value, str):
        return None
    return _spellings().get(" ".join(value.strip().lower().split()))


def stated_precisions(lines) -> dict[str, tuple[str, str]]:
    """What a log's MLLOG lines state of its lowest numerical precision, by scope (linear, attention,
    communication, overall): scope → (key, value as logged). The first statement of a scope counts."""
    found: dict[str, tuple[str, str]] = {}
    for line in lines:
        key = line.key
        if not key.startswith("lowest_"):
            continue
        m = _STATEMENT_KEY.match(key)
        scope = _scope(m.group(1)) if m else None
        value = line.value.get("value") if isinstance(line.value, dict) else None
        if scope is not None and scope not in found and value is not None:
            found[scope] = (key, str(value)[:100])
    return found


def statement_precision(statements: dict[str, tuple[str, str]]) -> tuple[str | None, str | None, str | None]:
    """(precision, evidence, unmapped) from a log's statements: the linear layers' (else an overall one) decides.
    A value no spelling maps gives no precision and comes back as `unmapped` ("key: value")."""
    for scope in ("linear", "overall"):
        if scope in statements:
            key, value = statements[scope]
            precision = precision_of_spelling(value)
            if precision is None:
                return None, None, f"{key}: {value}"
            return precision, f"{key}: {value}", None
    return None, None, None


def describe_statements(statements: dict[str, tuple[str, str]]) -> str | None:
    """Every statement as logged, `key: value; ...` (NULL when the log states none)."""
    return "; ".join(f"{key}: {value}" for key, value in statements.values()) or None
