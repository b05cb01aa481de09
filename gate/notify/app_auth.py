"""GitHub authentication: a personal/fine-grained token, or a GitHub App's installation token.

GitHub App flow ("Authenticating as a GitHub App installation", docs.github.com):
    JWT (RS256, iss = app id, iat 60 s in the past against clock drift, exp <= 10 min)
    -> GET  /repos/{owner}/{repo}/installation              the installation id (cached per repo)
    -> POST /app/installations/{id}/access_tokens           a token valid for one hour
The token is cached per installation until shortly before its `expires_at`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import httpx
import jwt

from gate.errors import NotifyError
from gate.notify.retry import RetryPolicy, call

API_VERSION = "2022-11-28"
JWT_LIFETIME_S = 540          # under GitHub's 10-minute maximum
JWT_BACKDATE_S = 60           # GitHub recommends iat 60 s in the past
TOKEN_REFRESH_MARGIN_S = 120  # renew an installation token this long before it expires


def github_headers(token: str) -> dict[str, str]:
    """The headers GitHub's REST API documents for every call."""
    return {
        "Accept": "application/vnd.github+json",
        "Authorization": f"Bearer {token}",
        "X-GitHub-Api-Version": API_VERSION,
        "User-Agent": "flashcore-gate",
    }


def load_private_key(value: str) -> str:
    """`GATE_GITHUB_APP_PRIVATE_KEY` holds the PEM text itself or the path of a PEM file."""
    if "-----BEGIN" in value:
        return value.replace("\\n", "\n")
    path = Path(value).expanduser()
    if not path.is_file():
        raise NotifyError("GATE_GITHUB_APP_PRIVATE_KEY is neither PEM text nor a readable file")
    return path.read_text()


class AppAuth:
    """Installation tokens for a GitHub App, cached until shortly before they expire. Thread-safe."""

    def __init__(self, app_id: str, private_key_pem: str, api_url: str, client: httpx.Client,
                 policy: RetryPolicy = RetryPolicy(), clock: Callable[[], float] = time.time):
        self.app_id = app_id
        self._key = private_key_pem
        self._api = api_url.rstrip("/")
        self._client = client
        self._policy = policy
        self._clock = clock
        self._lock = threading.Lock()
        self._installations: dict[str, int] = {}               # "owner/repo" -> installation id
        self._tokens: dict[int, tuple[str, float]] = {}        # installation id -> (token, expires_s)

    def app_jwt(self) -> str:
        now = int(self._clock())
        claims = {"iat": now - JWT_BACKDATE_S, "exp": now + JWT_LIFETIME_S, "iss": str(self.app_id)}
        return jwt.encode(claims, self._key, algorithm="RS256")

    def token_for(self, repo: str) -> str:
        """An installation token that can write to `repo` ("owner/name")."""
        with self._lock:
            installation = self._installations.get(repo)
            if installation is None:
                installation = self._installation_id(repo)
                self._installations[repo] = installation
            cached = self._tokens.get(installation)
            if cached and cached[1] - TOKEN_REFRESH_MARGIN_S > self._clock():
                return cached[0]
            token, expires_s = self._new_token(installation)
            self._tokens[installation] = (token, expires_s)
            return token

    def _installation_id(self, repo: str) -> int:
        response = call(self._client, "GET", f"{self._api}/repos/{repo}/installation",
                        headers=github_headers(self.app_jwt()), policy=self._policy)
        return int(response.json()["id"])

    def _new_token(self, installation: int) -> tuple[str, float]:
        response = call(self._client, "POST", f"{self._api}/app/installations/{installation}/access_tokens",
                        headers=github_headers(self.app_jwt()), policy=self._policy)
        body = response.json()
        expires = datetime.fromisoformat(body["expires_at"].replace("Z", "+00:00"))
        return body["token"], expires.timestamp()
