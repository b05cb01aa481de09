"""Fake GPU operations for the side host (`side_host.SideBackend`), run in its real process by the
tests (`--backend side_host_fakes:FakeSide`): every call is written to the file `FAKE_SIDE_LOG` names,
so a test reads what the host did, in order, after the host has answered."""

import importlib.util
import json
import os
import signal

BACKEND = "side_host_fakes:FakeSide"     # as `--backend` names it, with this folder on PYTHONPATH


class FakeSide:
    def __init__(self):
        self.sets = 0
        self.refills = {}

    def _log(self, *entry):
        with open(os.environ["FAKE_SIDE_LOG"], "a") as log:
            log.write(json.dumps(entry) + "\n")

    def load(self, kernel, module_path, workload_dir):
        self._log("load", kernel["name"], os.path.basename(module_path), os.path.basename(workload_dir))
        spec = importlib.util.spec_from_file_location("side_module", module_path)
        spec.loader.exec_module(importlib.util.module_from_spec(spec))     # may abort, as an initialiser does

    def make_inputs(self, shape_index, dtype, input_sets):
        self._log("make_inputs", shape_index, dtype, input_sets)
        self.sets = input_sets

    def estimate_us(self, reps):
        self._log("estimate_us", reps)
        return 12.5

    def prepare(self, use_graph, launches, input_sets, keep_output_bytes):
        self._log("prepare", use_graph, launches, input_sets, keep_output_bytes)
        chain = {"nodes": launches, "work_nodes": launches, "edges": launches - 1, "roots": 1,
                 "most_dependencies": 1, "most_dependents": 1, "event_nodes": 0}
        return {"method": "graph", "launches": launches, "work_nodes": [launches] * 4, "topologies": [chain],
                "note": ""}

    def replay_us(self, reps):
        return 11.0

    def drop_graphs(self):
        self._log("drop_graphs")

    def repetition_us(self, set_index):
        self._log("repetition_us", set_index)
        if set_index >= self.sets:
            raise IndexError(f"no input set {set_index}")
        if set_index < 0:
            os.kill(os.getpid(), signal.SIGSEGV)       # a kernel that crashes while timed
        return 10.0 + set_index

    def refill(self, set_index):
        self._log("refill", set_index)

    def reset_persisting_l2(self):
        return ""

    def tampered(self):
        return ["torch.cuda.Event.elapsed_time"]

    def idle(self):
        self._log("idle")
