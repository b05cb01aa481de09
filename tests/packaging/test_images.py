"""The images and compose, checked without a Docker engine: the compose file parses and starts what
docs/deploy.md says, with health checks; each Dockerfile installs the wheel through the one script
CI runs; the build context leaves out what must not go in.

The images themselves are built nowhere in CI (no Docker engine): this is what can be checked offline.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from gate.config import APP_DIR_NAME

REPO = Path(__file__).resolve().parents[2]
DOCKER = REPO / "docker"
DOCKERFILES = sorted(DOCKER.glob("Dockerfile.*"))
INSTRUCTIONS = {"FROM", "RUN", "CMD", "LABEL", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT", "VOLUME", "USER",
                "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL"}
DATA_VOLUME = f"/var/lib/{APP_DIR_NAME}"


def instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    joined = re.sub(r"\\\n", " ", "\n".join(line for line in dockerfile.read_text().splitlines()
                                             if not line.lstrip().startswith("#")))
    parsed = []
    for line in filter(str.strip, joined.splitlines()):
        word, _, rest = line.strip().partition(" ")
        assert word in INSTRUCTIONS, f"{dockerfile.name}: unknown instruction {word!r}"
        parsed.append((word, rest.strip()))
    return parsed


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((DOCKER / "compose.yaml").read_text())


def test_there_are_a_server_and_a_worker_image():
    assert [d.name for d in DOCKERFILES] == ["Dockerfile.server", "Dockerfile.worker"]


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda d: d.name)
def test_each_image_builds_and_installs_the_wheel_through_the_one_script(dockerfile):
    steps = instructions(dockerfile)
    runs = [args for word, args in steps if word == "RUN"]
    assert any(r.startswith("scripts/install-wheel.sh build ") for r in runs), runs
    assert any(r.startswith("install-wheel.sh install ") for r in runs), runs
    assert not [r for r in runs if re.search(r"pip install[^|&;]*(\.\[|\s\.\s|\s\.$)", r)], \
        "the image installs the checkout itself, not the wheel"
    copies = [args for word, args in steps if word == "COPY"]
    assert "scripts/install-wheel.sh /usr/local/bin/install-wheel.sh" in copies
    assert steps[0][0] == "FROM" and sum(word == "FROM" for word, _ in steps) == 2   # build stage + image


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda d: d.name)
def test_each_image_is_pinned_healthy_and_keeps_its_data_in_the_default_folder(dockerfile):
    steps = instructions(dockerfile)
    for word, args in steps:
        if word == "FROM":
            image = args.split()[0]
            assert ":" in image and not image.endswith(":latest"), f"{dockerfile.name}: unpinned base {image}"
        if word == "RUN" and "apt-get install" in args:
            assert "--no-install-recommends" in args and "rm -rf /var/lib/apt/lists/*" in args
    assert ("VOLUME", DATA_VOLUME) in steps
    assert [word for word, _ in steps].count("HEALTHCHECK") == 1
    assert steps[-1][0] == "CMD" and json.loads(steps[-1][1])[0] == "gate"


def test_the_worker_pins_the_measured_cuda_ncu_and_torch():
    text = (DOCKER / "Dockerfile.worker").read_text()
    args = dict(value.partition("=")[::2] for word, value in instructions(DOCKER / "Dockerfile.worker")
                if word == "ARG")
    assert re.search(r"^FROM nvidia/cuda:13\.0\.1-devel-", text, re.M)
    assert args["NCU_VERSION"] == "2025.3.1" and args["TORCH_VERSION"] == "2.11.0"
    assert args["TORCH_INDEX_URL"] == ""            # no default index: the builder names it
    # Installed, then checked: a drifted repository fails the build instead of measuring with other tools.
    assert 'nsight-compute-${NCU_VERSION}' in text and 'grep -q "${NCU_VERSION}"' in text
    assert 'release 13.0, V13.0.88' in text
    assert "'13.0'" in text and '"torch==${TORCH_VERSION}"' in text


def test_compose_starts_postgres_redis_the_server_and_a_gpu_worker_with_health_checks(compose):
    services = compose["services"]
    assert set(services) == {"postgres", "redis", "server", "worker"}
    dockerfiles = {}
    for name, service in services.items():
        if "build" in service:
            dockerfile = REPO / service["build"]["dockerfile"]
            assert (DOCKER / service["build"]["context"]).resolve() == REPO
            dockerfiles[name] = dockerfile
            assert "HEALTHCHECK" in [w for w, _ in instructions(dockerfile)], name
        else:
            assert service["healthcheck"]["test"][0] in ("CMD", "CMD-SHELL"), name
    assert dockerfiles == {"server": DOCKER / "Dockerfile.server", "worker": DOCKER / "Dockerfile.worker"}
    for name in ("server", "worker"):
        waits = services[name]["depends_on"]
        assert all(waits[s]["condition"] == "service_healthy" for s in ("postgres", "redis")), name
        assert f"gatedata:{DATA_VOLUME}" in services[name]["volumes"], name
    assert services["worker"]["depends_on"]["server"]["condition"] == "service_healthy"   # it migrates
    gpu = services["worker"]["deploy"]["resources"]["reservations"]["devices"][0]
    assert gpu["driver"] == "nvidia" and "gpu" in gpu["capabilities"]
    assert "SYS_ADMIN" in services["worker"]["cap_add"]
    url = services["server"]["environment"]["GATE_DATABASE_URL"]
    assert url.startswith("postgresql+psycopg://") and "@postgres:5432/" in url


def test_the_build_context_leaves_out_environments_data_build_outputs_and_git():
    ignored = {line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")}
    assert {".git", ".venv", ".gate", "build", "dist", "*.egg-info"} <= ignored
    # What the wheel is built from must stay in the context.
    assert not ignored & {"gate", "dashboards", "pyproject.toml", "README.md", "scripts"}
