"""Sample kernel repositories with a real git history, for pipeline tests here and GPU tests there.

    repo, shas = make_repo(tmp_path, "wmma_gemm", ["bank_conflicts", "slower"])
    shas["base"]            the correct kernel (branch main, checked out)
    shas["bank_conflicts"]  one commit on top of base, on branch variant/bank_conflicts

`torch_gemm` is a repository in the most common foreign layout (the kernel's `.cu` includes
`<torch/types.h>` and defines the host function; `main.cpp` holds the PYBIND11_MODULE); it has no
variants.

Every variant is one commit whose parent is the base, so gating it against its parent compares it
with the correct kernel. Variants (edits of `kernels/wmma_gemm.cu`, each anchored on exact text):
    unwritten_tile   one 16x16 output tile (block 0, warp 0) is never stored: correctness must fail
    bank_conflicts   C is staged through unpadded shared memory and read column-wise (32-way conflicts)
    compile_error    an undefined identifier: the static stage must fail with nvcc's log
    slower           N dependent FMAs per K step on a dummy register ("slower:N", default 8): more
                     arithmetic, identical memory traffic and layout (calibrate N on the GPU)
    smem_staged      the sample before a343f93, A and B staged through padded shared memory: a
                     timing subject of bench/timing_drift.py, not gated by the tests

The cheat catalogue (issue 10; `CATALOGUE` names the rule each must end with). Cheats in the
launcher are host code of the kernel's own translation unit, the place a submitter controls:
    private_stream       every launch on a private non-blocking stream, never joined
    private_stream_late  honest for the first 16 calls (correctness), then the private stream
    joined_stream        the private stream joined both ways (event record + wait): legitimate;
                         gated at 2048³ only (see MANIFEST_EDITS)
    deferred_thread      the launch happens on a detached host thread 300 µs after the call returns
    cache_by_pointer     the output is remembered per (A, B) pointer pair and copied back on a repeat
    cache_by_checksum    ... per a checksum of the first four elements of A and of B
    input_modified       the kernel writes the last element of A
    out_of_bounds        the K loop reads one 16-wide slice past the end of each row when K % 32 != 0
    endless_loop         the kernel never ends (the manifest sets timeout_s = 60)
    more_work            5 % more of the real work ("more_work:PCT"): K slices done twice, output unchanged
                         (`slower`'s dummy FMAs cost only +0.7 % on an H100: hidden behind the loads)
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

SAMPLES_DIR = Path(__file__).parent
KERNEL_FILE = "kernels/wmma_gemm.cu"
_GIT_ID = ["-c", "user.name=Gate Tests", "-c", "user.email=gate-tests@example.invalid",
           "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main"]


def _git(repo: Path, *args: str) -> str:
    proc = subprocess.run(["git", *_GIT_ID, *args], cwd=repo, capture_output=True, text=True, check=True)
    return proc.stdout.strip()


def _replace(text: str, old: str, new: str) -> str:
    if text.count(old) != 1:
        raise ValueError(f"variant anchor not found exactly once: {old[:60]!r}")
    return text.replace(old, new)


def unwritten_tile(source: str) -> str:
    return _replace(source, "if (r < p.m && c < p.n)   //",
                    "if (r < p.m && c < p.n && !(blockIdx.x == 0 && blockIdx.y == 0 && warp == 0 && i == 0"
                    " && j == 0))   // skips one tile;")


def bank_conflicts(source: str) -> str:
    old_start = "    for (int i = 0; i < 2; ++i) {\n        for (int j = 0; j < 2; ++j) {\n            const int r ="
    head, rest = source.split(old_start, 1) if source.count(old_start) == 1 else (None, None)
    if head is None:
        raise ValueError("variant anchor not found exactly once: the epilogue")
    tail = rest.split("}  // namespace wmma_gemm_sample", 1)[1]
    epilogue = """    // C goes through unpadded shared memory and is read column-wise: the 32 lanes of a warp read
    // addresses 64 floats (256 bytes) apart, all in one bank, so every load is a 32-way conflict.
    __shared__ float c_s[kTile][kTile];
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j)
            wmma::store_matrix_sync(&c_s[warp_row + i * 16][warp_col + j * 16], acc[i][j], kTile,
                                    wmma::mem_row_major);
    __syncthreads();
    for (int idx = threadIdx.x; idx < kTile * kTile; idx += kThreads) {
        const int r = idx % kTile;
        const int c = idx / kTile;
        if (row0 + r < p.m && col0 + c < p.n) p.c[(size_t)(row0 + r) * p.n + col0 + c] = c_s[r][c];
    }
}

"""
    return head + epilogue + "}  // namespace wmma_gemm_sample" + tail


def smem_staged(source: str) -> str:
    """The sample before a343f93: A and B tiles staged through shared memory rows padded by 8 halves
    (50 % bank conflicts on an H200). Not gated by any test: a timing subject of bench/timing_drift.py."""
    start = "    for (int k0 = 0; k0 < p.k; k0 += kStep) {\n"
    epilogue = "    for (int i = 0; i < 2; ++i) {\n        for (int j = 0; j < 2; ++j) {\n            const int r ="
    if source.count(start) != 1 or source.count(epilogue) != 1:
        raise ValueError("variant anchor not found exactly once: the main loop")
    head, rest = source.split(start, 1)
    tail = rest.split(epilogue, 1)[1]
    loop = """    constexpr int kPad = 8;   // halves of padding per smem row
    __shared__ __half a_s[kTile][kStep + kPad];
    __shared__ __half b_s[kTile][kStep + kPad];
    for (int k0 = 0; k0 < p.k; k0 += kStep) {
        // 64 rows x 32 halves per tile = 256 chunks of 8 halves; 128 threads load two each.
        for (int chunk = threadIdx.x; chunk < kTile * kStep / 8; chunk += kThreads) {
            const int r = chunk / (kStep / 8);
            const int c = (chunk % (kStep / 8)) * 8;
            const bool k_ok = k0 + c < p.k;   // K is a multiple of 16: a chunk is all in or all out
            uint4 a_val = make_uint4(0, 0, 0, 0);
            uint4 b_val = make_uint4(0, 0, 0, 0);
            if (k_ok && row0 + r < p.m)
                a_val = *reinterpret_cast<const uint4*>(p.a + (size_t)(row0 + r) * p.k + k0 + c);
            if (k_ok && col0 + r < p.n)
                b_val = *reinterpret_cast<const uint4*>(p.b + (size_t)(col0 + r) * p.k + k0 + c);
            *reinterpret_cast<uint4*>(&a_s[r][c]) = a_val;
            *reinterpret_cast<uint4*>(&b_s[r][c]) = b_val;
        }
        __syncthreads();
        for (int kk = 0; kk < kStep; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a_frag[2];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> b_frag[2];
            for (int i = 0; i < 2; ++i)
                wmma::load_matrix_sync(a_frag[i], &a_s[warp_row + i * 16][kk], kStep + kPad);
            for (int j = 0; j < 2; ++j)
                wmma::load_matrix_sync(b_frag[j], &b_s[warp_col + j * 16][kk], kStep + kPad);
            for (int i = 0; i < 2; ++i)
                for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], a_frag[i], b_frag[j], acc[i][j]);
        }
        __syncthreads();
    }

"""
    return head + loop + epilogue + tail


def compile_error(source: str) -> str:
    return _replace(source, "wmma::fill_fragment(acc[i][j], 0.0f);", "wmma::fill_fragment(acc[i][j], zero_value);")


def slower(source: str, extra_fma: int = 8) -> str:
    source = _replace(source, "    for (int k0 = 0; k0 < p.k; k0 += kStep) {\n",
                      "    float extra = static_cast<float>(threadIdx.x);   // dummy work: registers only\n"
                      "    for (int k0 = 0; k0 < p.k; k0 += kStep) {\n"
                      f"#pragma unroll\n        for (int e = 0; e < {extra_fma}; ++e) extra = fmaf(extra, 0.999f, 1.0f);\n")
    return _replace(source, "    for (int i = 0; i < 2; ++i) {\n        for (int j = 0; j < 2; ++j) {\n            const int r =",
                    "    if (extra == -1.0f) p.c[0] = extra;   // never true; keeps the FMAs alive\n"
                    "    for (int i = 0; i < 2; ++i) {\n        for (int j = 0; j < 2; ++j) {\n            const int r =")


_LAUNCH = "    wmma_gemm_sample::wmma_gemm_kernel<<<grid, kThreads, 0, stream>>>(params);\n"
_KERNEL_END = "    }\n}\n\n}  // namespace wmma_gemm_sample"


def _launcher(source: str, includes: str, body: str) -> str:
    return _replace(includes + source, _LAUNCH, body)


def private_stream(source: str, honest_calls: int = 0) -> str:
    return _launcher(source, "#include <cuda_runtime.h>\n", f"""    static cudaStream_t side = nullptr;   // cheat: a private stream, never joined
    static int calls = 0;
    if (side == nullptr) cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
    const bool hide = ++calls > {honest_calls};
    wmma_gemm_sample::wmma_gemm_kernel<<<grid, kThreads, 0, hide ? side : stream>>>(params);
""")


def private_stream_late(source: str) -> str:
    return private_stream(source, honest_calls=16)


def joined_stream(source: str) -> str:
    return _launcher(source, "#include <cuda_runtime.h>\n", """    static cudaStream_t side = nullptr;   // legitimate: a private stream joined both ways
    static cudaEvent_t ready, done;
    if (side == nullptr) {
        cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
        cudaEventCreateWithFlags(&ready, cudaEventDisableTiming);
        cudaEventCreateWithFlags(&done, cudaEventDisableTiming);
    }
    cudaEventRecord(ready, stream);
    cudaStreamWaitEvent(side, ready, 0);
    wmma_gemm_sample::wmma_gemm_kernel<<<grid, kThreads, 0, side>>>(params);
    cudaEventRecord(done, side);
    cudaStreamWaitEvent(stream, done, 0);
""")


def deferred_thread(source: str) -> str:
    return _launcher(source, "#include <chrono>\n#include <thread>\n", """    std::thread([grid, params, stream] {   // cheat: launched after the call has returned
        std::this_thread::sleep_for(std::chrono::microseconds(300));
        wmma_gemm_sample::wmma_gemm_kernel<<<grid, kThreads, 0, stream>>>(params);
    }).detach();
""")


_CACHE = """    const size_t bytes = sizeof(float) * (size_t)params.m * params.n;
    static std::map<std::vector<unsigned short>, float*> cache;   // cheat: results by %s
    auto hit = cache.find(key);
    if (hit != cache.end()) {
        cudaMemcpyAsync(params.c, hit->second, bytes, cudaMemcpyDeviceToDevice, stream);
        return cudaGetLastError();
    }
    wmma_gemm_sample::wmma_gemm_kernel<<<grid, kThreads, 0, stream>>>(params);
    float* kept = nullptr;
    cudaMalloc(&kept, bytes);
    cudaMemcpyAsync(kept, params.c, bytes, cudaMemcpyDeviceToDevice, stream);
    cache[key] = kept;
"""


def cache_by_pointer(source: str) -> str:
    key = """    std::vector<unsigned short> key(10);
    const void* ptrs[2] = {params.a, params.b};
    std::memcpy(key.data(), ptrs, sizeof(ptrs));
    key[8] = (unsigned short)params.m; key[9] = (unsigned short)params.k;
"""
    return _launcher(source, "#include <cstring>\n#include <map>\n#include <vector>\n",
                     key + _CACHE % "input pointers")


def cache_by_checksum(source: str) -> str:
    key = """    std::vector<unsigned short> key(10);
    cudaMemcpyAsync(key.data(), params.a, 8, cudaMemcpyDeviceToHost, stream);
    cudaMemcpyAsync(key.data() + 4, params.b, 8, cudaMemcpyDeviceToHost, stream);
    cudaStreamSynchronize(stream);
    key[8] = (unsigned short)params.m; key[9] = (unsigned short)params.k;
"""
    return _launcher(source, "#include <map>\n#include <vector>\n",
                     key + _CACHE % "a checksum of the first four elements of A and B")


_EPILOGUE = "    for (int i = 0; i < 2; ++i) {\n        for (int j = 0; j < 2; ++j) {\n            const int r ="


def more_work(source: str, pct: int = 5) -> str:
    """pct % more of the real work: the first ceil(pct % of K/16) K slices again (same loads, same
    MMAs) into an accumulator that is kept alive; the output is unchanged."""
    extra = f"""    wmma::fragment<wmma::accumulator, 16, 16, 16, float> extra;   // +{pct} % work
    wmma::fill_fragment(extra, 0.0f);
    for (int kk = 0; kk < (p.k / 16 * {pct} + 99) / 100 * 16; kk += 16) {{
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a_frag[2];
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> b_frag[2];
        for (int i = 0; i < 2; ++i) {{
            const int r = min(row0 + warp_row + i * 16, p.m - 16);
            wmma::load_matrix_sync(a_frag[i], p.a + (size_t)r * p.k + kk, p.k);
        }}
        for (int j = 0; j < 2; ++j) {{
            const int c = min(col0 + warp_col + j * 16, p.n - 16);
            wmma::load_matrix_sync(b_frag[j], p.b + (size_t)c * p.k + kk, p.k);
        }}
        for (int i = 0; i < 2; ++i)
            for (int j = 0; j < 2; ++j) wmma::mma_sync(extra, a_frag[i], b_frag[j], extra);
    }}
    if (extra.x[0] == -1234.5f) p.c[0] = extra.x[0];   // never true; keeps the extra work alive
"""
    return _replace(source, _EPILOGUE, extra + _EPILOGUE)


def input_modified(source: str) -> str:
    return _replace(source, _KERNEL_END, "    }\n    if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0)   // cheat: scribbles on A\n"
                    "        const_cast<__half*>(p.a)[(size_t)p.m * p.k - 1] = __float2half(0.0f);\n}\n\n"
                    "}  // namespace wmma_gemm_sample")


def out_of_bounds(source: str) -> str:
    return _replace(source, "kk < k0 + kStep && kk < p.k; kk += 16", "kk < k0 + kStep && kk <= p.k; kk += 16")


def endless_loop(source: str) -> str:
    # A volatile *global* flag nobody clears: a volatile local was dropped by the compiler (measured).
    source = _replace(source, "using namespace nvcuda;\n",
                      "using namespace nvcuda;\n\n__device__ volatile int keep_spinning = 1;\n")
    return _replace(source, "    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];\n",
                    "    while (keep_spinning) {   // never ends\n    }\n"
                    "    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];\n")


# Issue 25: kernels wrong on some *timed* calls. A device-side call counter (bumped by a one-thread
# kernel the launcher enqueues before every call, so it counts graph replays too) leaves the first 16
# calls honest (the correctness stage's) and then skips work by a pattern; every pattern skips at
# least one 16x16 tile of C. Skipped calls leave whatever the output block held.
_COUNTER = """
__device__ unsigned int gate_calls = 0;
__device__ int gate_skip = 0;

__global__ void gate_bump(int pattern) {   // decides, on the device, whether this call skips work
    const unsigned int n = ++gate_calls;
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    int skip = 0;
    if (n > 16) {
        if (pattern == 0) skip = (n % 4) != 0;                      // 3 calls in 4, by count
        if (pattern == 1) skip = ((((t >> 10) * 2654435761ull) >> 30) & 3) != 0;  // ~3 in 4, by the clock
        if (pattern == 2) skip = 1;                                 // every call, one tile
        if (pattern == 3) skip = 2;                                 // every call, half the blocks
    }
    gate_skip = skip;
}
"""
SKIP_PATTERNS = {"skip_by_count": 0, "skip_by_clock": 1, "skip_one_tile": 2, "skip_half": 3}


def _skipping(source: str, pattern: int) -> str:
    source = _replace(source, "using namespace nvcuda;\n", "using namespace nvcuda;\n" + _COUNTER)
    source = _replace(source, "    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];\n",
                      "    if (gate_skip == 2 && (blockIdx.y & 1)) return;   // half the work: faster\n"
                      "    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];\n")
    source = _replace(source, "if (r < p.m && c < p.n)   //",
                      "if (r < p.m && c < p.n && !(gate_skip && blockIdx.x == 0 && blockIdx.y == 0 && warp == 0"
                      " && i == 0 && j == 0))   // skips one tile on skipping calls;")
    return _replace(source, _LAUNCH, f"    wmma_gemm_sample::gate_bump<<<1, 1, 0, stream>>>({pattern});\n" + _LAUNCH)


def skip_by_count(source: str) -> str:
    return _skipping(source, SKIP_PATTERNS["skip_by_count"])


def skip_by_clock(source: str) -> str:
    return _skipping(source, SKIP_PATTERNS["skip_by_clock"])


def skip_one_tile(source: str) -> str:
    return _skipping(source, SKIP_PATTERNS["skip_one_tile"])


def skip_half(source: str) -> str:
    return _skipping(source, SKIP_PATTERNS["skip_half"])


def flaky(source: str, one_in: int = 8) -> str:
    """Issue 43: honest for 40 calls, then wrong on about 1 call in `one_in` chosen with rand(), a
    stand-in for a race: such a call launches half the block rows, so half of C is never written."""
    return _launcher(source, "#include <cstdlib>\n", f"""    static int calls = 0;   // flaky: after 40 calls, ~1 in {one_in} computes half of C
    const bool wrong = ++calls > 40 && std::rand() % {one_in} == 0;
    const dim3 rows(grid.x, wrong ? (grid.y + 1) / 2 : grid.y);
    wmma_gemm_sample::wmma_gemm_kernel<<<rows, kThreads, 0, stream>>>(params);
""")


# Default streams (issue 25): launches a CUDA graph capture of the caller's stream does not see.
def legacy_stream(source: str) -> str:
    return _replace(source, _LAUNCH, "    wmma_gemm_sample::wmma_gemm_kernel<<<grid, kThreads>>>(params);   "
                    "// the legacy default stream\n")


def per_thread_stream(source: str) -> str:
    return _replace(source, _LAUNCH, "    wmma_gemm_sample::wmma_gemm_kernel<<<grid, kThreads, 0, cudaStreamPerThread>>>"
                    "(params);\n")


def legacy_stream_more_work(source: str) -> str:
    """The RMSNorm case of issue 25: a default-stream kernel doing a third more work."""
    return legacy_stream(more_work(source, 33))


def per_thread_stream_more_work(source: str) -> str:
    return per_thread_stream(more_work(source, 33))


def profiler_aware(source: str) -> str:
    """Under Nsight Compute (its injection variables in the environment) the K loop runs one slice:
    the profile would describe another, ~64x shorter program (a smaller grid would not do: the full
    one runs in two waves on an H100, an eighth of it in one, only 2x shorter)."""
    return _launcher(source, "#include <cstdlib>\n", """    const bool profiled = std::getenv("CUDA_INJECTION64_PATH") != nullptr ||
                          std::getenv("NV_NSIGHT_INJECTION_TRANSPORT_TYPE") != nullptr;
    GemmParams shown = params;
    if (profiled) shown.k = 16;   // cheat: a sliver of the work while watched
    wmma_gemm_sample::wmma_gemm_kernel<<<grid, kThreads, 0, stream>>>(shown);
""")


BINDING_FILE = "extension/gemm_binding.cpp"
_INIT = "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n"
# Through the Python C API from the module initialiser, as the extension of issue 25 did.
PATCHING_INIT = _INIT + """    PyRun_SimpleString(   // cheat: halve the timer's reading of every kernel, both sides'
        "import time, torch\\n"
        "_real = torch.cuda.Event.elapsed_time\\n"
        "torch.cuda.Event.elapsed_time = lambda self, end: _real(self, end) / 2\\n"
        "_clock = time.perf_counter\\n"
        "time.perf_counter = lambda: _clock() / 2\\n");
"""
# Variants that edit the binding, not the kernel: variant -> binding text -> new binding text.
BINDING_EDITS: dict[str, Callable[[str], str]] = {
    "patching_init": lambda text: _replace(text, _INIT, PATCHING_INIT),
}


def patching_init(source: str) -> str:
    return source                                           # the kernel is the correct one


VARIANTS: dict[str, Callable[..., str]] = {
    "unwritten_tile": unwritten_tile, "bank_conflicts": bank_conflicts,
    "compile_error": compile_error, "slower": slower, "private_stream": private_stream,
    "private_stream_late": private_stream_late, "joined_stream": joined_stream,
    "deferred_thread": deferred_thread, "cache_by_pointer": cache_by_pointer,
    "cache_by_checksum": cache_by_checksum, "input_modified": input_modified,
    "out_of_bounds": out_of_bounds, "endless_loop": endless_loop, "more_work": more_work,
    "smem_staged": smem_staged,
    "skip_by_count": skip_by_count, "skip_by_clock": skip_by_clock, "skip_one_tile": skip_one_tile,
    "skip_half": skip_half, "legacy_stream": legacy_stream, "per_thread_stream": per_thread_stream,
    "legacy_stream_more_work": legacy_stream_more_work, "per_thread_stream_more_work": per_thread_stream_more_work,
    "profiler_aware": profiler_aware, "patching_init": patching_init,
    "fork_join": joined_stream,     # the joined stream at every shape of the sample (issue 25)
    "flaky": flaky, "flaky_own_process": flaky,
    "ptxas_O0": lambda source: source,   # the kernel unchanged: its manifest adds a flag (MANIFEST_EDITS)
}
# Variants that also change the manifest: the endless loop needs a timeout shorter than the default.
# The joined stream is gated at the 2048³ shape only: its fork/join costs 1-1.6 µs per launch on an
# H100 (eager and in a graph alike: +19 % at 528x784x272, +2.5 % at 1024³), a real cost the gate
# rightly reports; at 2048³ (~315 µs) it is within 0.3 %.
MANIFEST_EDITS: dict[str, Callable[[str], str]] = {
    "endless_loop": lambda text: _replace(text, 'dtypes = ["float16"]\n', 'dtypes = ["float16"]\ntimeout_s = 60\n'),
    "joined_stream": lambda text: _replace(
        text, "shapes = [{m = 1024, n = 1024, k = 1024}, {m = 2048, n = 2048, k = 2048}, {m = 528, n = 784, k = 272}]",
        "shapes = [{m = 2048, n = 2048, k = 2048}]"),
}
# Issue 25's variants are gated at 1024^3 (events) and 528x784x272 (a graph, ~15 µs) only: both methods,
# and 2048^3's ~300 µs per call left out of a GPU suite that must fit its device minutes.
_SAMPLE_SHAPES = "shapes = [{m = 1024, n = 1024, k = 1024}, {m = 2048, n = 2048, k = 2048}, {m = 528, n = 784, k = 272}]"
_TWO_SHAPES = "shapes = [{m = 1024, n = 1024, k = 1024}, {m = 528, n = 784, k = 272}]"
for _name in ("skip_by_count", "skip_by_clock", "skip_one_tile", "skip_half", "legacy_stream", "per_thread_stream",
              "legacy_stream_more_work", "per_thread_stream_more_work", "patching_init", "profiler_aware", "fork_join"):
    MANIFEST_EDITS[_name] = lambda text: _replace(text, _SAMPLE_SHAPES, _TWO_SHAPES)
# Issue 43: the flaky kernel at one shape, without a profile (20 jobs must fit ~3 minutes on an H200),
# in this process or beside a side host (`own_process`: the isolated pacing); `ptxas_O0` adds only
# `nvcc_flags = ["-Xptxas=-O0"]`, which the baseline, built from its own manifest, does not have.
_FLAKY = 'shapes = [{m = 1024, n = 1024, k = 1024}]\ndtypes = ["float16"]\nprofile = false\n'
MANIFEST_EDITS["flaky"] = lambda text: _replace(_replace(text, _SAMPLE_SHAPES + "\n", ""), 'dtypes = ["float16"]\n',
                                                _FLAKY)
MANIFEST_EDITS["flaky_own_process"] = lambda text: _replace(MANIFEST_EDITS["flaky"](text), "profile = false\n",
                                                            "profile = false\nown_process = true\n")
MANIFEST_EDITS["ptxas_O0"] = lambda text: _replace(text, 'dtypes = ["float16"]\n',
                                                   'dtypes = ["float16"]\nnvcc_flags = ["-Xptxas=-O0"]\n')
# Issue 25's classes: variant -> (verdict, the rule that must decide it), gated by
# tests/gpu/test_timed_integrity.py. `fork_join` is judged against a plain harness there instead.
TIMED_INTEGRITY: dict[str, tuple[str, str]] = {
    "skip_by_count": ("reject", "timed_outputs"),
    "skip_by_clock": ("reject", "timed_outputs"),
    "skip_one_tile": ("reject", "timed_outputs"),
    "skip_half": ("reject", "timed_outputs"),
    "legacy_stream": ("accept", ""),
    "per_thread_stream": ("accept", ""),
    "legacy_stream_more_work": ("reject", "max_latency_regression_pct"),
    "per_thread_stream_more_work": ("reject", "max_latency_regression_pct"),
    "patching_init": ("reject", "timer_untouched"),
    "profiler_aware": ("reject", "profile_matches_timing"),
}
# The cheat catalogue: variant -> (verdict, the rule that must decide it). `joined_stream` must be
# accepted with a time within 2 % of the plain launch. `private_stream_late` was decided by
# `all_streams_time` until the timed calls were checked (issue 25): its output, written on a stream
# never joined to the caller's, is not there at the end event of a checked timed call, and
# `timed_outputs` comes first in the verdict's order (H200: 561 of 592 checked calls unwritten).
CATALOGUE: dict[str, tuple[str, str]] = {
    "private_stream": ("reject", "correctness"),
    "private_stream_late": ("reject", "timed_outputs"),
    "joined_stream": ("accept", ""),
    "deferred_thread": ("reject", "correctness"),
    "cache_by_pointer": ("reject", "correctness"),
    "cache_by_checksum": ("reject", "correctness"),
    "unwritten_tile": ("reject", "correctness"),
    "input_modified": ("reject", "correctness"),
    "out_of_bounds": ("reject", "correctness"),
    "endless_loop": ("reject", "correctness"),
    "compile_error": ("reject", "static"),
    "more_work": ("reject", "max_latency_regression_pct"),
    "bank_conflicts": ("reject", "max_bank_conflict_pct"),
}


def apply_variant(source: str, variant: str) -> str:
    """`slower:16` passes 16 to `slower`; other variants take no argument."""
    name, _, arg = variant.partition(":")
    if name not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r} (known: {', '.join(VARIANTS)})")
    return VARIANTS[name](source, int(arg)) if arg else VARIANTS[name](source)


def commit_files(repo: Path, files: dict[str, str | None], message: str) -> str:
    """Write (or, with None, delete) files and commit them on the current branch; the new sha."""
    for rel, text in files.items():
        path = repo / rel
        if text is None:
            path.unlink()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


def make_repo(tmp_path: Path, sample: str = "wmma_gemm", variants: list[str] | tuple[str, ...] = ()
              ) -> tuple[Path, dict[str, str]]:
    """A git repository of `sample` at `tmp_path/sample`: base commit + one commit per variant."""
    repo = Path(tmp_path) / sample
    shutil.copytree(SAMPLES_DIR / sample, repo)
    _git(repo, "init", "-q")
    shas = {"base": commit_files(repo, {}, f"{sample}: the correct kernel")}
    base_source = (repo / KERNEL_FILE).read_text(encoding="utf-8") if variants else ""
    for variant in variants:
        _git(repo, "checkout", "-q", "-b", f"variant/{variant.replace(':', '-')}", shas["base"])
        files: dict[str, str | None] = {KERNEL_FILE: apply_variant(base_source, variant)}
        binding = BINDING_EDITS.get(variant.partition(":")[0])
        if binding:
            files[BINDING_FILE] = binding((repo / BINDING_FILE).read_text(encoding="utf-8"))
        edit = MANIFEST_EDITS.get(variant.partition(":")[0])
        if edit:
            files["gate.toml"] = edit((repo / "gate.toml").read_text(encoding="utf-8"))
        shas[variant] = commit_files(repo, files, f"{sample}: variant {variant}")
    _git(repo, "checkout", "-q", "main")
    return repo, shas
