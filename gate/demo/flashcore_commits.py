"""Build the demo repository: FlashCore's revisions as real git commits, each a step a kernel engineer took.

    1. scalar baseline                        -> accept (new kernel)
    2. the WMMA kernel                        -> accept
    3. "save shared memory": padding dropped  -> reject by max_bank_conflict_pct (ldmatrix rows conflict)
    4. padding restored                       -> accept
    5. "clearer" code that does extra work    -> reject by max_latency_regression_pct
    6. step 5 reverted                        -> accept
    7. the Hopper kernel (wgmma + TMA)        -> accept (new kernel) on an sm_90 GPU
    8. persistent blocks                      -> accept (faster: the next tile's loads overlap this one's end)
    9. three consumers taking turns at D=64   -> accept (faster: the tensor cores idle less)
   10. causal tiles started early             -> accept (faster causal: the short tile sees few keys)
   11. K/V ring cut to one stage              -> reject by max_latency_regression_pct (loads no longer overlap)

The kernels come from this repository's `kernels/` and `extension/`; steps 3, 5, 8, 9, 10 and 11 are
edits of the real `wmma.cu` and `wgmma.cu` at the lines the kernels mark for it (`kSmemPad`, the
EXTRA-WORK SPOT, `kPersistent`, the launcher's D=64 choice, `kCausalLead`, `kStages`): step 7 adds
`wgmma.cu` with one block per output tile, two consumers taking turns at D=64 and causal tiles from
row 0, as it was first written, and steps 8, 9 and 10 turn on what this repository's kernel has. Step 6 exists because the gate judges against the last accepted revision: without it the
extra work of step 5 would still be in every later commit and reject each of them. `flashcore_wgmma`
targets sm_90a only: on any other GPU (and without one) steps 7 and 8 are `incomplete` for it, with
the reason, never a reject.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gate.errors import GateError

PAD_LINE = re.compile(r"constexpr int kSmemPad = \d+;")
EXTRA_WORK_END = "// ==== END EXTRA-WORK SPOT"
STAGES_LINE = re.compile(r"static constexpr int kStages = [^;\n]+;")
# The launcher's 16-bit choice at D=64 (`per_shape_config` in wgmma.cu); D=128 stays `c2n128`.
D64_CHOICE_LINE = re.compile(r"^  return p\.head_dim == 64 \? Config::kC\w+ : Config::kC2N128;", re.M)
# The "clearer" code of the slower commit: each probability recomputed through two more exponentials
# that are 1 at run time (the compiler cannot fold `0 * x`), so the results stay exact. Exponentials
# run on the SFU, the unit FlashAttention's softmax already leans on, so this costs real time.
EXTRA_WORK = """\
      {  // Recompute the probabilities from their exponents, for clarity.
#pragma unroll
        for (int mi = 0; mi < kMAtoms; ++mi)
#pragma unroll
          for (int j = 0; j < kNTiles; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e)
              s[mi][j][e] *= exp2f(0.0f * s[mi][j][e]) * exp2f(-0.0f * s[mi][j][e]);
      }
"""

SCALAR_MANIFEST = """\
# FlashCore, as gated by `gate demo`: the mission shape and one long sequence.
[[kernel]]
name = "flashcore_scalar"
sources = ["kernels/flashcore/scalar.cu", "extension/flashcore_binding.cpp"]
function = "forward"
workload = "attention"
arch = ["sm_80", "sm_90"]
shapes = [{b = 1, h = 8, s = 512, d = 64, causal = false}]
dtypes = ["float16"]

[kernel.gates]
max_latency_regression_pct = 3
max_spill_bytes = 0
"""

WMMA_MANIFEST = """
[[kernel]]
name = "flashcore_wmma"
sources = ["kernels/flashcore/wmma.cu", "extension/flashcore_binding.cpp"]
function = "forward"
workload = "attention"
arch = ["sm_80", "sm_90"]
shapes = [{b = 1, h = 8, s = 512, d = 64, causal = false}, {b = 4, h = 16, s = 4096, d = 64, causal = false}]
dtypes = ["float16"]

[kernel.gates]
max_latency_regression_pct = 3
max_bank_conflict_pct = 10
max_spill_bytes = 0
require_sass = ["HMMA"]
"""

# wgmma and setmaxnreg exist only on the arch-specific target, so this kernel runs on sm_90 GPUs alone.
# fp16 only, one short and one long shape, like flashcore_wmma: wgmma.cu instantiates every tile
# configuration for both head dims and dtypes whatever the shapes (22 kernels, about 17 s of nvcc on
# two CPU cores per changed revision), while timing and profiling grow with every shape and dtype.
WGMMA_MANIFEST = """
[[kernel]]
name = "flashcore_wgmma"
sources = ["kernels/flashcore/wgmma.cu", "extension/flashcore_binding.cpp"]
function = "forward"
workload = "attention"
arch = ["sm_90a"]
shapes = [{b = 1, h = 8, s = 512, d = 64, causal = false}, {b = 4, h = 16, s = 4096, d = 64, causal = false},
          {b = 4, h = 16, s = 4096, d = 64, causal = true}]
dtypes = ["float16"]

[kernel.gates]
max_latency_regression_pct = 3
max_spill_bytes = 0
require_sass = ["HGMMA"]
"""


@dataclass(frozen=True)
class Step:
    message: str
    apply: Callable[[Path, Path], None]     # (source tree of this project, demo repo)
    expect: dict[str, str]                  # kernel -> what the gate should say (default: accept)
    body: str = ""                          # the commit message's body, under `message`


def project_root() -> Path:
    """The checkout `gate` runs from (the kernels are not part of the Python package)."""
    root = Path(__file__).resolve().parents[2]
    if not (root / "kernels" / "flashcore").is_dir():
        raise GateError(f"gate demo needs the FlashCore sources: {root / 'kernels/flashcore'} not found "
                        "(run it from a checkout of this repository, installed with `pip install -e .`)")
    return root


def _copy(src_root: Path, repo: Path, rel: str) -> None:
    (repo / rel).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src_root / rel, repo / rel)


def _scalar(src: Path, repo: Path) -> None:
    headers = sorted(str(h.relative_to(src)) for h in (src / "kernels/flashcore").glob("*.h"))
    for rel in (*headers, "kernels/flashcore/scalar.cu", "extension/flashcore_binding.cpp"):
        _copy(src, repo, rel)
    (repo / "gate.toml").write_text(SCALAR_MANIFEST)


def _wmma(src: Path, repo: Path) -> None:
    _copy(src, repo, "kernels/flashcore/wmma.cu")
    (repo / "gate.toml").write_text(SCALAR_MANIFEST + WMMA_MANIFEST)


def _wgmma(src: Path, repo: Path) -> None:
    _copy(src, repo, "kernels/flashcore/wgmma.cu")
    _set_switch("kPersistent", False)(src, repo)
    _set_d64_choice("kC2N128P")(src, repo)
    _set_switch("kCausalLead", False)(src, repo)
    (repo / "gate.toml").write_text(SCALAR_MANIFEST + WMMA_MANIFEST + WGMMA_MANIFEST)


def _set_line(rel: str, pattern: re.Pattern[str], line: str, shown: str) -> Callable[[Path, Path], None]:
    """An edit of the demo repository's `rel`: its one line matching `pattern` becomes `line`. A file
    with none or several such lines is an error that quotes the line (`shown`)."""
    def apply(_src: Path, repo: Path) -> None:
        path = repo / rel
        text, n = pattern.subn(line, path.read_text())
        if n != 1:
            raise GateError(f"{path}: expected one `{shown}` line, found {n}")
        path.write_text(text)
    return apply


def _set_switch(name: str, on: bool) -> Callable[[Path, Path], None]:
    """`wgmma.cu`'s `static constexpr bool <name>` set to `on`. `kPersistent`: one block per output tile
    (off), or one block per SM walking the tiles (on), where the next tile's Q, K and V load while a
    block finishes the last one. `kCausalLead`: causal tiles from row 0 (off), so a head's last tile
    holds the rows left over and sees every key for them, or started early (on), so that short tile is
    the first and sees few keys."""
    return _set_line("kernels/flashcore/wgmma.cu", re.compile(rf"static constexpr bool {name} = (?:true|false);"),
                     f"static constexpr bool {name} = {'true' if on else 'false'};",
                     f"static constexpr bool {name} = ...;")


def _set_d64_choice(config: str) -> Callable[[Path, Path], None]:
    """The tile config `wgmma.cu`'s launcher takes for 16-bit inputs at D=64 on a grid that fills the GPU:
    `kC2N128P` (two consumer warpgroups taking turns) as first written, `kC3N128P` (three, in round robin)."""
    return _set_line("kernels/flashcore/wgmma.cu", D64_CHOICE_LINE,
                     f"  return p.head_dim == 64 ? Config::{config} : Config::kC2N128;",
                     "return p.head_dim == 64 ? Config::... : Config::kC2N128;")


def _set_pad(halves: int) -> Callable[[Path, Path], None]:
    return _set_line("kernels/flashcore/wmma.cu", PAD_LINE, f"constexpr int kSmemPad = {halves};",
                     "constexpr int kSmemPad = N;")


def _extra_work(_src: Path, repo: Path) -> None:
    path = repo / "kernels/flashcore/wmma.cu"
    text = path.read_text()
    at = text.find(EXTRA_WORK_END)
    if at < 0:
        raise GateError(f"{path}: no `{EXTRA_WORK_END}` marker for the demo's slower commit")
    line_start = text.rfind("\n", 0, at) + 1
    path.write_text(text[:line_start] + EXTRA_WORK + text[line_start:])


def _revert_extra_work(_src: Path, repo: Path) -> None:
    path = repo / "kernels/flashcore/wmma.cu"
    text = path.read_text()
    if text.count(EXTRA_WORK) != 1:
        raise GateError(f"{path}: expected the demo's extra work once, found it {text.count(EXTRA_WORK)} times")
    path.write_text(text.replace(EXTRA_WORK, ""))


# The K/V ring of `wgmma.cu` cut to one stage. Still correct (every wait and arrive keeps its phase), but
# the producer can load tile t+1 only once every consumer has released tile t, and it issues loads in order
# (K_t, V_t, K_t+1): V_t waits for the release of V_t-1 at the end of the consumers' iteration t, so K_t+1
# starts only then and iteration t+1 begins by waiting for the whole TMA latency. With 2-3 stages those
# loads ran under the previous tiles' matrix work and softmax.
_one_stage = _set_line("kernels/flashcore/wgmma.cu", STAGES_LINE, "static constexpr int kStages = 1;",
                       "static constexpr int kStages = ...;")


STEPS: tuple[Step, ...] = (
    Step("FlashCore scalar baseline: one online-softmax pass, FP32 accumulators", _scalar,
         {"flashcore_scalar": "accept (new kernel)"}),
    Step("Add the tensor-core kernel: mma.sync for Q·Kᵀ and P·V, cp.async double buffering", _wmma,
         {"flashcore_wmma": "accept (new kernel)"}),
    Step("Save shared memory: drop the row padding of the K/V tiles", _set_pad(0),
         {"flashcore_wmma": "reject: bank conflicts"}),
    Step("Restore the K/V row padding: ldmatrix rows conflicted without it", _set_pad(8), {}),
    Step("Recompute the softmax row statistics for clarity", _extra_work,
         {"flashcore_wmma": "reject: latency regression"}),
    Step("Revert the softmax recomputation: the gate measured it slower", _revert_extra_work, {}),
    Step("Add the Hopper kernel: wgmma + TMA, producer/consumer warpgroups (sm_90a)", _wgmma,
         {"flashcore_wgmma": "accept (new kernel)"}),
    Step("Persistent blocks: one per SM walks the output tiles, the next tile's loads under this one's end",
         _set_switch("kPersistent", True), {},
         body="Each block used to start by waiting for its first Q and K tiles and end by storing its output\n"
              "with nothing else to do. Now the producer loads the next tile's Q, K and V while the consumers\n"
              "finish the last one. The blocks take the tiles of one list in rounds, the causal ones heaviest\n"
              "first, so they all run out of work at about the same time."),
    Step("Three consumer warpgroups take turns at D=64: 192-row blocks, the tensor cores idle less",
         _set_d64_choice("kC3N128P"), {},
         body="With two consumers, one warpgroup's softmax (the exponentials take about as long as its two\n"
              "matrix products at D=64) did not cover the other's wgmmas, so the tensor cores waited. Three\n"
              "warpgroups of 160 registers take turns in round robin, as FlashAttention-3 does at this head\n"
              "dimension: while one runs its softmax, the other two keep the tensor cores busy."),
    Step("Start causal tiles early: the short tile of each head becomes its first, which sees few keys",
         _set_switch("kCausalLead", True), {},
         body="192-row tiles do not divide S=4096: each head's last tile held 64 rows and still computed every\n"
              "key for all 192 of its rows, because under the causal mask the last rows see the most keys.\n"
              "Started 128 rows early, the tiles leave the remainder to tile 0, which sees one or two key tiles;\n"
              "it computes rows that belong to tile 1 too but stores only its own."),
    Step("Shrink the K/V ring to one stage: 64 KB less shared memory per block", _one_stage,
         {"flashcore_wgmma": "reject: latency regression"},
         body="Nothing reads more than one K and one V tile at a time, so the extra stages looked like waste.\n"
              "(Why it is slower: the producer may now load a tile only once the consumers have released the\n"
              "previous one, so the TMA loads no longer run under the matrix work and every key tile starts\n"
              "by waiting for its K.)"),
)


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "FlashCore", "GIT_AUTHOR_EMAIL": "flashcore@example.com",
           "GIT_COMMITTER_NAME": "FlashCore", "GIT_COMMITTER_EMAIL": "flashcore@example.com"}
    out = subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True)
    return out.stdout.strip()


def build_demo_repo(repo: Path, steps: tuple[Step, ...] = STEPS) -> list[tuple[str, Step]]:
    """Create `repo` anew with one commit per step; returns (sha, step) in commit order."""
    src = project_root()
    if repo.exists():
        shutil.rmtree(repo)
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    shas = []
    for step in steps:
        step.apply(src, repo)
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", step.message, *(["-m", step.body] if step.body else []))
        shas.append((_git(repo, "rev-parse", "HEAD"), step))
    return shas
