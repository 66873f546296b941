"""``zerolint capture``: which CUDA-graph capture sizes of a vLLM deployment fault.

vLLM 0.27.1 captures a FULL decode CUDA graph for each capture size; the warm-up before
each capture builds the DeepSeek-V4 indexer metadata from a dummy decode batch whose
lengths, floor-divided by the compress ratio, are all 0 (docs/hazards/ZL001.md). When the
kernel batch is also a multiple of 32, DeepGEMM's SM90 metadata scheduler faults.

This module computes the capture sizes with vLLM 0.27.1's formula (``_set_cudagraph_sizes``
and the spec-decode rounding; ``--gpu sm100`` takes the 1024 default cap of vLLM 0.33),
describes the dummy batch of each FULL decode graph, and asks the SMT judge (``smt``)
which sizes fault. It also asks about the runtime batches that need no capture: an idle
data-parallel rank padded to a FULL batch, and live decode requests all shorter than the
ratio. Tensor-parallel sequence parallelism, model runner V2 and vLLM 0.33's other
sizing changes are not modelled.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from zerolint import decode_model, smt
from zerolint.gpus import GPU_CHOICES, UNAFFECTED_GPUS
from zerolint.hazards import Predicate
from zerolint.model import Op, Verdict
from zerolint.rules import rule_by_code

# `vllm serve` defaults (engine/arg_utils.py, get_batch_defaults): 1024 sequences on GPUs
# with >= 70 GiB; 8192 batched tokens on an H100/H200, 16384 from 160 GiB (B200, vLLM 0.33).
DEFAULT_MAX_NUM_SEQS = 1024
DEFAULT_MAX_NUM_BATCHED_TOKENS = {"sm90": 8192, "sm100": 16384}
# The default ceiling of the capture sizes: 512 on SM90; vLLM 0.33 raises it to 1024 on
# the SM100 family.
DEFAULT_CAPTURE_CAP = {"sm90": 512, "sm100": 1024}
DEFAULT_COMPRESS_RATIOS = (4,)  # V4: only ratio-4 layers have an indexer
PERFORMANCE_MODES = ("balanced", "interactivity", "throughput")
CUDAGRAPH_MODES = ("NONE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE")
# -O levels (config/vllm.py OPTIMIZATION_LEVEL_0x): the cudagraph mode each one sets.
OPTIMIZATION_CUDAGRAPH_MODE = {
    0: "NONE",
    1: "PIECEWISE",
    2: "FULL_AND_PIECEWISE",
    3: "FULL_AND_PIECEWISE",
}
RATIO_SYMBOL = "compress_ratio"
# Bounds on what --cudagraph-capture-sizes may name: vLLM captures a graph per size (a few
# dozen in practice), and a size is a batch of tokens no GPU holds 2**24 of.
MAX_CAPTURE_SIZES = 65_536
MAX_CAPTURE_SIZE = 1 << 24


class CaptureConfigError(ValueError):
    """A configuration vLLM itself would reject, or an argument zerolint cannot read."""


@dataclass(frozen=True, slots=True)
class CaptureConfig:
    """The `vllm serve` inputs that decide the capture sizes; None means vLLM's default."""

    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    max_cudagraph_capture_size: int | None = None
    cudagraph_capture_sizes: tuple[int, ...] | None = None
    num_speculative_tokens: int = 0
    performance_mode: str = "balanced"
    compress_ratios: tuple[int, ...] = DEFAULT_COMPRESS_RATIOS
    gpu: str = "sm90"
    clamp: bool = False
    cudagraph_mode: str = "FULL_AND_PIECEWISE"
    enforce_eager: bool = False
    data_parallel_size: int = 1

    def __post_init__(self) -> None:
        _check_choice("gpu", self.gpu, tuple(DEFAULT_CAPTURE_CAP))
        _check_choice("performance mode", self.performance_mode, PERFORMANCE_MODES)
        _check_choice("cudagraph mode", self.cudagraph_mode, CUDAGRAPH_MODES)
        if self.cudagraph_mode == "FULL":
            raise CaptureConfigError(
                "cudagraph mode FULL captures mixed batches, which zerolint does not model "
                "(FULL_AND_PIECEWISE and FULL_DECODE_ONLY are)"
            )
        for name in ("max_num_seqs", "max_num_batched_tokens", "max_cudagraph_capture_size"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise CaptureConfigError(f"{name} must be >= 1, got {value}")
        if self.num_speculative_tokens < 0:
            raise CaptureConfigError(
                f"num_speculative_tokens must be >= 0, got {self.num_speculative_tokens}"
            )
        if not self.compress_ratios or min(self.compress_ratios) < 1:
            raise CaptureConfigError(f"compress ratios must be >= 1, got {self.compress_ratios}")
        if self.cudagraph_capture_sizes is not None and (
            not self.cudagraph_capture_sizes or min(self.cudagraph_capture_sizes) < 1
        ):
            raise CaptureConfigError("cudagraph capture sizes must be sizes >= 1, at least one")
        if self.data_parallel_size < 1:
            raise CaptureConfigError(
                f"data_parallel_size must be >= 1, got {self.data_parallel_size}"
            )
        # vLLM 0.27.1's SchedulerConfig.verify_max_model_len (config/scheduler.py) refuses
        # this at start-up; a default max_num_seqs is never above the batched tokens.
        if self.batched_tokens < self.seqs:
            raise CaptureConfigError(
                f"max_num_batched_tokens ({self.batched_tokens}) must be greater than or equal "
                f"to max_num_seqs ({self.seqs}); vLLM refuses to start otherwise"
            )

    @property
    def next_n(self) -> int:
        """Query tokens per decode request: 1 + speculative tokens."""
        return 1 + self.num_speculative_tokens

    @property
    def seqs(self) -> int:
        """max_num_seqs after vLLM's defaults: doubled in throughput mode, and a default
        never above max_num_batched_tokens."""
        if self.max_num_seqs is not None:
            return self.max_num_seqs
        return min(self._default(DEFAULT_MAX_NUM_SEQS), self.batched_tokens)

    @property
    def batched_tokens(self) -> int:
        """max_num_batched_tokens after vLLM's defaults (doubled in throughput mode)."""
        if self.max_num_batched_tokens is not None:
            return self.max_num_batched_tokens
        return self._default(DEFAULT_MAX_NUM_BATCHED_TOKENS[self.gpu])

    def _default(self, value: int) -> int:
        return value * 2 if self.performance_mode == "throughput" else value

    @property
    def full_decode_graphs(self) -> bool:
        full_decode = ("FULL_DECODE_ONLY", "FULL_AND_PIECEWISE")
        return not self.enforce_eager and self.cudagraph_mode in full_decode

    @property
    def shape(self) -> decode_model.DecodeShape:
        """SM90 reads 2-D lens natively only for next_n 1 and 2 and flattens the rest;
        SM100 reads any next_n natively (indexer.py, use_flattening)."""
        native = self.gpu == "sm100" or self.next_n in (1, 2)
        return decode_model.DecodeShape(next_n=self.next_n, native=native)

    def builder_ops(self) -> tuple[Op, ...]:
        """What the indexer's metadata builder does to each length before the kernel."""
        ops = (Op("floordiv", RATIO_SYMBOL),)
        return ops + ((Op("clamp_min", 1),) if self.clamp else ())

    def ratio_domain(self) -> dict[str, tuple[int, ...]]:
        return {RATIO_SYMBOL: tuple(sorted(set(self.compress_ratios)))}


@dataclass(frozen=True, slots=True)
class SizeRow:
    """One capture size: the dummy batch its FULL decode graph builds, and the verdict."""

    size: int
    full_decode: bool
    kernel_batch: int | None
    next_n: int
    lens: dict[int, tuple[int, ...]]  # compress ratio -> lengths the kernel reads, per request
    hazard: bool


@dataclass(frozen=True, slots=True)
class RuntimeCase:
    """A batch that can fault while serving, with no capture involved."""

    short: str
    name: str
    verdict: Verdict
    exposed: bool
    note: str = ""


@dataclass(slots=True)
class CaptureResult:
    config: CaptureConfig
    rows: list[SizeRow]
    runtime: list[RuntimeCase] = field(default_factory=list)

    @property
    def hazardous_sizes(self) -> list[int]:
        return [row.size for row in self.rows if row.hazard]

    @property
    def full_decode_sizes(self) -> list[int]:
        return [row.size for row in self.rows if row.full_decode]

    @property
    def exposed(self) -> bool:
        """A capture size faults, or an exposed runtime case is not proved safe."""
        runtime = any(c.exposed and c.verdict.status != "safe" for c in self.runtime)
        return bool(self.hazardous_sizes) or runtime

    def summary(self) -> str:
        """One line: ``51 capture sizes, 51 FULL decode graphs, 16 hazardous; runtime: ...``."""
        line = (
            f"{len(self.rows)} capture sizes, {len(self.full_decode_sizes)} FULL decode graphs, "
            f"{len(self.hazardous_sizes)} hazardous"
        )
        unsafe = [c.short for c in self.runtime if c.exposed and c.verdict.status != "safe"]
        return line + "; runtime: " + (", ".join(unsafe) + " can fault" if unsafe else "safe")


# ---------------------------------------------------------------- capture sizes


def capture_sizes(config: CaptureConfig) -> list[int]:
    """The CUDA-graph capture sizes vLLM 0.27.1 ends up with for ``config``, ascending.

    ``_set_cudagraph_sizes`` (config/vllm.py), then, with FULL decode graphs and
    speculative tokens, ``adjust_cudagraph_sizes_for_spec_decode`` (config/compilation.py).
    Raises CaptureConfigError where vLLM raises.
    """
    if config.enforce_eager or config.cudagraph_mode == "NONE":
        return []
    max_tokens = config.batched_tokens
    cap = config.max_cudagraph_capture_size
    if cap is None:
        cap = min(config.seqs * config.next_n * 2, DEFAULT_CAPTURE_CAP[config.gpu])
    cap = min(max_tokens, cap)
    if config.cudagraph_capture_sizes is not None:
        sizes = sorted({s for s in config.cudagraph_capture_sizes if s <= max_tokens})
    else:
        _check_default_cap(cap)
        sizes = _default_sizes(cap, max_tokens, config.performance_mode)
    largest = sizes[-1] if sizes else 0
    if (
        config.cudagraph_capture_sizes is not None
        and config.max_cudagraph_capture_size is not None
        and config.max_cudagraph_capture_size != largest
    ):
        raise CaptureConfigError(
            f"max_cudagraph_capture_size ({config.max_cudagraph_capture_size}) must equal the "
            f"largest cudagraph capture size ({largest})"
        )
    if config.full_decode_graphs and config.next_n > 1 and sizes:
        sizes = _round_for_spec_decode(sizes, config.next_n, largest)
    return sizes


def _check_default_cap(cap: int) -> None:
    """The limits a list of sizes given is held to (``MAX_CAPTURE_SIZE``,
    ``MAX_CAPTURE_SIZES``), for the sizes vLLM would make up to ``cap``: every 16 tokens
    above 256."""
    if cap > MAX_CAPTURE_SIZE:
        raise CaptureConfigError(
            f"max_cudagraph_capture_size: a capture size is a batch of 1 to "
            f"{MAX_CAPTURE_SIZE:,} tokens, not {cap:,}"
        )
    if len(range(256, cap + 1, 16)) > MAX_CAPTURE_SIZES - 64:  # 63 at most below 256
        raise CaptureConfigError(
            f"max_cudagraph_capture_size {cap:,} makes more than {MAX_CAPTURE_SIZES:,} capture "
            "sizes (one every 16 tokens above 256), the most that are checked"
        )


def _default_sizes(cap: int, max_tokens: int, mode: str) -> list[int]:
    if mode == "interactivity":
        sizes = list(range(1, min(cap, 32) + 1))
    else:
        sizes = [s for s in (1, 2, 4) if s <= cap]
    if cap >= 8:
        sizes += range(8, min(cap + 1, 256), 8)
    if cap >= 256:
        sizes += range(256, cap + 1, 16)
    if max_tokens <= cap:  # the largest batch is captured even off the stride
        sizes.append(max_tokens)
    return sorted(set(sizes))


def _round_for_spec_decode(sizes: list[int], multiple: int, largest: int) -> list[int]:
    rounded = sorted({up for s in sizes if (up := -(-s // multiple) * multiple) <= largest})
    if not rounded and multiple <= largest:
        rounded = [multiple]
    if not rounded:
        raise CaptureConfigError(
            f"no capture size is left after rounding to multiples of {multiple} "
            f"(num_speculative_tokens + 1); the largest size is {largest}"
        )
    return rounded


def full_decode_sizes(config: CaptureConfig, sizes: Sequence[int]) -> list[int]:
    """The sizes that get a FULL decode graph: next_n <= size <= next_n * max_num_seqs."""
    if not config.full_decode_graphs:
        return []
    return [s for s in sizes if config.next_n <= s <= config.next_n * config.seqs]


# ---------------------------------------------------------------- analysis


def analyze(config: CaptureConfig) -> CaptureResult:
    """Capture sizes with their dummy batches and hazards, plus the runtime cases.

    The dummy batch of a FULL decode graph of N tokens is N / next_n requests, each of
    length next_n (gpu_model_runner._dummy_run). Hazards come from the SMT judge.
    """
    sizes = capture_sizes(config)
    decode = full_decode_sizes(config, sizes)
    shape, ops, ratios = config.shape, config.builder_ops(), config.ratio_domain()
    faulting = set(
        decode_model.faulting_sizes(
            shape, ops, decode, seq_len=config.next_n, predicate=_fault(), ratios=ratios
        )
    )
    lens = _dummy_lens(config)
    decode_set = set(decode)
    rows = [
        SizeRow(
            size=size,
            full_decode=size in decode_set,
            kernel_batch=shape.kernel_batch(size // config.next_n) if size in decode_set else None,
            next_n=config.next_n,
            lens=lens if size in decode_set else {},
            hazard=size in faulting,
        )
        for size in sizes
    ]
    return CaptureResult(config, rows, _runtime_cases(config, decode))


def _fault() -> Predicate:
    """The kernel's fault, as rules/ZL001.toml declares it."""
    rule = rule_by_code("ZL001")
    assert rule is not None, "rules/ZL001.toml is shipped with zerolint"
    return rule.predicate


def _dummy_lens(config: CaptureConfig) -> dict[int, tuple[int, ...]]:
    read = config.shape.read_lengths(config.next_n)
    ops = config.builder_ops()
    return {
        ratio: tuple(smt.evaluate(ops, length, {RATIO_SYMBOL: ratio}) for length in read)
        for ratio in sorted(set(config.compress_ratios))
    }


def _runtime_cases(config: CaptureConfig, decode: Sequence[int]) -> list[RuntimeCase]:
    shape, ops, ratios = config.shape, config.builder_ops(), config.ratio_domain()
    fault = _fault()
    live = decode_model.live_decode_verdict(
        shape,
        ops,
        min_seq_len=config.next_n,
        max_requests=config.seqs,
        predicate=fault,
        ratios=ratios,
    )
    if decode:
        idle = decode_model.idle_rank_verdict(
            shape, ops, decode, seq_len=config.next_n, predicate=fault, ratios=ratios
        )
    else:
        idle = Verdict("safe", reason="no FULL decode graph to pad to")
    dp = config.data_parallel_size
    return [
        RuntimeCase("live decode", "live decode requests shorter than the ratio", live, True),
        RuntimeCase(
            "idle DP rank",
            "idle data-parallel rank padded to a FULL batch",
            idle,
            exposed=dp > 1,
            note="" if dp > 1 else "does not apply: --data-parallel-size is 1, no rank is idle",
        ),
    ]


# ---------------------------------------------------------------- vllm serve arguments


def parse_vllm_args(text: str, unknown: list[str] | None = None) -> dict[str, Any]:
    """CaptureConfig fields from a `vllm serve` argument string. Flags that do not change
    the capture sizes are skipped; a flag that is neither read nor one of vLLM's common
    others (a typo such as ``--max-num-seq``) is skipped too, and appended to ``unknown``
    as a warning line when a list is given.

    Reads --max-num-seqs, --max-num-batched-tokens, --max-cudagraph-capture-size,
    --cudagraph-capture-sizes, --speculative-config/-sc (JSON or dotted keys),
    --spec-tokens, --compilation-config/-cc, -O/--optimization-level, --performance-mode,
    --enforce-eager and --data-parallel-size/-dp, in vLLM's spellings (``_`` or ``-``,
    ``--flag=value``).
    """
    try:
        tokens = shlex.split(text)
    except ValueError as exc:
        raise CaptureConfigError(f"--vllm-args: {exc}") from None
    for token in tokens:  # a switch given a value: vLLM's parser refuses it
        if re.match(r"--(no[-_])?enforce[-_]eager=", token):
            raise CaptureConfigError(
                f"--vllm-args: {token}: --enforce-eager takes no value (vLLM refuses one; "
                "--no-enforce-eager turns it off)"
            )
    fields: dict[str, Any] = {}
    level_mode: str | None = None
    for flag, values in _flags(tokens):
        base, _, key = flag.partition(".")
        if base in ("--compilation-config", "-cc"):
            fields.update(_compilation_fields(_json_or_dotted(flag, key, values)))
        elif base in ("--speculative-config", "-sc"):
            spec = _json_or_dotted(flag, key, values)
            if spec.get("method") == "dspark":
                raise CaptureConfigError(
                    "--vllm-args: speculative method dspark runs vLLM's model runner V2, "
                    "whose capture sizes zerolint does not model"
                )
            if "num_speculative_tokens" in spec:
                fields["num_speculative_tokens"] = _int(flag, spec["num_speculative_tokens"])
        elif flag in ("-O", "--optimization-level"):
            level = _int(flag, _one(flag, values))
            if level not in OPTIMIZATION_CUDAGRAPH_MODE:
                raise CaptureConfigError(f"--vllm-args: {flag} expects 0-3, got {level}")
            level_mode = OPTIMIZATION_CUDAGRAPH_MODE[level]
        elif flag == "--enforce-eager":  # a switch: what follows is another argument
            fields["enforce_eager"] = True
        elif flag == "--no-enforce-eager":
            fields["enforce_eager"] = False
        elif flag == "--cudagraph-capture-sizes":
            fields["cudagraph_capture_sizes"] = _sizes(flag, values)
        elif flag in _INT_FLAGS:
            fields[_INT_FLAGS[flag]] = _int(flag, _one(flag, values))
        elif flag == "--performance-mode":
            fields["performance_mode"] = _one(flag, values)
        elif unknown is not None and base not in OTHER_VLLM_FLAGS:
            unknown.append(_unknown_flag(base))
    if level_mode is not None:  # an -O level sets the mode unless the config names one
        fields.setdefault("cudagraph_mode", level_mode)
    return fields


# `vllm serve` flags that do not change the capture sizes: read past without a warning.
OTHER_VLLM_FLAGS = frozenset(
    [
        "--model",
        "--tokenizer",
        "--revision",
        "--code-revision",
        "--tokenizer-revision",
        "--tokenizer-mode",
        "--trust-remote-code",
        "--download-dir",
        "--load-format",
        "--dtype",
        "--kv-cache-dtype",
        "--seed",
        "--max-model-len",
        "--max-seq-len-to-capture",
        "--served-model-name",
        "--host",
        "--port",
        "--api-key",
        "--uds",
        "--uvicorn-log-level",
        "--disable-log-requests",
        "--disable-log-stats",
        "--enable-log-requests",
        "--tensor-parallel-size",
        "-tp",
        "--pipeline-parallel-size",
        "-pp",
        "--data-parallel-rank",
        "--data-parallel-size-local",
        "-dpl",
        "--data-parallel-address",
        "-dpa",
        "--data-parallel-rpc-port",
        "-dpp",
        "--data-parallel-backend",
        "-dpb",
        "--data-parallel-hybrid-lb",
        "--data-parallel-external-lb",
        "--headless",
        "--api-server-count",
        "--enable-expert-parallel",
        "--no-enable-expert-parallel",
        "--enable-eplb",
        "--expert-placement-strategy",
        "--all2all-backend",
        "--distributed-executor-backend",
        "--gpu-memory-utilization",
        "--kv-cache-memory",
        "--swap-space",
        "--cpu-offload-gb",
        "--block-size",
        "--enable-prefix-caching",
        "--no-enable-prefix-caching",
        "--prefix-caching-hash-algo",
        "--enable-chunked-prefill",
        "--no-enable-chunked-prefill",
        "--max-num-partial-prefills",
        "--long-prefill-token-threshold",
        "--scheduling-policy",
        "--async-scheduling",
        "--no-async-scheduling",
        "--quantization",
        "-q",
        "--enforce-eager",
        "--chat-template",
        "--chat-template-content-format",
        "--tool-call-parser",
        "--enable-auto-tool-choice",
        "--reasoning-parser",
        "--tool-parser-plugin",
        "--generation-config",
        "--override-generation-config",
        "--hf-overrides",
        "--hf-config-path",
        "--limit-mm-per-prompt",
        "--mm-processor-kwargs",
        "--max-logprobs",
        "--disable-sliding-window",
        "--disable-cascade-attn",
        "--enable-lora",
        "--max-loras",
        "--max-lora-rank",
        "--lora-modules",
        "--attention-backend",
        "--config",
        "--kv-transfer-config",
        "--kv-events-config",
        "--otlp-traces-endpoint",
        "--collect-detailed-traces",
        "--enable-sleep-mode",
        "--safetensors-load-strategy",
        "--model-loader-extra-config",
        "--ignore-patterns",
        "--use-tqdm-on-load",
        "--pt-load-map-location",
        "--structured-outputs-config",
        "--reasoning-config",
        "--compilation-config",
        "--speculative-config",
        "--worker-cls",
        "--worker-extension-cls",
        "--ssl-keyfile",
        "--ssl-certfile",
        "--root-path",
        "--middleware",
        "--allowed-origins",
        "--allowed-methods",
        "--allowed-headers",
        "--response-role",
        "--log-config-file",
        "--max-num-batched-tokens",
        "--max-num-seqs",
        "--max-cudagraph-capture-size",
        "--cudagraph-capture-sizes",
        "--spec-tokens",
        "--num-speculative-tokens",
        "--performance-mode",
        "--optimization-level",
        "-O",
        "-cc",
        "-sc",
        "--data-parallel-size",
        "-dp",
        "--no-enforce-eager",
    ]
)


def _unknown_flag(flag: str) -> str:
    import difflib

    close = difflib.get_close_matches(flag, sorted(OTHER_VLLM_FLAGS), n=1, cutoff=0.8)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"--vllm-args: {flag} is not a vLLM flag zerolint knows{hint}; it is ignored"


_INT_FLAGS = {
    "--max-num-seqs": "max_num_seqs",
    "--max-num-batched-tokens": "max_num_batched_tokens",
    "--max-cudagraph-capture-size": "max_cudagraph_capture_size",
    "--spec-tokens": "num_speculative_tokens",
    "--num-speculative-tokens": "num_speculative_tokens",
    "--data-parallel-size": "data_parallel_size",
    "-dp": "data_parallel_size",
}


def _flags(tokens: list[str]) -> Iterator[tuple[str, list[str]]]:
    """(flag, values) pairs: values are the tokens up to the next flag. ``--a_b=v``
    becomes ``--a-b`` with ``[v]`` and ``-O3`` becomes ``-O`` with ``["3"]``, as vLLM's
    FlexibleArgumentParser does."""
    flag: str | None = None
    values: list[str] = []
    for token in tokens:
        if _is_flag(token):
            if flag is not None:
                yield flag, values
            flag, values = _normalize(token)
        elif flag is not None:
            values.append(token)
    if flag is not None:
        yield flag, values


def _is_flag(token: str) -> bool:
    return token.startswith("-") and not _is_number(token)


def _is_number(token: str) -> bool:
    try:
        int(token)
    except ValueError:
        return False
    return True


def _normalize(token: str) -> tuple[str, list[str]]:
    if token.startswith("--"):
        key, eq, value = token.partition("=")
        base, dot, rest = key.partition(".")
        return base.replace("_", "-") + dot + rest, [value] if eq else []
    if token.startswith("-O") and token != "-O":
        return "-O", [token[3:] if token[2:3] == "=" else token[2:]]
    key, eq, value = token.partition("=")
    return key, [value] if eq else []


def _json_or_dotted(flag: str, key: str, values: list[str]) -> dict[str, Any]:
    """``--cc '{"a": 1}'`` or ``--cc.a 1`` (vLLM's dotted form) as a dict."""
    raw = _one(flag, values)
    if key:
        try:
            value: Any = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        return {key: value}
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise CaptureConfigError(f"--vllm-args: {flag} is not valid JSON: {exc.msg}") from None
    if not isinstance(parsed, dict):
        raise CaptureConfigError(f"--vllm-args: {flag} must be a JSON object")
    return parsed


def _compilation_fields(config: dict[str, Any]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    if config.get("cudagraph_capture_sizes") is not None:
        sizes = config["cudagraph_capture_sizes"]
        if not isinstance(sizes, list):
            sizes = [sizes]
        fields["cudagraph_capture_sizes"] = tuple(_int("cudagraph_capture_sizes", s) for s in sizes)
    if config.get("max_cudagraph_capture_size") is not None:
        fields["max_cudagraph_capture_size"] = _int(
            "max_cudagraph_capture_size", config["max_cudagraph_capture_size"]
        )
    if config.get("cudagraph_mode") is not None:
        fields["cudagraph_mode"] = str(config["cudagraph_mode"]).upper()
    return fields


def _sizes(flag: str, values: list[str]) -> tuple[int, ...]:
    """Sizes as vLLM takes them (``8 16 32``) or as a JSON list, plus ``1,2,4`` and
    ``1..1024`` (inclusive) for the command line."""
    if not values:
        raise CaptureConfigError(f"{flag} expects at least one size")
    sizes: list[int] = []
    for value in values:
        if value.startswith("["):
            try:
                items = json.loads(value)
            except json.JSONDecodeError:
                raise CaptureConfigError(f"{flag}: not a JSON list: {value!r}") from None
            sizes += [_int(flag, item) for item in items]
            continue
        for part in filter(None, value.split(",")):
            lo, dots, hi = part.partition("..")
            if dots:
                first, last = _int(flag, lo), _int(flag, hi)
                if last - first + 1 > MAX_CAPTURE_SIZES - len(sizes):
                    raise CaptureConfigError(
                        f"{flag}: {part} names {max(last - first + 1, 0):,} sizes; "
                        f"at most {MAX_CAPTURE_SIZES:,} in all"
                    )
                sizes += range(first, last + 1)
            else:
                sizes.append(_int(flag, part))
            if len(sizes) > MAX_CAPTURE_SIZES:
                raise CaptureConfigError(f"{flag}: more than {MAX_CAPTURE_SIZES:,} sizes")
    for size in sizes:
        if not 1 <= size <= MAX_CAPTURE_SIZE:
            raise CaptureConfigError(
                f"{flag}: a capture size is a batch of 1 to {MAX_CAPTURE_SIZE:,} tokens, not {size:,}"
            )
    return tuple(sizes)


def _one(flag: str, values: list[str]) -> str:
    if not values:
        raise CaptureConfigError(f"--vllm-args: {flag} expects a value")
    return values[0]


def _int(flag: str, value: Any) -> int:
    if isinstance(value, (bool, float)):
        raise CaptureConfigError(f"{flag} expects an integer, got {value!r}")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise CaptureConfigError(f"{flag} expects an integer, got {value!r}") from None


# ---------------------------------------------------------------- command line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``zerolint capture``; they mirror `vllm serve` and override --vllm-args."""
    parser.add_argument("--vllm-args", metavar="ARGS", help="a `vllm serve` argument string")
    parser.add_argument("--max-num-seqs", type=int)
    parser.add_argument("--max-num-batched-tokens", type=int)
    parser.add_argument("--max-cudagraph-capture-size", type=int)
    parser.add_argument(
        "--cudagraph-capture-sizes",
        nargs="+",
        metavar="SIZE",
        help="sizes as `8 16 32`, `8,16,32` or `1..1024`",
    )
    parser.add_argument("--num-speculative-tokens", type=int)
    parser.add_argument("--performance-mode", choices=PERFORMANCE_MODES)
    parser.add_argument(
        "--compress-ratio",
        type=int,
        action="append",
        metavar="N",
        help="a compress ratio of an indexer layer (repeatable; default 4)",
    )
    parser.add_argument("--data-parallel-size", type=int)
    parser.add_argument(
        "--gpu",
        choices=GPU_CHOICES,
        help="sm90 (default): cap 512, next_n 3+ flattened; sm100: cap 1024 as vLLM 0.33, "
        "any next_n native; sm80, sm89, sm120 do not run the faulting scheduler",
    )
    parser.add_argument(
        "--clamp",
        action="store_true",
        help="model the guarded builder: torch.clamp(seq_lens, min=1) before the kernel",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text")


def config_from_args(args: argparse.Namespace) -> CaptureConfig:
    """--vllm-args first, then the explicit flags on top; a warning on stderr for each
    flag in --vllm-args that zerolint does not know."""
    unknown: list[str] = []
    fields = parse_vllm_args(args.vllm_args, unknown) if args.vllm_args else {}
    for line in unknown:
        print(f"zerolint: warning: {line}", file=sys.stderr)
    explicit = {
        "max_num_seqs": args.max_num_seqs,
        "max_num_batched_tokens": args.max_num_batched_tokens,
        "max_cudagraph_capture_size": args.max_cudagraph_capture_size,
        "num_speculative_tokens": args.num_speculative_tokens,
        "performance_mode": args.performance_mode,
        "data_parallel_size": args.data_parallel_size,
        "gpu": args.gpu,
        "compress_ratios": tuple(args.compress_ratio) if args.compress_ratio else None,
        "cudagraph_capture_sizes": (
            _sizes("--cudagraph-capture-sizes", args.cudagraph_capture_sizes)
            if args.cudagraph_capture_sizes
            else None
        ),
    }
    fields.update({k: v for k, v in explicit.items() if v is not None})
    if args.clamp:
        fields["clamp"] = True
    return CaptureConfig(**fields)


def run(args: argparse.Namespace) -> int:
    """Print the table and summary; 1 when a size or an exposed runtime case faults."""
    from zerolint.cli import EXIT_CLEAN, EXIT_FINDINGS, UsageError

    unaffected = args.gpu if args.gpu in UNAFFECTED_GPUS else None
    if unaffected:
        args.gpu = "sm90"  # vLLM's capture sizes outside the SM100 family
    try:
        result = analyze(config_from_args(args))
    except (CaptureConfigError, smt.SolverGaveUp) as exc:  # a limit hit is said, never hidden
        raise UsageError(f"capture: {exc}") from None
    if unaffected:
        sys.stdout.write(render_unaffected(result, unaffected, args.format))
        return EXIT_CLEAN
    text = render_json(result) if args.format == "json" else render_text(result)
    sys.stdout.write(text)
    return EXIT_FINDINGS if result.exposed else EXIT_CLEAN


# ---------------------------------------------------------------- output


def render_text(result: CaptureResult) -> str:
    cfg = result.config
    source = "vLLM 0.27.1" if cfg.gpu == "sm90" else "vLLM 0.27.1, SM100 cap of vLLM 0.33"
    lines = [
        f"capture sizes ({source}) on {cfg.gpu}: max_num_seqs {cfg.seqs}, "
        f"max_num_batched_tokens {cfg.batched_tokens}, next_n {cfg.next_n}, "
        f"compress ratio {', '.join(map(str, sorted(set(cfg.compress_ratios))))}"
        + (", clamped" if cfg.clamp else ""),
    ]
    if cfg.gpu == "sm100":
        lines.append(
            "note: the fault modelled is DeepGEMM's SM90 scheduler's; SM100 runs another kernel"
        )
    lines.append(f"{'size':>6}  {'batch':>6}  {'next_n':>6}  {'lens':<16}  hazard")
    for row in result.rows:
        batch = str(row.kernel_batch) if row.full_decode else "-"
        lens = _lens_text(row.lens) if row.full_decode else "no FULL decode graph"
        hazard = "FAULT" if row.hazard else "-"
        lines.append(f"{row.size:>6}  {batch:>6}  {row.next_n:>6}  {lens:<16}  {hazard}")
    lines.append("runtime (no capture needed):")
    for case in result.runtime:
        lines.append(f"  {case.name}: {_verdict_text(case)}")
    if result.hazardous_sizes:
        lines.append(f"hazardous sizes: {' '.join(map(str, result.hazardous_sizes))}")
    lines.append(result.summary())
    return "\n".join(lines) + "\n"


def render_unaffected(result: CaptureResult, gpu: str, fmt: str) -> str:
    """What follows on a GPU that does not run the faulting scheduler: not affected, and
    the capture sizes vLLM would use there."""
    sizes = [row.size for row in result.rows]
    reason = (
        f"{gpu} ({UNAFFECTED_GPUS[gpu]}) does not run DeepGEMM's SM90 paged-MQA metadata "
        "scheduler (DeepGEMM's paged-MQA kernels are built for SM90 and the SM100 family), "
        "so its all-zero fault cannot happen there"
    )
    if fmt == "json":
        document = {
            "gpu": gpu,
            "affected": False,
            "reason": reason,
            "capture_sizes": sizes,
            "summary": {"exposed": False, "sizes": len(sizes)},
        }
        return json.dumps(document, indent=2) + "\n"
    return (
        f"not affected on {gpu}: {reason}.\n"
        f"capture sizes (vLLM 0.27.1, outside the SM100 family): {' '.join(map(str, sizes))}\n"
        "use --gpu sm90 (H100, H200) or --gpu sm100 (B200, GB200) for the GPUs that are.\n"
    )


def _lens_text(lens: dict[int, tuple[int, ...]]) -> str:
    def one(values: tuple[int, ...]) -> str:
        return " ".join(map(str, values))

    if len(lens) == 1:
        return one(next(iter(lens.values())))
    return "; ".join(f"/{ratio}: {one(values)}" for ratio, values in lens.items())


def _verdict_text(case: RuntimeCase) -> str:
    verdict = case.verdict
    if not case.exposed and case.note:
        # Not this deployment's case: say so first, then what it would be if it applied.
        if verdict.status == "unsafe":
            return f"{case.note} (with more ranks: FAULT, witness {verdict.witness_text()})"
        return case.note
    if verdict.status == "unsafe":
        text = f"FAULT, witness {verdict.witness_text()}"
    elif verdict.status == "safe":
        text = f"safe ({verdict.reason})"
    else:
        text = f"unproved ({verdict.reason})"
    return text + (f" [{case.note}]" if case.note else "")


def render_json(result: CaptureResult) -> str:
    cfg = result.config
    config = asdict(cfg) | {
        "max_num_seqs": cfg.seqs,
        "max_num_batched_tokens": cfg.batched_tokens,
        "next_n": cfg.next_n,
        "native_2d_lens": cfg.shape.native,
    }
    document = {
        "config": config,
        "sizes": [
            {
                "size": row.size,
                "full_decode": row.full_decode,
                "kernel_batch": row.kernel_batch,
                "next_n": row.next_n,
                "lens": {str(ratio): list(values) for ratio, values in row.lens.items()},
                "hazard": row.hazard,
            }
            for row in result.rows
        ],
        "runtime": [
            {
                "case": case.short,
                "description": case.name,
                "status": case.verdict.status,
                "exposed": case.exposed,
                "witness": case.verdict.witness,
                "reason": case.verdict.reason,
                "note": case.note,
            }
            for case in result.runtime
        ],
        "summary": {
            "sizes": len(result.rows),
            "full_decode_graphs": len(result.full_decode_sizes),
            "hazardous": len(result.hazardous_sizes),
            "hazardous_sizes": result.hazardous_sizes,
            "exposed": result.exposed,
            "text": result.summary(),
        },
    }
    return json.dumps(document, indent=2) + "\n"


# ---------------------------------------------------------------- helpers


def _check_choice(what: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise CaptureConfigError(f"unknown {what} {value!r} (one of {', '.join(choices)})")
