"""Bearer-token auth for writes, switched on by `GATE_API_TOKEN`. Reads stay open."""

from __future__ import annotations

import hmac

from fastapi import HTTPException, Request, status


def token_matches(header: str | None, token: str) -> bool:
    """`Authorization: Bearer <token>`, compared in constant time."""
    scheme, _, given = (header or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


def require_write_token(request: Request) -> None:
    token = request.app.state.gate.settings.api_token
    if token and not token_matches(request.headers.get("authorization"), token):
        raise HTTPException(
            status_code=status.HTTP_401_UNAUTHORIZED,
            detail="a bearer token is required for writes (Authorization: Bearer <GATE_API_TOKEN>)",
            headers={"WWW-Authenticate": 'Bearer realm="gate"'},
        )
