"""What the gate may fetch: which repositories, over which schemes, from which addresses, how much.

A repository URL reaches git only after `FetchPolicy.check` accepted it:

- its scheme is one of `schemes` (default `https`, `ssh`; scp-like `git@host:owner/name` is ssh;
  a local path or `file://` URL is its own kind, allowed unless `allow_local` is off);
- when `allowed` patterns are set (`GATE_ALLOWED_REPOS=https://github.com/acme/*,/srv/repos/*`), it
  matches one of them (shell-style patterns, `fnmatch`, over the URL as submitted);
- a remote host resolves only to global addresses: loopback, private, link-local, shared, reserved
  and multicast addresses are refused unless `allow_private_hosts` (`GATE_ALLOW_PRIVATE_HOSTS=1`), so
  a submission cannot make the server probe its own network. The message says only that the address
  is not public, never what answered there.

git itself is told the same (`git_config`): only the allowed protocols (never `ext::`, which runs a
command), no credential prompts, and an HTTP transfer slower than 1 KB/s for 30 s is abandoned.
`max_bytes` and `timeout_s` bound one clone or fetch (the mirror enforces them while git runs).
"""

from __future__ import annotations

import fnmatch
import ipaddress
import os
import re
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from gate.errors import SourceError

_SCP_LIKE = re.compile(r"^[\w.-]+@([\w.-]+):")
_SCHEME = re.compile(r"^([a-z][a-z0-9+.-]*)://", re.IGNORECASE)
_HELPER = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*::")
GiB = 1 << 30


class FetchRefused(SourceError):
    """The fetch policy refuses this repository (scheme, pattern or address)."""


@dataclass(frozen=True)
class FetchPolicy:
    allowed: tuple[str, ...] = ()                 # fnmatch patterns; empty: any repository
    schemes: tuple[str, ...] = ("https", "ssh")
    allow_local: bool = True                      # a directory on this machine (`gate run`, tests)
    allow_private_hosts: bool = False
    max_bytes: int = 2 * GiB                      # one mirror's size on disk after a clone or fetch
    timeout_s: float = 300.0                      # one git clone or fetch

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> FetchPolicy:
        env = os.environ if env is None else env

        def items(name: str, default: tuple[str, ...]) -> tuple[str, ...]:
            raw = env.get(name)
            return default if raw is None else tuple(v.strip() for v in raw.split(",") if v.strip())

        def flag(name: str, default: bool) -> bool:
            return env.get(name, str(int(default))).strip().lower() in ("1", "true", "yes", "on")

        return cls(allowed=items("GATE_ALLOWED_REPOS", ()), schemes=items("GATE_ALLOWED_SCHEMES", cls.schemes),
                   allow_local=flag("GATE_ALLOW_LOCAL_REPOS", True),
                   allow_private_hosts=flag("GATE_ALLOW_PRIVATE_HOSTS", False),
                   max_bytes=int(env.get("GATE_GIT_MAX_BYTES", cls.max_bytes)),
                   timeout_s=float(env.get("GATE_GIT_TIMEOUT_S", cls.timeout_s)))

    def check(self, repo: str) -> None:
        """Raise `FetchRefused` unless `repo` may be fetched (see the module doc). `x::y` is git's
        remote-helper syntax (`ext::sh -c ...` runs a command): always refused."""
        if not repo or repo.startswith("-") or _HELPER.match(repo) or any(ord(c) < 32 for c in repo):
            raise FetchRefused(f"refusing repository {repo[:200]!r}")
        scheme, host = _scheme_and_host(repo)
        if scheme == "local":
            if not self.allow_local:
                raise FetchRefused(f"local repositories are not allowed here: {repo[:200]}")
        elif scheme not in self.schemes:
            raise FetchRefused(f"scheme {scheme!r} is not allowed (allowed: {', '.join(self.schemes)})")
        if self.allowed and not any(fnmatch.fnmatchcase(repo, p) for p in self.allowed):
            raise FetchRefused(f"{repo[:200]} matches no pattern of GATE_ALLOWED_REPOS")
        if scheme != "local" and not self.allow_private_hosts:
            _public_only(host)

    def git_config(self) -> list[str]:
        """`-c` options for git clone and fetch: the allowed protocols only, stalled transfers end."""
        protocols = {"https": "https", "ssh": "ssh", "http": "http", "git": "git", "file": "file"}
        args = ["-c", "protocol.allow=never", "-c", "protocol.file.allow=always" if self.allow_local
                else "protocol.file.allow=never"]
        for scheme in self.schemes:
            if scheme in protocols:
                args += ["-c", f"protocol.{protocols[scheme]}.allow=always"]
        return args + ["-c", "http.lowSpeedLimit=1000", "-c", "http.lowSpeedTime=30",
                       "-c", "credential.interactive=false", "-c", "core.askPass="]


def _scheme_and_host(repo: str) -> tuple[str, str]:
    if match := _SCHEME.match(repo):
        if match.group(1).lower() == "file":
            return "local", ""
        parts = urlsplit(repo)
        return match.group(1).lower(), (parts.hostname or "")
    if match := _SCP_LIKE.match(repo):
        return "ssh", match.group(1)
    return "local", ""


def _public_only(host: str) -> None:
    if not host:
        raise FetchRefused("the repository URL names no host")
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError) as exc:
        raise FetchRefused(f"cannot resolve {host!r}: {exc}") from exc
    for info in infos:
        address = ipaddress.ip_address(info[4][0].split("%")[0])
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
            address = address.ipv4_mapped
        if not address.is_global:
            raise FetchRefused(f"{host!r} is not a public address; set GATE_ALLOW_PRIVATE_HOSTS=1 to "
                               "fetch from this network")
