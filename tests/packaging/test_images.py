"""The images and compose, checked without a Docker engine: the compose file parses and starts what
docs/deploy.md says, with health checks, needing no variable, with a generated API token and a
reverse proxy in front; each Dockerfile installs the wheel through the one script CI runs; the build
context leaves out what must not go in.

The images themselves are built nowhere in CI (no Docker engine), and compose has never been started
by these tests: this is what can be checked offline.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
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
    assert args["TORCH_INDEX_URL"] == ""            # pip's default index, unless the builder names one
    # Installed, then checked: a drifted repository fails the build instead of measuring with other tools.
    assert 'nsight-compute-${NCU_VERSION}' in text and 'grep -q "${NCU_VERSION}"' in text
    assert 'release 13.0, V13.0.88' in text
    assert "'13.0'" in text and '"torch==${TORCH_VERSION}"' in text


def test_compose_starts_postgres_redis_the_server_and_a_gpu_worker_with_health_checks(compose):
    services = compose["services"]
    assert set(services) == {"postgres", "redis", "token", "server", "proxy", "worker"}
    dockerfiles = {}
    for name, service in services.items():
        if name == "token":        # a one-shot set-up step, not a service to watch
            continue
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
    assert services["proxy"]["depends_on"]["server"]["condition"] == "service_healthy"
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


def _strings(node: object) -> list[str]:
    if isinstance(node, dict):
        return [s for k, v in node.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(node, list):
        return [s for v in node for s in _strings(v)]
    return [node] if isinstance(node, str) else []


def test_compose_needs_no_variable_that_only_docs_mention(compose):
    """`docker compose up` as the README writes it: every variable the file reads has a default."""
    read = [m.group(1) for text in _strings(compose) for m in re.finditer(r"(?<!\$)\$\{([^}]*)\}", text)]
    assert read, "the check found no variable at all"
    assert [v for v in read if ":-" not in v or "?" in v] == []
    assert not [t for t in _strings(compose) if re.search(r"(?<!\$)\$[A-Za-z_]", t)], "a bare $VAR has no default"


def test_only_the_proxy_publishes_a_port_and_it_caps_connections_and_header_time(compose):
    services = compose["services"]
    assert {name for name, s in services.items() if "ports" in s} == {"proxy"}
    assert services["server"]["expose"] == ["8000"]        # the compose network only
    proxy = services["proxy"]
    image = proxy["image"]
    assert re.fullmatch(r"nginx:\d+\.\d+[\w.-]*", image), f"unpinned proxy image {image}"
    (published,) = proxy["ports"]
    assert re.fullmatch(r"\$\{GATE_PORT:-8000\}:8000", published)
    (mount,) = proxy["volumes"]
    source, target, mode = mount.split(":")
    assert (target, mode) == ("/etc/nginx/nginx.conf", "ro")
    conf = re.sub(r"#.*", "", (DOCKER / source).read_text())
    directives = dict(re.findall(r"^\s*(\w+)\s+([^;{]+);", conf, re.M))
    assert 0 < int(directives["worker_connections"]) <= 4096
    header_s = directives["client_header_timeout"]
    assert re.fullmatch(r"\d+s", header_s) and int(header_s[:-1]) <= 30
    assert directives["limit_conn"].split()[0] in conf.split("zone=")[1]
    assert directives["listen"] == "8000" and directives["proxy_pass"] == "http://server:8000"
    assert directives["client_max_body_size"] == "25m"      # GATE_MAX_BODY_BYTES's default
    assert proxy["healthcheck"]["test"][0] == "CMD" and "/healthz" in proxy["healthcheck"]["test"][-1]
    # The server image listens where the proxy sends, and its own health check asks that port.
    cmd = " ".join(services["server"]["command"])
    assert "gate serve --host 0.0.0.0 --port 8000" in cmd


def test_the_api_token_is_generated_kept_in_a_volume_and_baked_into_no_image(compose):
    services = compose["services"]
    token = services["token"]
    assert token["entrypoint"] == ["sh", "/api-token.sh"] and "./api-token.sh:/api-token.sh:ro" in token["volumes"]
    (kept,) = [v.split(":")[0] for v in token["volumes"] if v.endswith(":/secrets")]
    assert kept in compose["volumes"]
    assert f"{kept}:/run/gate:ro" in services["server"]["volumes"]
    assert kept not in " ".join(services["worker"]["volumes"])            # the worker never needs it
    assert services["server"]["depends_on"]["token"]["condition"] == "service_completed_successfully"
    assert '$${GATE_API_TOKEN:-$$(cat /run/gate/api-token)}' in services["server"]["command"][-1]
    for dockerfile in DOCKERFILES:
        assert "TOKEN" not in " ".join(a for w, a in instructions(dockerfile) if w in ("ENV", "ARG"))


def _token_script(tmp_path: Path, **env: str) -> str:
    run = subprocess.run(["sh", str(DOCKER / "api-token.sh")], capture_output=True, text=True, check=True,
                         timeout=60, env={"PATH": os.environ["PATH"], "TOKEN_FILE": str(tmp_path / "api-token"), **env})
    return run.stdout


def test_the_token_script_prints_a_new_token_once_and_keeps_it_private(tmp_path):
    first = _token_script(tmp_path)
    kept = (tmp_path / "api-token").read_text().strip()
    assert len(kept) >= 40 and kept in first
    assert stat.S_IMODE((tmp_path / "api-token").stat().st_mode) == 0o600
    again = _token_script(tmp_path)
    assert kept not in again and "kept in the gatesecrets volume" in again
    assert (tmp_path / "api-token").read_text().strip() == kept


def test_the_token_script_stores_nothing_when_a_token_is_given(tmp_path):
    out = _token_script(tmp_path, GATE_API_TOKEN="given-by-the-operator")
    assert "from the environment" in out and "given-by-the-operator" not in out
    assert not (tmp_path / "api-token").exists()


def test_the_readmes_cpu_torch_is_the_version_the_worker_image_pins():
    args = dict(value.partition("=")[::2] for word, value in instructions(DOCKER / "Dockerfile.worker")
                if word == "ARG")
    advised = re.findall(r"pip install torch==([\d.]+)\+cpu", (REPO / "README.md").read_text())
    assert advised == [args["TORCH_VERSION"]]
