"""Readable names for compiled kernel functions (ptxas and cuobjdump print mangled C++ names).

`kernel_name("_ZN9flashcore26flashcore_wgmma_fwd_kernelINS_3CfgILi128ELi1ELi128ELb0EEELb0EEEv11FlashParamsNS_7TmaMapsE")`
is `flashcore_wgmma_fwd_kernel<Cfg<128, 1, 128, false>, false>`: the name with its template
arguments (so a kernel's instantiations are told apart), without namespaces, return type or
parameters. Demangling is GCC's own (`abi::__cxa_demangle` from libstdc++, through `cxxfilt`), else
a pure-Python reading of the Itanium grammar (`itanium_demangler`) for the names GCC's refuses: a
CUTLASS 2 device GEMM's 1,456-character `cutlass::Kernel<...>` instance, which libstdc++ and binutils'
c++filt give up on (LLVM's reads it), read `Kernel` in every table (issue 43). Without either,
`short_name` reads the last name of an Itanium nested name.
"""

from __future__ import annotations

import re
from functools import cache

_QUALIFIER = re.compile(r"\b[A-Za-z_]\w*::|\(anonymous namespace\)::")


@cache
def kernel_name(function: str) -> str:
    """The readable name of a (possibly mangled) function: name<template args>."""
    if not function.startswith("_Z"):
        return function
    full = _demangle(function)
    if full is None:
        return short_name(function)
    return _strip_signature(_QUALIFIER.sub("", full)) or short_name(function)


def _demangle(mangled: str) -> str | None:
    """`mangled` demangled in c++filt's form, by libstdc++, else by `itanium_demangler`; None if neither can."""
    try:
        import cxxfilt

        return cxxfilt.demangle(mangled)
    except Exception:   # no libstdc++ demangler here, or a name it cannot read
        pass
    try:
        import itanium_demangler

        node = itanium_demangler.parse(mangled)
    except Exception:   # not installed, or a name outside its grammar
        return None
    return _plain_integers(str(node)) if node is not None else None


def launch_name(function: str, mangled: str = "", demangled: str = "") -> str:
    """A profiled launch's name as the tables show it: from the mangled name (Nsight Compute's function
    name drops the template arguments: every CUTLASS 2 instance reads `Kernel`), else the demangled
    signature, else `function`."""
    if mangled.startswith("_Z"):
        return kernel_name(mangled)
    return (_strip_signature(_QUALIFIER.sub("", demangled)) if demangled else "") or function


# nvcc names an anonymous namespace per translation unit, `_GLOBAL__N__<hash>_<len>_<file>_<hash>`
# (seen with CUDA 13.0: `_ZN36_GLOBAL__N__5794feb6_4_a_cu_d589cb6015conv_fwd_kernelILi4EEEvPf`), so
# the same kernel in two builds of one file gets two mangled names. The Itanium length prefix
# before it says where the name ends.
_ANONYMOUS_MANGLED = re.compile(r"(\d+)(_GLOBAL__N_)")
_ANONYMOUS = "(anonymous namespace)::"


@cache
def match_key(name: str) -> str:
    """The name a kernel is matched by across builds and profiles, from a mangled name or a demangled
    signature: namespaces and template arguments kept; anonymous namespaces, return type, parameters
    and spaces removed (`ns::k<(anonymous namespace)::Cfg>` is `ns::k<Cfg>`)."""
    if name.startswith("_Z"):
        name = canonical_anonymous(name)
        full = _demangle(name)
        if full is None:    # no demangler, or a name it cannot read: the canonical mangled name
            return name
        name = full
    return "".join(_strip_signature(_plain_integers(name).replace(_ANONYMOUS, "")).split())


# Nsight Compute writes a template's integral arguments with a C-style cast where c++filt writes the
# bare literal, with a suffix for the unsigned and long types: `k<(int)64, (unsigned int)3, (bool)1>`
# (the recorded H200 report's `flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<(int)64, ...,
# (bool)0, ...>`) is c++filt's `k<64, 3u, true>`. c++filt keeps the cast itself for the narrow types
# (`(short)3`, `(unsigned char)3`) and for enumerations (`(ns::E)3`); enumerations are left alone, as
# both tools name the type.
_INTEGER_TYPE = r"(?:(?:un)?signed(?: char| short| int| long long| long)?|char|short|int|long long|long|wchar_t)"
_INTEGER_CAST = re.compile(r"\(" + _INTEGER_TYPE + r"(?: int)?\)\s*(?=-?\d)")
_BOOL_CAST = re.compile(r"\(bool\)\s*([01])(?!\d)")
_INTEGER_SUFFIX = re.compile(r"(?<![\w.])(-?\d+)(?:ull|ul|ll|u|l)(?![\w.])")


def _plain_integers(name: str) -> str:
    """`k<(int)64, (unsigned int)3, (bool)1>` and `k<64, 3u, true>` -> `k<64, 3, true>`, whichever tool wrote it."""
    name = _INTEGER_CAST.sub("", name)
    name = _BOOL_CAST.sub(lambda m: "true" if m.group(1) == "1" else "false", name)
    return _INTEGER_SUFFIX.sub(r"\1", name)


def canonical_anonymous(mangled: str) -> str:
    """Every per-file anonymous namespace of `mangled` as GCC's `12_GLOBAL__N_1`."""
    out, i = [], 0
    for match in _ANONYMOUS_MANGLED.finditer(mangled):
        if match.start() < i:
            continue
        length = int(match.group(1))
        out.append(mangled[i:match.start()] + "12_GLOBAL__N_1")
        i = match.start(2) + length
    return "".join(out) + mangled[i:]


def _strip_signature(text: str) -> str:
    """`void f<A, B>(int, float)` -> `f<A, B>`: drop the trailing parameter list and a return type."""
    depth, end = 0, len(text)
    for i in range(len(text) - 1, -1, -1):          # the '(' that opens the last top-level group
        ch = text[i]
        if ch == ")":
            depth += 1
        elif ch == "(":
            depth -= 1
            if depth == 0:
                end = i
                break
    head, depth = text[:end].strip(), 0
    for i, ch in enumerate(head):                    # a return type ends at the first top-level space
        depth += ch == "<"
        depth -= ch == ">"
        if ch == " " and depth == 0:
            return head[i + 1:].strip()
    return head


def short_name(function: str) -> str:
    """`_ZN16wmma_gemm_sample16wmma_gemm_kernelE10GemmParams` -> `wmma_gemm_kernel`, without a demangler."""
    if not function.startswith("_Z"):
        return function
    names, i = [], 3 if function.startswith("_ZN") else 2
    while i < len(function) and function[i].isdigit():
        j = i
        while j < len(function) and function[j].isdigit():
            j += 1
        length = int(function[i:j])
        names.append(function[j:j + length])
        i = j + length
        if not function.startswith("_ZN"):
            break
    return names[-1] if names else function
