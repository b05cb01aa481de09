"""The compiler flags a manifest may add (`nvcc_flags`, `cxx_flags`): an allowlist.

Repositories build their extensions with flags of their own (causal-conv1d's setup.py: `--use_fast_math`,
`-U__CUDA_NO_HALF_OPERATORS__`, ...), and a kernel timed without them is not the kernel its users run;
docs/manifest.md says where they go (after torch's own, as in a `CUDAExtension`) and what is allowed.

Only flags that change how code is compiled are allowed: macros, optimisation and math modes, the C++
standard, register limits, ptxas options and include directories inside the repository. Flags that pick
another compiler or host compiler (`-ccbin`), pass options through to it (`-Xcompiler`, where gcc's
`-fplugin` loads a shared object), name outputs, or read files outside the checkout are refused: the
compile is boxed anyway, but the gate's command line stays the gate's.

nvcc runs its sub-commands through a shell, and a macro's value goes with them: `-DX=$(touch f)` made
nvcc 13.0 create `f`. A value is therefore limited to letters, digits and `_ . + -` (`_VALUE`), the
same set as the loader's path names, which bounds `-I` directories.
"""

from __future__ import annotations

import re

_MACRO = r"[A-Za-z_][A-Za-z0-9_]*"
_VALUE = r"[A-Za-z0-9_.+-]*"          # nothing a shell reads: no $ ` ; | & quotes or spaces
_PTXAS_OPTION = (r"(?:-v|-O[0-3]|--warn-on-spills|--warn-on-local-memory-usage"
                 r"|--allow-expensive-optimizations=(?:true|false)|-dlcm=(?:ca|cg)|-dscm=(?:cg|cs|wt))")
_COMMON = (rf"-D{_MACRO}(?:={_VALUE})?", rf"-U{_MACRO}", r"-O[0-3]", r"-std=c\+\+(?:17|20)")
NVCC_ALLOWED = _COMMON + (
    r"--?use_fast_math", r"--expt-relaxed-constexpr", r"--expt-extended-lambda", r"--extended-lambda",
    r"--(?:ftz|prec-div|prec-sqrt|fmad)=(?:true|false)", r"--?maxrregcount=\d{1,3}", r"--restrict",
    r"--extra-device-vectorization", r"-lineinfo",
    rf"(?:--ptxas-options=|-Xptxas=){_PTXAS_OPTION}(?:,{_PTXAS_OPTION})*",
)
CXX_ALLOWED = _COMMON + (r"-fno-strict-aliasing", r"-W(?:no-)?[a-z][a-z0-9-]*")
INCLUDE = "-I"       # -I<dir>: a directory inside the repository (the manifest loader checks the path)

_NVCC = re.compile("|".join(f"(?:{p})" for p in NVCC_ALLOWED))
_CXX = re.compile("|".join(f"(?:{p})" for p in CXX_ALLOWED))
SUMMARY = ("-D/-U macros (values of letters, digits and _ . + -), -O0..-O3, -std=c++17/20, -I<directory in the repository>; nvcc also "
           "--use_fast_math, --expt-relaxed-constexpr, --expt-extended-lambda, --ftz/--prec-div/--prec-sqrt/"
           "--fmad=true|false, --maxrregcount=N, --restrict, --extra-device-vectorization, -lineinfo, "
           "--ptxas-options=/-Xptxas= with -v, -O0..-O3, --warn-on-spills, -dlcm=, -dscm=; "
           "c++ also -fno-strict-aliasing, -W warnings")


def include_dir(flag: str) -> str | None:
    """The directory of an `-I<dir>` flag (one word, no space), else None."""
    return flag[len(INCLUDE):] if flag.startswith(INCLUDE) and len(flag) > len(INCLUDE) else None


def refusal(flag: str, compiler: str) -> str | None:
    """None when `flag` may be given to `compiler` ("nvcc" or "cxx"), else why not. `-I` flags pass
    here; their directory is the loader's to check."""
    if include_dir(flag) is not None:
        return None
    pattern = _NVCC if compiler == "nvcc" else _CXX
    if pattern.fullmatch(flag):
        return None
    return f"{flag!r} is not an allowed {compiler} flag (allowed: {SUMMARY})"
