"""What the gate may fetch: which repositories, over which schemes, from which addresses, how much.

A repository URL reaches git only after `FetchPolicy.check` accepted it:

- its scheme is one of `schemes` (default `https`, `ssh`; scp-like `[user@]host:path` is ssh, read
  as git reads it); a local path or `file://` URL only with `allow_local` (`gate run`, `gate demo`;
  `gate serve` with `GATE_ALLOW_LOCAL_REPOS=1`);
- it is not inside a `protected` folder (the data folder), whatever `allow_local` says;
- when `allowed` patterns are set (`GATE_ALLOWED_REPOS`, `fnmatch` over the URL as submitted), it
  matches one;
- a remote host resolves only to global addresses unless `allow_private_hosts`, so a submission
  cannot make the server probe its own network; the message never says what answered there.

`check_static` is everything but the name lookup: what a submission is refused for at once, before it
is stored; a malformed URL is refused by name, never raised. git is told the same (`git_config`):
only the allowed protocols (never `ext::`, which runs a command), no prompts, a transfer under 1 KB/s
for 30 s abandoned, ssh's handshake within 15 s. git has no connect timeout for https, so the planner
caps one host's concurrent fetches. `max_bytes` and `timeout_s` bound one clone or fetch.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import os
import re
import socket
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import urlsplit

from gate.errors import SourceError

_SCHEME = re.compile(r"^([a-z][a-z0-9+.-]*)://", re.IGNORECASE)
_HELPER = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*::")
GiB = 1 << 30
# ssh's own limits (ssh_config(5)): the connection and its handshake within 15 s, and a server that
# stops answering mid-transfer dropped after 2 x 15 s; never a prompt. GIT_SSH_COMMAND, where set, wins.
SSH = "ssh -o ConnectTimeout=15 -o ServerAliveInterval=15 -o ServerAliveCountMax=2 -o BatchMode=yes"


class FetchRefused(SourceError):
    """The fetch policy refuses this repository (scheme, pattern or address)."""


@dataclass(frozen=True)
class FetchPolicy:
    allowed: tuple[str, ...] = ()                 # fnmatch patterns; empty: any repository
    schemes: tuple[str, ...] = ("https", "ssh")
    allow_local: bool = True                      # a directory on this machine (`gate run`, tests)
    protected: tuple[str, ...] = ()               # absolute folders never gated (the data folder)
    allow_private_hosts: bool = False
    max_bytes: int = 2 * GiB                      # one mirror's size on disk after a clone or fetch
    timeout_s: float = 300.0                      # one git clone or fetch

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, *, local_default: bool = True) -> FetchPolicy:
        """The policy of `GATE_*` variables; `local_default` is the command's own default for
        GATE_ALLOW_LOCAL_REPOS (False for `gate serve`, which answers the network)."""
        env = os.environ if env is None else env

        def items(name: str, default: tuple[str, ...]) -> tuple[str, ...]:
            raw = env.get(name)
            return default if raw is None else tuple(v.strip() for v in raw.split(",") if v.strip())

        def flag(name: str, default: bool) -> bool:
            return env.get(name, str(int(default))).strip().lower() in ("1", "true", "yes", "on")

        return cls(allowed=items("GATE_ALLOWED_REPOS", ()), schemes=items("GATE_ALLOWED_SCHEMES", cls.schemes),
                   allow_local=flag("GATE_ALLOW_LOCAL_REPOS", local_default),
                   allow_private_hosts=flag("GATE_ALLOW_PRIVATE_HOSTS", False),
                   max_bytes=int(env.get("GATE_GIT_MAX_BYTES", cls.max_bytes)),
                   timeout_s=float(env.get("GATE_GIT_TIMEOUT_S", cls.timeout_s)))

    def protecting(self, folder: Path) -> FetchPolicy:
        """This policy, with `folder` (and everything under it) never gateable."""
        return replace(self, protected=(*self.protected, str(Path(folder).resolve())))

    def check(self, repo: str) -> None:
        """Raise `FetchRefused` unless `repo` may be fetched (see the module doc)."""
        host = self.check_static(repo)
        if host is not None and not self.allow_private_hosts:
            _public_only(host)

    def check_static(self, repo: str) -> str | None:
        """Every rule but the name lookup; the remote's host (None for a local repository). `x::y`
        is git's remote-helper syntax (`ext::sh -c ...` runs a command): always refused."""
        if not repo or repo.startswith("-") or _HELPER.match(repo) or any(ord(c) < 32 for c in repo):
            raise FetchRefused(f"refusing repository {repo[:200]!r}")
        scheme, host = url_kind(repo)
        if scheme == "local":
            if not self.allow_local:
                raise FetchRefused("repositories on the server's disk are not allowed here "
                                   "(GATE_ALLOW_LOCAL_REPOS); give a remote URL")
            self._outside_protected(repo)
        elif scheme not in self.schemes:
            raise FetchRefused(f"scheme {scheme!r} is not allowed (allowed: {', '.join(self.schemes)})")
        if self.allowed and not any(fnmatch.fnmatchcase(repo, p) for p in self.allowed):
            raise FetchRefused(f"{repo[:200]} matches no pattern of GATE_ALLOWED_REPOS")
        if scheme == "local":
            return None
        if not host:
            raise FetchRefused("the repository URL names no host")
        if not self.allow_private_hosts:
            _not_a_private_literal(host)
        return host

    def _outside_protected(self, repo: str) -> None:
        path = repo.removeprefix("file://") if repo.lower().startswith("file://") else repo
        try:
            resolved = Path(path).expanduser().resolve()
        except (RuntimeError, OSError, ValueError) as exc:
            raise FetchRefused(f"unusable local path: {exc}") from exc
        for folder in self.protected:
            if resolved == Path(folder) or Path(folder) in resolved.parents:
                raise FetchRefused("the gate's own data folder (database, mirrors) is never gated")

    def git_config(self) -> list[str]:
        """`-c` options for git clone and fetch: the allowed protocols only, stalled transfers end."""
        args = ["-c", "protocol.allow=never", "-c", "protocol.file.allow=always" if self.allow_local
                else "protocol.file.allow=never"]
        for scheme in self.schemes:
            if scheme in ("https", "ssh", "http", "git", "file"):      # the schemes named as git names them
                args += ["-c", f"protocol.{scheme}.allow=always"]
        return args + ["-c", "http.lowSpeedLimit=1000", "-c", "http.lowSpeedTime=30", "-c", f"core.sshCommand={SSH}",
                       "-c", "credential.interactive=false", "-c", "core.askPass="]


def url_kind(repo: str) -> tuple[str, str]:
    """(scheme, host) as git reads `repo`: `local` for a path or `file://` URL (host ""), `ssh` for
    scp-like `[user@]host:path` (a ':' before any '/'; `[...]` may hold the host's own ':'). A URL
    urllib cannot split (`ssh://[127.0.0.1]:22/x`) is refused by name."""
    if match := _SCHEME.match(repo):
        scheme = match.group(1).lower()
        if scheme == "file":
            return "local", ""
        try:
            return scheme, urlsplit(repo).hostname or ""
        except ValueError as exc:
            raise FetchRefused(f"malformed repository URL: {exc}") from exc
    colon, slash = repo.find(":"), repo.find("/")
    if colon < 0 or 0 <= slash < colon:                    # git's own test (connect.c)
        return "local", ""
    start = repo.find("@[") + 1 if "@[" in repo else 0     # `user@[host:port]:path`
    if repo[start] == "[":
        inside, close, _ = repo[start + 1:].partition("]")
        if not close:
            raise FetchRefused("malformed repository URL: an unclosed '[' in the host")
        return "ssh", _bracketed_host(inside)
    return "ssh", repo[:colon].rsplit("@", 1)[-1]


def _bracketed_host(inside: str) -> str:
    """The host of git's `[host:port]` (or `[v6 address]`)."""
    try:
        return str(ipaddress.ip_address(inside))
    except ValueError:
        return inside.rsplit(":", 1)[0] if ":" in inside else inside


def _not_a_private_literal(host: str) -> None:
    """A literal address (or `localhost`) is judged without a lookup, so a submission naming one
    is refused before it is stored."""
    try:
        address = ipaddress.ip_address(host.strip("[]").split("%")[0])
    except ValueError:
        if host.lower().rstrip(".") in ("localhost", "localhost.localdomain") or host.lower().endswith(".localhost"):
            raise FetchRefused(f"{host!r} is not a public address; set GATE_ALLOW_PRIVATE_HOSTS=1 to "
                               "fetch from this network") from None
        return
    _refuse_private(host, address)


def _refuse_private(host: str, address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> None:
    """Only global unicast: Python's `is_global` alone let multicast (224.0.0.0/4, ff00::/8) and
    IPv4-compatible IPv6 (`::127.0.0.1`, inside the reserved ::/8, as is NAT64's 64:ff9b::/96) through.
    An IPv4 address inside IPv6 (mapped `::ffff:a.b.c.d`, 6to4 `2002:...`) is judged as that address."""
    if isinstance(address, ipaddress.IPv6Address):
        address = address.ipv4_mapped or address.sixtofour or address
    site_local = isinstance(address, ipaddress.IPv6Address) and address.is_site_local
    if not address.is_global or address.is_multicast or address.is_reserved or site_local:
        raise FetchRefused(f"{host!r} is not a public address; set GATE_ALLOW_PRIVATE_HOSTS=1 to "
                           "fetch from this network")


def _public_only(host: str) -> None:
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError) as exc:
        raise FetchRefused(f"cannot resolve {host!r}: {exc}") from exc
    for info in infos:
        _refuse_private(host, ipaddress.ip_address(info[4][0].split("%")[0]))
