"""scripts/test-postgres.sh on a machine without PostgreSQL, played against stand-ins for apt-get,
pg_ctlcluster and psql (this machine has a real server, which must stay as it is): the branches a
fresh CI machine takes, and that a second run changes nothing."""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "test-postgres.sh"
TRUST = "host all postgres 127.0.0.1/32 trust"
# pg_hba.conf as Debian's postgresql package writes it (15 and 16): no trust on loopback.
DEBIAN_HBA = """\
local   all             postgres                                peer
local   all             all                                     peer
host    all             all             127.0.0.1/32            scram-sha-256
host    all             all             ::1/128                 scram-sha-256
"""
TOOLS = ("bash", "sed", "grep", "ls", "sort", "tail", "seq", "sleep", "cat", "touch", "chmod", "mkdir", "cp")


class Machine:
    """A PATH of stand-ins; `log` lists the package and cluster commands the script ran."""

    def __init__(self, root: Path, *, uid: int = 0, installed: bool = False, running: bool = False):
        self.root, self.etc, self.bin = root, root / "etc-postgresql", root / "bin"
        self.bin.mkdir(parents=True)
        for tool in TOOLS:
            (self.bin / tool).symlink_to(shutil.which(tool))
        self._stub("id", f'[ "$1" = -u ] && echo {uid}')
        self._stub("apt-get", f"""
            echo "apt-get $*" >> "{root}/log"
            if [ "$1" = install ]; then
              mkdir -p "{self.etc}/16/main" && printf '%s' "{DEBIAN_HBA}" > "{self.etc}/16/main/pg_hba.conf"
              cp "{root}/pg_ctlcluster" "{self.bin}/pg_ctlcluster"
            fi""")
        self._stub("psql", f'[ -f "{root}/running" ] && grep -qxF "{TRUST}" "{self.etc}/16/main/pg_hba.conf"')
        (root / "pg_ctlcluster").write_text(textwrap.dedent(f"""\
            #!/usr/bin/env bash
            echo "pg_ctlcluster $*" >> "{root}/log"
            case "$4" in
              start) [ -f "{root}/running" ] && exit 2; touch "{root}/running" ;;
              reload) [ -f "{root}/running" ] ;;
            esac
            """))
        (root / "pg_ctlcluster").chmod(0o755)
        if installed:
            (self.etc / "16" / "main").mkdir(parents=True)
            (self.etc / "16" / "main" / "pg_hba.conf").write_text(DEBIAN_HBA)
            shutil.copy(root / "pg_ctlcluster", self.bin / "pg_ctlcluster")
        if running:
            (root / "running").touch()

    def _stub(self, name: str, body: str) -> None:
        (self.bin / name).write_text("#!/usr/bin/env bash\n" + textwrap.dedent(body).strip() + "\n")
        (self.bin / name).chmod(0o755)

    def run(self) -> subprocess.CompletedProcess:
        env = {"PATH": str(self.bin), "PG_ETC": str(self.etc), "HOME": str(self.root)}
        return subprocess.run([str(self.bin / "bash"), str(SCRIPT)], env=env, capture_output=True, text=True,
                              timeout=60)

    @property
    def log(self) -> list[str]:
        path = self.root / "log"
        return path.read_text().splitlines() if path.exists() else []

    @property
    def hba(self) -> list[str]:
        return (self.etc / "16" / "main" / "pg_hba.conf").read_text().splitlines()


def test_a_machine_without_postgresql_gets_it_installed_trusted_on_loopback_and_started(tmp_path):
    machine = Machine(tmp_path)
    first = machine.run()
    assert first.returncode == 0, first.stderr
    assert machine.log == ["apt-get update -qq", "apt-get install -y -qq postgresql",
                           "pg_ctlcluster --skip-systemctl-redirect 16 main start"]
    assert machine.hba[0] == TRUST and machine.hba[1:] == DEBIAN_HBA.splitlines()
    again = machine.run()                                   # idempotent: it answers, nothing is done
    assert again.returncode == 0 and len(machine.log) == 3 and machine.hba.count(TRUST) == 1


def test_a_running_cluster_without_the_trust_line_gets_it_and_is_reloaded(tmp_path):
    machine = Machine(tmp_path, installed=True, running=True)
    done = machine.run()
    assert done.returncode == 0, done.stderr
    assert machine.log == ["pg_ctlcluster --skip-systemctl-redirect 16 main start",
                           "pg_ctlcluster --skip-systemctl-redirect 16 main reload"]
    assert machine.hba[0] == TRUST


def test_without_root_it_says_what_to_install_and_installs_nothing(tmp_path):
    machine = Machine(tmp_path, uid=1000)
    done = machine.run()
    assert done.returncode == 0
    assert "install Debian's 'postgresql' package" in done.stderr and TRUST in done.stderr
    assert machine.log == []


@pytest.mark.postgres
def test_on_this_machine_the_server_answers_and_nothing_is_changed():
    done = subprocess.run([str(SCRIPT)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PG_ETC": "/nonexistent"})
    assert done.returncode == 0 and done.stderr == ""
