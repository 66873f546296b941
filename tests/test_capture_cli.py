"""``python -m zerolint capture`` as a user runs it: output, exit codes, errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def capture(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zerolint", "capture", *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("args", "summary", "code"),
    [
        ([], "51 capture sizes, 51 FULL decode graphs, 16 hazardous", 1),
        (
            ["--max-cudagraph-capture-size", "1024"],
            "83 capture sizes, 83 FULL decode graphs, 32 hazardous",
            1,
        ),
        (["--clamp"], "51 capture sizes, 51 FULL decode graphs, 0 hazardous; runtime: safe", 0),
        (
            ["--num-speculative-tokens", "3"],
            "49 capture sizes, 49 FULL decode graphs, 0 hazardous; runtime: safe",
            0,
        ),
        (
            ["--cudagraph-capture-sizes", "1..1024"],
            "1024 capture sizes, 1024 FULL decode graphs, 32 hazardous",
            1,
        ),
    ],
)
def test_summary_and_exit_code(args, summary, code):
    result = capture(*args)
    assert result.returncode == code, result.stderr
    assert result.stdout.splitlines()[-1].startswith(summary)


def test_the_table_shows_each_size():
    lines = capture("--num-speculative-tokens", "1").stdout.splitlines()
    assert lines[1].split() == ["size", "batch", "next_n", "lens", "hazard"]
    assert lines[2].split() == ["2", "1", "2", "0", "-"]
    assert "64 32 2 0 FAULT" in [" ".join(line.split()) for line in lines]


def test_runtime_cases_print_their_witness():
    out = capture("--data-parallel-size", "2").stdout
    assert (
        "live decode requests shorter than the ratio: FAULT, witness "
        "B=32, requests=32, seq_len=1, compress_ratio=4 -> every context length 0"
    ) in out
    assert "idle data-parallel rank padded to a FULL batch: FAULT, witness B=32, size=32" in out


def test_json_output():
    result = capture("--format", "json", "--max-cudagraph-capture-size", "1024")
    document = json.loads(result.stdout)
    assert document["summary"]["sizes"] == 83
    assert document["summary"]["hazardous_sizes"] == list(range(32, 1025, 32))
    size_32 = next(s for s in document["sizes"] if s["size"] == 32)
    assert size_32 == {
        "size": 32,
        "full_decode": True,
        "kernel_batch": 32,
        "next_n": 1,
        "lens": {"4": [0]},
        "hazard": True,
    }
    assert document["runtime"][0]["witness"] == {
        "B": 32,
        "requests": 32,
        "seq_len": 1,
        "compress_ratio": 4,
    }


def test_vllm_args_and_explicit_flags():
    serve = (
        "vllm serve deepseek-ai/DeepSeek-V4-Flash --tensor-parallel-size 8 "
        """--speculative-config '{"method": "mtp", "num_speculative_tokens": 1}' """
        "--max-num-seqs 256"
    )
    result = capture("--vllm-args", serve, "--format", "json")
    config = json.loads(result.stdout)["config"]
    assert (config["next_n"], config["max_num_seqs"]) == (2, 256)
    # An explicit flag wins over the same setting in --vllm-args.
    result = capture("--vllm-args", serve, "--num-speculative-tokens", "3", "--format", "json")
    assert json.loads(result.stdout)["config"]["next_n"] == 4


def test_repeated_compress_ratios():
    result = capture(
        "--compress-ratio",
        "4",
        "--compress-ratio",
        "8",
        "--num-speculative-tokens",
        "3",
        "--gpu",
        "sm100",
    )
    assert "/4: 1; /8: 0" in result.stdout
    assert result.returncode == 1


SEQS_ABOVE_TOKENS = (
    "zerolint: error: capture: max_num_batched_tokens (8192) must be greater than or equal to "
    "max_num_seqs (16384)"
)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--vllm-args", "--max-num-seqs lots"],
            "zerolint: error: capture: --max-num-seqs expects an integer, got 'lots'",
        ),
        (["--compress-ratio", "0"], "zerolint: error: capture: compress ratios must be >= 1"),
        (
            ["--cudagraph-capture-sizes", "8", "16", "--max-cudagraph-capture-size", "32"],
            "zerolint: error: capture: max_cudagraph_capture_size (32) must equal",
        ),
        (
            ["--cudagraph-capture-sizes", "1..x"],
            "zerolint: error: capture: --cudagraph-capture-sizes expects an integer, got 'x'",
        ),
        (  # vLLM refuses a value for the switch; it was read as eager mode
            ["--vllm-args", "--enforce-eager=false"],
            "zerolint: error: capture: --vllm-args: --enforce-eager=false: --enforce-eager takes",
        ),
        (  # vLLM 0.27.1's config/scheduler.py refuses to start with fewer tokens than seqs
            ["--max-num-seqs", "16384", "--max-num-batched-tokens", "8192"],
            SEQS_ABOVE_TOKENS,
        ),
        (  # the default batched tokens on SM90 are 8192
            ["--vllm-args", "--max-num-seqs 16384"],
            SEQS_ABOVE_TOKENS,
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message):
    result = capture(*args)
    assert result.returncode == 2
    assert result.stderr.startswith(message)
    assert len(result.stderr.strip().splitlines()) == 1


# --- what a new user types (issue: --vllm-args as given, typos, sizes, GPUs) ------------


@pytest.mark.parametrize(
    "args",
    [
        ["--vllm-args", "--enforce-eager"],
        ["--vllm-args=--enforce-eager"],
        ["--vllm-args", "-O0"],
    ],
)
def test_vllm_args_whose_value_starts_with_a_dash(args):
    # No graph is captured; live decode requests can still fault (exit 1), no usage error.
    result = capture(*args)
    assert (result.returncode, result.stderr) == (1, "")
    assert "0 capture sizes" in result.stdout


def test_an_unknown_vllm_flag_is_warned_about():
    result = capture("--vllm-args", "--max-num-seq 64 --model m --tensor-parallel-size 8")
    assert result.stderr == (
        "zerolint: warning: --vllm-args: --max-num-seq is not a vLLM flag zerolint knows "
        "(did you mean --max-num-seqs?); it is ignored\n"
    )


def test_the_idle_rank_line_says_it_does_not_apply_at_one_rank():
    (line,) = [x for x in capture().stdout.splitlines() if "idle data-parallel rank" in x]
    assert "does not apply: --data-parallel-size is 1" in line
    assert not line.split(": ", 1)[1].startswith("FAULT")
    (line,) = [
        x
        for x in capture("--data-parallel-size", "2").stdout.splitlines()
        if "idle data-parallel rank" in x
    ]
    assert line.split(": ", 1)[1].startswith("FAULT")


@pytest.mark.parametrize(
    ("sizes", "message"),
    [
        ("1..100000000000", "1..100000000000 names 100,000,000,000 sizes; at most 65,536"),
        ("0", "a capture size is a batch of 1 to 16,777,216 tokens, not 0"),
        ("[100000000000]", "not 100,000,000,000"),
    ],
)
def test_capture_sizes_are_bounded(sizes, message):
    result = capture("--cudagraph-capture-sizes", sizes)
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.splitlines()) == 1


@pytest.mark.parametrize(
    ("cap", "message"),
    [
        ("99999999999999999999", "a batch of 1 to 16,777,216 tokens, not 99,999,999,999"),
        ("2000000", "makes more than 65,536 capture sizes"),
    ],
)
def test_the_sizes_vllm_would_make_are_bounded_too(cap, message):
    """Not given, the sizes come from max_cudagraph_capture_size: held to the same limits."""
    result = capture("--max-num-batched-tokens", cap, "--max-cudagraph-capture-size", cap)
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.splitlines()) == 1


@pytest.mark.parametrize("gpu", ["sm80", "sm89", "sm120"])
def test_gpus_that_do_not_run_the_scheduler_are_not_affected(gpu):
    result = capture("--gpu", gpu)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"not affected on {gpu}: ")
    assert "capture sizes" in result.stdout
    data = json.loads(capture("--gpu", gpu, "--format", "json").stdout)
    assert data["affected"] is False and len(data["capture_sizes"]) == 51
