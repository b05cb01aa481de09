"""A GPU child that attacks the return path (issue 24), put in through the child-command seam.

`gate.executors.child.child_command` is what the real `gate_job` starts in the box; replacing it
keeps everything else real (checkouts, the box, `take_back`, the artifact store). The hostile child
runs in the box, as submitted code would, and makes, in the folder it hands back:

- `x.ncu-rep` -> a host file (the test's stand-in for /etc/shadow, and /etc/shadow itself),
- `build.log` -> the server's database file,
- `ptxas.log` -> /proc/self/environ (read by the parent, that is the server's environment),
- `candidate/ptxas.log`, a FIFO (a parent that opens it blindly waits for a writer for ever),
- `baseline/ptxas.log` of `big_bytes` (over the cap when a test lowers it),
- `linked` -> a host directory, with `linked/ptxas.log` reachable only through that link,
- `static/ptxas.log`, an honest log, which must come back;

then writes a result the parent can read, so the job goes on to a verdict.

`hostile_gate_job` is the same thing for `gate serve` (GATE_TEST_PIPELINE): it reads the link
targets from GATE_HOSTILE_TARGETS (JSON), which stays in the server (the box passes no GATE_*).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from gate.executors import child

TARGETS_ENV = "GATE_HOSTILE_TARGETS"
HONEST_LOG = "ptxas info    : Used 32 registers (an honest log)"

_SCRIPT = '''
import json, os, sys
from pathlib import Path
targets = json.loads({targets!r})
request = json.loads(Path(sys.argv[1]).read_text())
folder = Path(sys.argv[2]).parent
os.symlink(targets["host_file"], folder / "x.ncu-rep")
os.symlink("/etc/shadow", folder / "shadow.ncu-rep")
os.symlink(targets["database"], folder / "build.log")
os.symlink("/proc/self/environ", folder / "ptxas.log")
(folder / "candidate").mkdir()
os.mkfifo(folder / "candidate" / "ptxas.log")
(folder / "baseline").mkdir()
with open(folder / "baseline" / "ptxas.log", "wb") as big:
    big.write(b"x" * int(targets.get("big_bytes", 0)))
os.symlink(targets["host_dir"], folder / "linked")
(folder / "static").mkdir()
(folder / "static" / "ptxas.log").write_text({honest!r})
result = {{"kernel": request["kernel"]["name"], "candidate": {{"sha": request["candidate"]["sha"]}}}}
(folder / "result.json.tmp").write_text(json.dumps(result))
os.replace(folder / "result.json.tmp", Path(sys.argv[2]))
'''


def command(targets: dict[str, str | int]):  # noqa: ANN201 (the seam's signature)
    script = _SCRIPT.format(targets=json.dumps(targets), honest=HONEST_LOG)

    def hostile(request_path: Path, result_path: Path) -> list[str]:
        return [sys.executable, "-c", script, str(request_path), str(result_path)]
    return hostile


def hostile_gate_job(order, context):  # noqa: ANN001, ANN201
    from gate.executors.job import gate_job

    child.child_command = command(json.loads(os.environ[TARGETS_ENV]))
    return gate_job(order, context)


# Issue 44: names the artifact store once could not keep side by side (`FileExistsError`, `File name
# too long`: the job ended `error`, its copies left without rows).
LONG = "n" * 241 + ".ncu-rep"           # 249 characters, one folder each: the store's prefix made it 260
CROWDED = {"a/ptxas.log": "a", "b/ptxas.log": "b", "c/ptxas.log": "c", "sub/result.json": "{}",
           f"d1/{LONG}": "d1", f"d2/{LONG}": "d2"}
_CROWDED_SCRIPT = '''
import json, sys
from pathlib import Path
request = json.loads(Path(sys.argv[1]).read_text())
folder = Path(sys.argv[2]).parent
for name, text in json.loads({files!r}).items():
    (folder / name).parent.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)
result = {{"kernel": request["kernel"]["name"], "candidate": {{"sha": request["candidate"]["sha"]}}}}
Path(sys.argv[2]).write_text(json.dumps(result))
'''


def crowded_gate_job(order, context):  # noqa: ANN001, ANN201
    from gate.executors.job import gate_job

    script = _CROWDED_SCRIPT.format(files=json.dumps(CROWDED))
    child.child_command = lambda request_path, result_path, **_: [sys.executable, "-c", script, str(request_path),
                                                                  str(result_path)]
    return gate_job(order, context)
