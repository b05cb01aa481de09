"""Fake GPU operations for the side host (`side_host.SideBackend`), run in its real process by the
tests (`--backend side_host_fakes:FakeSide`): every call is written to the file `FAKE_SIDE_LOG` names,
so a test reads what the host did, in order, after the host has answered."""

import importlib.util
import json
import os
import signal

BACKEND = "side_host_fakes:FakeSide"     # as `--backend` names it, with this folder on PYTHONPATH


class FakeSide:
    """Each run's repetitions read 10 µs + its shape index x 100 + the input set's index."""

    def __init__(self):
        self.runs = {}

    def _log(self, *entry):
        with open(os.environ["FAKE_SIDE_LOG"], "a") as log:
            log.write(json.dumps(entry) + "\n")

    def load(self, kernel, module_path, workload_dir):
        self._log("load", kernel["name"], os.path.basename(module_path), os.path.basename(workload_dir))
        spec = importlib.util.spec_from_file_location("side_module", module_path)
        spec.loader.exec_module(importlib.util.module_from_spec(spec))     # may abort, as an initialiser does

    def make_inputs(self, run, shape_index, dtype, input_sets):
        self._log("make_inputs", run, shape_index, dtype, input_sets)
        self.runs[run] = (shape_index, input_sets)

    def estimate_us(self, run, reps):
        self._log("estimate_us", run, reps)
        return 12.5

    def prepare(self, run, use_graph, launches, input_sets, keep_output_bytes):
        self._log("prepare", run, use_graph, launches, input_sets, keep_output_bytes)
        chain = {"nodes": launches, "work_nodes": launches, "edges": launches - 1, "roots": 1,
                 "most_dependencies": 1, "most_dependents": 1, "event_nodes": 0}
        return {"method": "graph", "launches": launches, "work_nodes": [launches] * 4, "topologies": [chain],
                "note": ""}

    def replay_us(self, run, reps):
        return 11.0

    def drop_graphs(self, run):
        self._log("drop_graphs", run)

    def repetition_us(self, run, set_index):
        self._log("repetition_us", run, set_index)
        shape_index, sets = self.runs[run]
        if set_index >= sets:
            raise IndexError(f"no input set {set_index}")
        if set_index < 0:
            os.kill(os.getpid(), signal.SIGSEGV)       # a kernel that crashes while timed
        return 10.0 + 100 * shape_index + set_index

    def refill(self, run, set_index):
        self._log("refill", run, set_index)

    def reset_persisting_l2(self):
        return ""

    def tampered(self):
        return ["torch.cuda.Event.elapsed_time"]

    def idle(self):
        self._log("idle")
