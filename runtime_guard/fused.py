"""The clamp inside the scheduler: DeepGEMM 2.6.1's SM90 schedule in one kernel, not two.

``guard`` puts a clamp kernel in front of DeepGEMM's metadata kernel. In CUDA-graph replay
every kernel node costs about 1.4 microseconds on an H200, however little it does, so the
clamp alone costs more than the one microsecond the guard may add. This module removes the
extra node: one kernel that computes the ``(num_sms + 1, 2)`` table DeepGEMM 2.6.1's SM90
scheduler writes (the kernel vLLM 0.27.1 vendors), reading each length as ``max(len, 1)``.
Its output is, integer for integer, DeepGEMM's schedule of the clamped lengths; that is
checked on the GPU by ``python -m runtime_guard.verify_sm90`` and again in every process, on
the first call that is not being captured into a CUDA graph.

Written from ``runtime_guard.reference`` (the CPU model of that scheduler), compiled at first
use with NVRTC through ``torch.cuda._compile_kernel`` and launched through the CUDA driver.
Where any of that is missing (no NVRTC, not SM90, another DeepGEMM, an input outside what
was verified, a failed self-check) the guard falls back to clamp-then-call.
"""

from __future__ import annotations

import ctypes
import threading

TYPE_CHECKING = False  # not typing's: see clamp.py
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    import torch

DEEP_GEMM_VERSIONS = frozenset({"2.6.1"})
"""DeepGEMM versions whose SM90 scheduler this kernel reproduces (verified on an H200)."""

COMPUTE_CAPABILITY = (9, 0)
SPLIT_KV = 256
BLOCK_KV = 64
MAX_BATCH = 8192
"""Batches up to this size use the fused kernel: its shared buffer then stays under the
48 KiB a launch gets without opting in."""
NEXT_N = (1, 2)
"""The ``next_n`` values the kernel was verified for (decode, and one speculative token)."""

KERNEL_NAME = "zerolint_clamped_sm90_schedule"
KERNEL_SOURCE = r"""
// DeepGEMM 2.6.1's SM90 paged-MQA schedule of max(context_len, 1), by one block.
// segs[i] = ceil(len_i / SPLIT_KV); prefix[i] = segs[0] + ... + segs[i];
// total = prefix[B - 1] * atoms is cut into num_sms runs of consecutive segments, the first
// num_sms - total % num_sms of total / num_sms segments, the rest of one more; SM s starts at
// segment start(s), which lies in row q = the first row with prefix[q] * atoms > start(s).
// Row s of the output is (q * atoms + offset / segs[q], offset % segs[q]) where offset is
// start(s) - prefix[q - 1] * atoms; the last row is (B * atoms, 0). Arithmetic is uint32.
// DeepGEMM does this with one warp; here 1024 threads load, scan and search in parallel.
#define SPLIT_KV 256u
#define THREADS 1024u
#define WARPS (THREADS / 32u)

extern "C" __global__ void __launch_bounds__(THREADS, 1)
zerolint_clamped_sm90_schedule(const int* __restrict__ context_lens,
                               unsigned int* __restrict__ schedule,
                               int batch_size, int next_n, int num_sms) {
    extern __shared__ unsigned int prefix[];  // batch_size + 1 entries
    __shared__ unsigned int warp_sums[WARPS];
    const unsigned int tid = threadIdx.x, lane = tid % 32u, warp = tid / 32u;
    const unsigned int batch = (unsigned int)batch_size;
    const unsigned int sms = (unsigned int)num_sms;

    // Segments per row, every load in flight at once.
    for (unsigned int row = tid; row < batch; row += THREADS) {
        const int len = context_lens[(unsigned long long)row * next_n + (next_n - 1)];
        prefix[row] = ((unsigned int)(len < 1 ? 1 : len) + SPLIT_KV - 1u) / SPLIT_KV;
    }
    __syncthreads();

    // Inclusive prefix sums, THREADS rows at a time: within each warp, then across warps.
    unsigned int carried = 0;
    for (unsigned int base = 0; base < batch; base += THREADS) {
        const unsigned int row = base + tid;
        unsigned int value = row < batch ? prefix[row] : 0u;
        for (unsigned int step = 1; step < 32u; step <<= 1) {
            const unsigned int lower = __shfl_up_sync(0xffffffffu, value, step);
            if (lane >= step) value += lower;
        }
        if (lane == 31u) warp_sums[warp] = value;
        __syncthreads();
        if (warp == 0) {
            unsigned int sum = warp_sums[lane];
            for (unsigned int step = 1; step < 32u; step <<= 1) {
                const unsigned int lower = __shfl_up_sync(0xffffffffu, sum, step);
                if (lane >= step) sum += lower;
            }
            warp_sums[lane] = sum;
        }
        __syncthreads();
        value += carried + (warp > 0 ? warp_sums[warp - 1] : 0u);
        if (row < batch) prefix[row] = value;
        carried += warp_sums[WARPS - 1];
        __syncthreads();
    }
    if (tid == 0) prefix[batch] = carried;  // read only if uint32 sums wrapped around
    __syncthreads();

    const unsigned int atoms = next_n >= 2 ? ((unsigned int)next_n + 1u) / 2u : 1u;
    const unsigned int total = carried * atoms;
    const unsigned int per_sm = total / sms;
    const unsigned int pivot = sms - total % sms;
    for (unsigned int sm = tid; sm < sms; sm += THREADS) {
        const unsigned int start = sm * per_sm + (sm > pivot ? sm - pivot : 0u);
        unsigned int lo = 0, hi = batch;
        while (lo < hi) {
            const unsigned int mid = (lo + hi) / 2u;
            if (prefix[mid] * atoms <= start) lo = mid + 1u; else hi = mid;
        }
        const unsigned int before = lo == 0 ? 0u : prefix[lo - 1];
        const unsigned int segs = prefix[lo] - before;
        const unsigned int offset = start - before * atoms;
        schedule[2u * sm] = lo * atoms + (segs ? offset / segs : 0u);
        schedule[2u * sm + 1u] = segs ? offset % segs : 0u;
    }
    if (tid == 0) {
        schedule[2u * sms] = batch * atoms;
        schedule[2u * sms + 1u] = 0u;
    }
}
"""


class FusedUnavailable(RuntimeError):
    """The fused kernel cannot run here (no CUDA, no NVRTC, not SM90)."""


def schedule(context_lens: torch.Tensor, num_sms: int) -> torch.Tensor:
    """The fused kernel by itself: DeepGEMM 2.6.1's SM90 schedule of ``max(context_lens, 1)``.

    ``context_lens`` is a contiguous 2-D ``(B, next_n)`` int32 CUDA tensor, 1 <= B <=
    MAX_BATCH, on an SM90 device; returns a ``(num_sms + 1, 2)`` int32 tensor on its device,
    written on the current stream (safe inside graph capture). No self-check. Raises
    ValueError on other input and FusedUnavailable where the kernel cannot run.
    """
    problem = input_problem(context_lens, BLOCK_KV, num_sms)
    if problem:
        raise ValueError(problem)
    return _kernel_for(context_lens.device.index).run(context_lens, num_sms)


def input_problem(context_lens: object, block_kv: object, num_sms: object) -> str | None:
    """Why the fused kernel does not take these arguments, or None when it does."""
    import torch

    if not isinstance(context_lens, torch.Tensor):
        return "context_lens is not a tensor"
    if context_lens.dtype != torch.int32 or context_lens.dim() != 2:
        return "context_lens is not a 2-D int32 tensor"
    if not context_lens.is_contiguous():
        return "context_lens is not contiguous"
    batch, next_n = context_lens.shape
    if not 1 <= batch <= MAX_BATCH:
        return f"batch size {batch} is outside 1..{MAX_BATCH}"
    if next_n not in NEXT_N:
        return f"next_n {next_n} was not verified"
    if block_kv != BLOCK_KV or isinstance(block_kv, bool):
        return f"block_kv is not {BLOCK_KV}"
    if not isinstance(num_sms, int) or isinstance(num_sms, bool) or not 1 <= num_sms <= 4096:
        return "num_sms is not an int in 1..4096"
    if not context_lens.is_cuda:
        return "context_lens is not on a CUDA device"
    return None


class FusedSchedule:
    """The fused path of one guard: per device, off, unchecked, or checked and in use.

    ``__call__`` returns the fused schedule, or None when the caller must clamp and call
    DeepGEMM itself. A device's first eligible call made outside graph capture runs both the
    fused kernel and ``original`` on the clamped lengths; the fused kernel is used on that
    device from then on only if the two tables are equal.
    """

    def __init__(self, original: Callable[..., Any]) -> None:
        self._original = original
        self._lock = threading.Lock()
        self._checked: dict[int, _Kernel] = {}
        self._off: set[int] = set()

    def __call__(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> torch.Tensor | None:
        bound = _bind(args, kwargs)
        if bound is None:
            return None
        lens, block_kv, num_sms = bound
        if input_problem(lens, block_kv, num_sms):
            return None
        device = lens.device.index
        kernel = self._checked.get(device)
        if kernel is not None:
            return kernel.run(lens, num_sms)
        if device in self._off:
            return None
        return self._first_call(lens, block_kv, num_sms)

    def path(self, device: int) -> str:
        """``"fused"`` once the device's self-check passed, else ``"clamp"``."""
        return "fused" if device in self._checked else "clamp"

    def _first_call(self, lens: torch.Tensor, block_kv: int, num_sms: int) -> torch.Tensor | None:
        import torch

        from runtime_guard.clamp import clamp_context_lens, log

        if torch.cuda.is_current_stream_capturing():
            return None  # the check synchronises; capture this call clamped, check later
        device = lens.device.index
        with self._lock:
            if device in self._off:
                return None  # another thread decided meanwhile
            if device in self._checked:
                return self._checked[device].run(lens, num_sms)
            try:
                kernel = _kernel_for(device)
                fused = kernel.run(lens, num_sms)
            except (FusedUnavailable, RuntimeError) as error:
                self._off.add(device)
                log(
                    "info",
                    "runtime_guard: clamp kept as its own kernel on cuda:%d (%s)",
                    device,
                    error,
                )
                return None
            expected = self._original(clamp_context_lens(lens), block_kv, num_sms)
            if not _same_table(fused, expected):
                self._off.add(device)
                log(
                    "warning",
                    "runtime_guard: the fused schedule differs from DeepGEMM's on cuda:%d; "
                    "clamping in front of DeepGEMM instead",
                    device,
                )
                return expected
            self._checked[device] = kernel
        log(
            "info",
            "runtime_guard: clamp fused into the SM90 scheduler on cuda:%d "
            "(matched DeepGEMM on a live call)",
            device,
        )
        return fused


def _same_table(fused: torch.Tensor, expected: object) -> bool:
    import torch

    return (
        isinstance(expected, torch.Tensor)
        and expected.device == fused.device
        and expected.dtype == fused.dtype
        and bool(torch.equal(fused, expected))
    )


def _bind(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any, Any] | None:
    """``(context_lens, block_kv, num_sms)`` from a call, or None for any other call shape."""
    names = ("context_lens", "block_kv", "num_sms")
    if len(args) > 3 or len(args) + len(kwargs) != 3:
        return None
    values = list(args)
    for name in names[len(args) :]:
        if name not in kwargs:
            return None
        values.append(kwargs[name])
    return values[0], values[1], values[2]


class _Args(ctypes.Structure):
    """The kernel's parameters, in order; the launch copies them, so one per thread is reused."""

    _fields_ = (
        ("context_lens", ctypes.c_void_p),
        ("schedule", ctypes.c_void_p),
        ("batch_size", ctypes.c_int),
        ("next_n", ctypes.c_int),
        ("num_sms", ctypes.c_int),
    )


class _Kernel:
    """The compiled kernel on one device, and a lean launcher for it (eager calls matter:
    vLLM builds this metadata outside its CUDA graphs)."""

    THREADS = 1024  # the kernel's THREADS

    def __init__(self, device: int) -> None:
        import torch

        if torch.version.hip or not torch.cuda.is_available():
            raise FusedUnavailable("not an NVIDIA CUDA device")
        capability = torch.cuda.get_device_capability(device)
        if capability != COMPUTE_CAPABILITY:
            raise FusedUnavailable(f"cuda:{device} is sm_{capability[0]}{capability[1]}, not sm_90")
        compile_kernel = getattr(torch.cuda, "_compile_kernel", None)
        if compile_kernel is None:
            raise FusedUnavailable(f"torch {torch.__version__} cannot compile kernels (NVRTC)")
        with torch.cuda.device(device):
            try:
                self._compiled = compile_kernel(KERNEL_SOURCE, KERNEL_NAME)
            except Exception as error:  # noqa: BLE001 - NVRTC missing or failing: fall back
                raise FusedUnavailable(f"NVRTC could not build the kernel: {error}") from None
        from torch.cuda._utils import _get_gpu_runtime_library

        launch = _get_gpu_runtime_library().cuLaunchKernel  # a CDLL of our own: argtypes are ours
        launch.argtypes = (
            ctypes.c_void_p,  # CUfunction
            *(ctypes.c_uint,) * 7,  # grid x, y, z; block x, y, z; dynamic shared bytes
            ctypes.c_void_p,  # CUstream
            ctypes.c_void_p,  # void** kernelParams
            ctypes.c_void_p,  # void** extra
        )
        launch.restype = ctypes.c_int
        self._launch = launch
        self._function = self._compiled.func
        self._device = device
        self._torch = torch
        self._local = threading.local()
        # What torch.compile's generated code calls: a fraction of current_stream()'s cost.
        self._raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or (
            lambda device: torch.cuda.current_stream(device).cuda_stream
        )

    def _params(self) -> tuple[_Args, ctypes.Array[ctypes.c_void_p]]:
        local = self._local
        if not hasattr(local, "args"):
            args = _Args()
            base = ctypes.addressof(args)
            offsets = [getattr(_Args, name).offset for name, _ in _Args._fields_]
            local.args = args
            local.params = (ctypes.c_void_p * len(offsets))(*(base + o for o in offsets))
        return local.args, local.params

    def run(self, lens: torch.Tensor, num_sms: int) -> torch.Tensor:
        torch = self._torch
        batch, next_n = lens.shape
        out = torch.empty((num_sms + 1, 2), dtype=torch.int32, device=lens.device)
        args, params = self._params()
        args.context_lens, args.schedule = lens.data_ptr(), out.data_ptr()
        args.batch_size, args.next_n, args.num_sms = batch, next_n, num_sms
        shared = (batch + 1) * 4
        if torch.cuda.current_device() == self._device:
            result = self._launch_on(shared, params)
        else:
            with torch.cuda.device(self._device):
                result = self._launch_on(shared, params)
        if result != 0:
            raise RuntimeError(f"cuLaunchKernel failed with CUresult {result}")
        return out

    def _launch_on(self, shared: int, params: Any) -> int:
        """Launch on the current device's current stream (the capturing one, in a capture)."""
        stream = self._raw_stream(self._device)
        return self._launch(
            self._function, 1, 1, 1, self.THREADS, 1, 1, shared, stream, params, None
        )


_kernels: dict[int, _Kernel] = {}
_kernels_lock = threading.Lock()


def _kernel_for(device: int) -> _Kernel:
    """The kernel compiled for ``device``, built once per process."""
    kernel = _kernels.get(device)
    if kernel is None:
        with _kernels_lock:
            kernel = _kernels.get(device)
            if kernel is None:
                kernel = _kernels[device] = _Kernel(device)
    return kernel
