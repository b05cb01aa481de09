"""A build whose objects are all cache hits (the static stage compiled them) still links into its
own output folder (seen on the device: `ld: cannot open output file .../build/k.so`)."""

from pathlib import Path

from gate.compiling import build, objects
from gate.compiling import toolchain as tc
from gate.compiling.build_cache import Toolchain
from gate.domain import KernelSpec, StageStatus
from gate.nvidia import compiler


class FakeTools:
    nvcc = "nvcc"
    versions = Toolchain("t", "c", "x")

    def nvcc_command(self, archs, name, uses_torch, extra=None):
        return ["nvcc", *archs]

    def cxx_command(self, name, extra=None):
        return ["c++"]

    def link_command(self, objs, output):
        return ["link", *objs, "-o", output]


def test_every_object_a_cache_hit_still_links_into_an_existing_folder(tmp_path, monkeypatch):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "k.cu").write_text("__global__ void k() {}\n")
    cached = tmp_path / "cached.o"
    cached.write_bytes(b"\x7fELF")
    monkeypatch.setattr(tc, "discover", lambda nvcc="nvcc", facts=None: FakeTools())
    monkeypatch.setattr(tc, "target_archs", lambda archs: ["sm_90"])
    monkeypatch.setattr(tc, "nvcc_versions", lambda nvcc: Toolchain("none", "none", "x"))
    monkeypatch.setattr(objects, "compile_object",
                        lambda rel, *a: objects.CompiledObject(rel, True, True, cached, "ptxas info"))
    linked = []

    def link(command, cwd, timeout_s):
        linked.append(Path(command[-1]).parent.is_dir())
        return compiler.ToolRun(True, "")

    monkeypatch.setattr(compiler, "run_tool", link)
    spec = KernelSpec(name="k", sources=["k.cu"], arch=["sm_90"])
    res = build.build_extension(spec, tmp_path / "src", tmp_path / "cache", tmp_path / "out" / "build")
    assert res.status is StageStatus.PASSED and (res.cache_hits, res.cache_misses) == (1, 0)
    assert linked == [True]
