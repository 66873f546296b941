"""``zerolint capture``: sizes checked against vLLM's own code, hazards against docs/hazards/ZL001.md.

The size fixtures in fixtures/capture/sizes/ were computed by running vLLM's sizing
functions (fixtures/capture/generate.py); each holds the configuration and vLLM's answer.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from zerolint.capture import (
    CaptureConfig,
    CaptureConfigError,
    analyze,
    capture_sizes,
    parse_vllm_args,
)

SIZE_FIXTURES = sorted((Path(__file__).parent / "fixtures" / "capture" / "sizes").glob("*.json"))


def load_case(path: Path) -> tuple[dict, dict]:
    case = json.loads(path.read_text())
    config = {k: tuple(v) if isinstance(v, list) else v for k, v in case["config"].items()}
    return config, case


def test_the_size_fixtures_are_there():
    assert len(SIZE_FIXTURES) >= 30


@pytest.mark.parametrize("path", SIZE_FIXTURES, ids=lambda p: p.stem)
def test_capture_sizes_match_vllm(path):
    config, case = load_case(path)
    if "error" in case:
        with pytest.raises(CaptureConfigError):
            capture_sizes(CaptureConfig(**config))
        return
    resolved = CaptureConfig(**config)
    assert capture_sizes(resolved) == case["sizes"]
    assert resolved.seqs == case["resolved"]["max_num_seqs"]
    assert resolved.batched_tokens == case["resolved"]["max_num_batched_tokens"]


# docs/vllm-facts.md: (configuration, capture sizes, hazardous sizes)
DOCUMENTED_ROWS = [
    ("defaults on H100/H200", {}, 51, 16),
    ("--max-cudagraph-capture-size 1024", {"max_cudagraph_capture_size": 1024}, 83, 32),
    ("--clamp", {"clamp": True}, 51, 0),
    ("1024 with --clamp", {"max_cudagraph_capture_size": 1024, "clamp": True}, 83, 0),
]


@pytest.mark.parametrize(
    ("config", "sizes", "hazards"), [pytest.param(c, s, h, id=n) for n, c, s, h in DOCUMENTED_ROWS]
)
def test_domain_table(config, sizes, hazards):
    result = analyze(CaptureConfig(**config))
    assert (len(result.rows), len(result.hazardous_sizes)) == (sizes, hazards)


def test_without_speculation_every_multiple_of_32_faults():
    result = analyze(CaptureConfig())
    assert result.hazardous_sizes == list(range(32, 513, 32))
    row = next(r for r in result.rows if r.size == 64)
    assert (row.kernel_batch, row.next_n, row.lens) == (64, 1, {4: (0,)})


def test_next_n_2_gives_kernel_batch_n_over_2():
    result = analyze(CaptureConfig(num_speculative_tokens=1))
    assert all(r.kernel_batch == r.size // 2 for r in result.rows)
    assert result.hazardous_sizes == list(range(64, 513, 64))


def test_next_n_3_on_sm90_is_flattened_and_all_zero():
    result = analyze(CaptureConfig(num_speculative_tokens=2))
    row = next(r for r in result.rows if r.size == 96)
    assert (row.kernel_batch, row.lens, row.hazard) == (96, {4: (0, 0, 0)}, True)
    assert result.hazardous_sizes == [96, 192, 288, 384, 480]


@pytest.mark.parametrize("gpu", ["sm90", "sm100"])
@pytest.mark.parametrize("k", [3, 4, 7])
def test_next_n_4_and_more_has_no_capture_hazard(gpu, k):
    result = analyze(CaptureConfig(num_speculative_tokens=k, gpu=gpu))
    assert result.rows and result.hazardous_sizes == []


def test_a_ratio_above_next_n_brings_the_hazard_back():
    # next_n 4 is flattened on SM90: the kernel batch is N tokens, lens 1..4 // 8 == 0.
    result = analyze(CaptureConfig(num_speculative_tokens=3, compress_ratios=(8,)))
    assert result.hazardous_sizes == list(range(32, 513, 32))
    sm100 = analyze(CaptureConfig(num_speculative_tokens=3, compress_ratios=(8,), gpu="sm100"))
    assert sm100.hazardous_sizes == list(range(128, 1025, 128))  # native: batch N / 4


def test_a_size_faults_when_any_ratio_does():
    result = analyze(CaptureConfig(num_speculative_tokens=3, compress_ratios=(4, 8)))
    assert result.hazardous_sizes == list(range(32, 513, 32))
    row = next(r for r in result.rows if r.size == 128)
    assert row.lens == {4: (0, 0, 0, 1), 8: (0, 0, 0, 0)}


def test_ratio_1_does_not_divide():
    assert analyze(CaptureConfig(compress_ratios=(1,))).hazardous_sizes == []


def test_sizes_above_the_decode_limit_get_no_full_decode_graph():
    result = analyze(CaptureConfig(max_num_seqs=40, cudagraph_capture_sizes=(8, 32, 64)))
    assert [(r.size, r.full_decode) for r in result.rows] == [(8, True), (32, True), (64, False)]
    assert result.hazardous_sizes == [32]


def test_piecewise_graphs_do_not_build_indexer_metadata():
    result = analyze(CaptureConfig(cudagraph_mode="PIECEWISE"))
    assert len(result.rows) == 51 and result.hazardous_sizes == []


def test_runtime_cases_carry_the_smallest_witness():
    live, idle = analyze(CaptureConfig()).runtime
    assert live.verdict.witness_text() == (
        "B=32, requests=32, seq_len=1, compress_ratio=4 -> every context length 0"
    )
    assert idle.verdict.witness_text() == (
        "B=32, size=32, seq_len=1, compress_ratio=4 -> every context length 0"
    )
    assert (live.exposed, idle.exposed) == (True, False)


def test_an_idle_rank_is_exposed_with_data_parallelism():
    result = analyze(CaptureConfig(data_parallel_size=2, clamp=False))
    assert result.runtime[1].exposed and result.exposed


def test_the_idle_rank_pads_to_a_full_graph_with_next_n_2():
    _, idle = analyze(CaptureConfig(num_speculative_tokens=1)).runtime
    assert idle.verdict.witness == {"B": 32, "size": 64, "seq_len": 2, "compress_ratio": 4}


def test_clamp_proves_everything_safe():
    result = analyze(CaptureConfig(clamp=True, data_parallel_size=4))
    assert [c.verdict.status for c in result.runtime] == ["safe", "safe"]
    assert not result.exposed


def test_summary_line():
    assert analyze(CaptureConfig()).summary() == (
        "51 capture sizes, 51 FULL decode graphs, 16 hazardous; runtime: live decode can fault"
    )


BAD_CONFIGS = [
    ({"gpu": "sm80"}, "unknown gpu 'sm80'"),
    ({"compress_ratios": (0,)}, "compress ratios must be >= 1"),
    ({"max_num_seqs": 0}, "max_num_seqs must be >= 1"),
    ({"num_speculative_tokens": -1}, "num_speculative_tokens must be >= 0"),
    ({"cudagraph_mode": "FULL"}, "cudagraph mode FULL captures mixed batches"),
    ({"performance_mode": "fast"}, "unknown performance mode 'fast'"),
    # vLLM 0.27.1's SchedulerConfig.verify_max_model_len refuses fewer tokens than seqs.
    (
        {"max_num_seqs": 16384, "max_num_batched_tokens": 8192},
        r"max_num_batched_tokens \(8192\) must be greater than or equal to max_num_seqs \(16384\)",
    ),
    ({"max_num_seqs": 8193}, r"max_num_batched_tokens \(8192\) must be .* \(8193\)"),
    ({"max_num_seqs": 16385, "gpu": "sm100"}, r"\(16384\) must be .* \(16385\)"),
]


@pytest.mark.parametrize(("config", "message"), BAD_CONFIGS)
def test_bad_configurations_say_what_is_wrong(config, message):
    with pytest.raises(CaptureConfigError, match=message):
        CaptureConfig(**config)


@pytest.mark.parametrize(
    "config",
    [
        {"max_num_seqs": 8192},  # as many tokens as seqs: vLLM starts
        {"max_num_seqs": 64, "max_num_batched_tokens": 64},
        {"max_num_seqs": 16384, "performance_mode": "throughput"},  # 8192 doubled
        {"max_num_batched_tokens": 100},  # the default seqs follow the tokens down
    ],
)
def test_as_many_batched_tokens_as_seqs_is_a_config_vllm_starts(config):
    resolved = CaptureConfig(**config)
    assert resolved.batched_tokens >= resolved.seqs
    assert analyze(resolved).rows


# `vllm serve` argument strings and the fields they set; unknown flags are ignored.
VLLM_ARGS = [
    (
        "vllm serve deepseek-ai/DeepSeek-V4-Flash --tensor-parallel-size 8 --max-num-seqs 256",
        {"max_num_seqs": 256},
    ),
    ("--max_num_batched_tokens=4096 --trust-remote-code", {"max_num_batched_tokens": 4096}),
    (
        """--speculative-config '{"method": "mtp", "num_speculative_tokens": 2}'""",
        {"num_speculative_tokens": 2},
    ),
    ("-sc.num_speculative_tokens 1", {"num_speculative_tokens": 1}),
    ("--speculative-config.num_speculative_tokens=3", {"num_speculative_tokens": 3}),
    ("--spec-tokens 1", {"num_speculative_tokens": 1}),
    (
        """-cc '{"cudagraph_capture_sizes": [1, 2, 4], "cudagraph_mode": "piecewise"}'""",
        {"cudagraph_capture_sizes": (1, 2, 4), "cudagraph_mode": "PIECEWISE"},
    ),
    ("--compilation-config.max_cudagraph_capture_size 1024", {"max_cudagraph_capture_size": 1024}),
    ("--max-cudagraph-capture-size 1024", {"max_cudagraph_capture_size": 1024}),
    (
        "--cudagraph-capture-sizes 8 16 32 --enforce-eager",
        {"cudagraph_capture_sizes": (8, 16, 32), "enforce_eager": True},
    ),
    ("vllm serve --enforce-eager some/model", {"enforce_eager": True}),
    ("--enforce-eager --no-enforce-eager", {"enforce_eager": False}),
    ("-O0", {"cudagraph_mode": "NONE"}),
    ("-O 1", {"cudagraph_mode": "PIECEWISE"}),
    ("-O=3", {"cudagraph_mode": "FULL_AND_PIECEWISE"}),
    (
        """-O1 -cc '{"cudagraph_mode": "FULL_DECODE_ONLY"}'""",
        {"cudagraph_mode": "FULL_DECODE_ONLY"},
    ),
    (
        "--performance-mode interactivity -dp 4",
        {"performance_mode": "interactivity", "data_parallel_size": 4},
    ),
    ("--data-parallel-size=2 --port 8000 --gpu-memory-utilization 0.9", {"data_parallel_size": 2}),
]


@pytest.mark.parametrize(("text", "fields"), VLLM_ARGS)
def test_parse_vllm_args(text, fields):
    assert parse_vllm_args(text) == fields


BAD_VLLM_ARGS = [
    ("--max-num-seqs many", "--max-num-seqs expects an integer, got 'many'"),
    ("--speculative-config '{oops'", "--speculative-config is not valid JSON"),
    ("-O7", "-O expects 0-3, got 7"),
    ("--max-num-seqs 'unclosed", "No closing quotation"),
    ("""-sc '{"method": "dspark", "num_speculative_tokens": 2}'""", "model runner V2"),
]


@pytest.mark.parametrize(("text", "message"), BAD_VLLM_ARGS)
def test_bad_vllm_args_say_what_is_wrong(text, message):
    with pytest.raises(CaptureConfigError, match=message):
        parse_vllm_args(text)
