"""The side host (issue 26): the baseline in a process of its own, asked over pipes. The process
is real (`python -m gate.timing.side_host`); its GPU operations are fakes (`side_host_fakes`)."""

import json
import os
import signal
from pathlib import Path

import pytest

from gate.domain import KernelSpec, Shape
from gate.timing import side_wire
from gate.timing.remote_side import SideHostClient, SideHostError
from tests.fakes.side_host_fakes import BACKEND as FAKE


def kernel() -> KernelSpec:
    return KernelSpec(name="add_into", sources=["csrc/ops.cu"], workload="wl:make", shapes=[Shape({"n": 8})])


def module_file(tmp_path, body: str) -> Path:
    path = tmp_path / "built_module.py"
    path.write_text(body)
    return path


def logged(log: Path) -> list[list]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def start(tmp_path, module: Path, quiesce=lambda: None) -> SideHostClient:
    return SideHostClient.start(kernel(), str(module), tmp_path / "cand", tmp_path / "art" / "side-host.log",
                                quiesce=quiesce, backend=FAKE)


def test_every_operation_goes_to_the_hosts_backend_and_each_reply_follows_its_idle(tmp_path, side_host_env):
    quiesced = []
    client = start(tmp_path, module_file(tmp_path, "x = 1\n"), quiesce=lambda: quiesced.append(1))
    try:
        side = client.side_for(0, "float32", 3)
        assert side.estimate_us(5) == 12.5
        prepared = side.prepare(True, 64, 3, 4096)
        assert (prepared.method, prepared.launches, prepared.work_nodes) == ("graph", 64, [64] * 4)
        assert prepared.topologies[0].is_chain
        assert side.replay_us(5) == 11.0
        assert [side.repetition_us(i) for i in (2, 0)] == [12.0, 10.0]
        side.refill(2)
        side.drop_graphs()
        assert client.tampered() == ["torch.cuda.Event.elapsed_time"]
    finally:
        client.close()
    ops = [e for e in logged(side_host_env)]
    assert ops[0] == ["load", "add_into", "built_module.py", "cand"]
    work = [e for e in ops if e[0] != "idle"]
    assert work[1:] == [["make_inputs", "0:float32", 0, "float32", 3], ["estimate_us", "0:float32", 5],
                        ["prepare", "0:float32", True, 64, 3, 4096], ["repetition_us", "0:float32", 2],
                        ["repetition_us", "0:float32", 0], ["refill", "0:float32", 2], ["drop_graphs", "0:float32"]]
    # every logged operation is followed by the backend's idle before the next one is asked
    assert all(ops[k + 1] == ["idle"] for k, e in enumerate(ops) if e[0] != "idle")
    assert len(quiesced) == 10                 # this process synchronised before each of its 10 requests
    assert client._process.returncode == 0     # closed on request


def test_each_shape_keeps_its_own_sets_in_the_host_for_a_later_rerun(tmp_path, side_host_env):
    client = start(tmp_path, module_file(tmp_path, ""))
    try:
        first, second = client.side_for(0, "float16", 3), client.side_for(1, "float16", 3)
        assert second.repetition_us(1) == 111.0
        assert first.repetition_us(1) == 11.0          # the first shape, asked after the second was made
    finally:
        client.close()


def test_an_error_the_side_raises_comes_back_with_its_message_and_the_host_serves_on(tmp_path, side_host_env):
    client = start(tmp_path, module_file(tmp_path, ""))
    try:
        side = client.side_for(0, "float32", 3)
        with pytest.raises(SideHostError, match="IndexError: no input set 7"):
            side.repetition_us(7)
        assert side.repetition_us(1) == 11.0
    finally:
        client.close()


def test_an_import_that_aborts_is_the_loads_failure_naming_sigabrt_and_the_log_tail(tmp_path, side_host_env):
    module = module_file(tmp_path, "import os, sys\n"
                         "print('Only a single TORCH_LIBRARY can be used to register the namespace gate_probe',"
                         " file=sys.stderr, flush=True)\nos.abort()\n")
    with pytest.raises(SideHostError) as raised:
        start(tmp_path, module)
    message = str(raised.value)
    assert message.startswith("its process killed by SIGABRT during load: ")
    assert "Only a single TORCH_LIBRARY can be used to register the namespace gate_probe" in message


def test_an_import_error_is_the_loads_failure_with_its_own_message(tmp_path, side_host_env):
    with pytest.raises(SideHostError, match="ImportError: undefined symbol: add_into_kernel"):
        start(tmp_path, module_file(tmp_path, "raise ImportError('undefined symbol: add_into_kernel')\n"))


def test_a_crash_while_timed_names_the_signal_and_later_requests_fail_the_same_way(tmp_path, side_host_env):
    client = start(tmp_path, module_file(tmp_path, ""))
    try:
        side = client.side_for(0, "float32", 3)
        with pytest.raises(SideHostError, match="killed by SIGSEGV during repetition_us"):
            side.repetition_us(-1)
        with pytest.raises(SideHostError, match="killed by SIGSEGV during refill"):
            side.refill(0)
    finally:
        client.close()
    assert client._process.returncode == -signal.SIGSEGV


def test_an_unknown_operation_is_refused_by_name(tmp_path, side_host_env):
    client = start(tmp_path, module_file(tmp_path, ""))
    try:
        with pytest.raises(SideHostError, match="no operation 'shutdown_gpu'"):
            client._request("shutdown_gpu")
    finally:
        client.close()


def test_a_frame_round_trips_and_a_closed_pipe_between_frames_is_the_end(tmp_path):
    read_fd, write_fd = os.pipe()
    side_wire.send(write_fd, {"op": "refill", "args": {"set_index": 2}})
    os.close(write_fd)
    assert side_wire.receive(read_fd) == {"op": "refill", "args": {"set_index": 2}}
    assert side_wire.receive(read_fd) is None
    os.close(read_fd)


def test_a_pipe_that_ends_inside_a_frame_is_a_wire_error(tmp_path):
    read_fd, write_fd = os.pipe()
    os.write(write_fd, (100).to_bytes(4, "big") + b'{"op"')
    os.close(write_fd)
    with pytest.raises(side_wire.WireError, match="closed inside a frame"):
        side_wire.receive(read_fd)
    os.close(read_fd)


def test_a_host_that_cannot_be_started_is_the_gates_fault_not_the_sides(tmp_path, side_host_env, monkeypatch):
    import subprocess

    from gate.errors import RunnerError

    def no_process(*args, **kwargs):
        raise BlockingIOError(11, "Resource temporarily unavailable")
    monkeypatch.setattr(subprocess, "Popen", no_process)
    before = set(os.listdir("/proc/self/fd"))
    with pytest.raises(RunnerError, match="could not start the side host: .*Resource temporarily unavailable"):
        start(tmp_path, module_file(tmp_path, ""))
    assert set(os.listdir("/proc/self/fd")) == before          # its pipes closed
