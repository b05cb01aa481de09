"""422 answers that name what is wrong without echoing the input back.

FastAPI's own handler returns each error's `input`: a 10 MB field came back as a 10 MB answer
(issue 12), and a list of a million bad items as a million errors. Here each error keeps its
location, message and type; the input and the context only when they are small; and the first
`MAX_ERRORS` errors are listed, then how many more there were.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic_core import ErrorDetails

MAX_ERRORS = 20
MAX_ECHO_CHARS = 200      # an input or context shown back at most this long (as JSON)


def install(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, validation_error)


async def validation_error(_request: Request, exc: Exception) -> JSONResponse:
    errors = exc.errors() if isinstance(exc, RequestValidationError) else []
    return JSONResponse({"detail": summarize(errors)}, status_code=422)


def summarize(errors: Sequence[ErrorDetails]) -> list[dict[str, Any]]:
    """The errors as the answer lists them (FastAPI's shape, without large values)."""
    shown = [_error(e) for e in errors[:MAX_ERRORS]]
    if len(errors) > MAX_ERRORS:
        shown.append({"loc": ["body"], "msg": f"{len(errors) - MAX_ERRORS} more errors not shown",
                      "type": "too_many_errors"})
    return shown


def _error(error: ErrorDetails) -> dict[str, Any]:
    """pydantic's `ErrorDetails` always holds type, loc, msg and input (FastAPI's own "missing"
    errors are built by pydantic too); only ctx and url are optional."""
    out = {"loc": [p if isinstance(p, int) else str(p) for p in error["loc"]],
           "msg": error["msg"], "type": error["type"]}
    if (shown := _small(error["input"])) is not None:
        out["input"] = shown
    if context := error.get("ctx"):     # e.g. the pattern, the limit; an exception as its message
        ctx = {str(k): v if isinstance(v, str | int | float | bool) else str(v) for k, v in context.items()}
        if (shown := _small(ctx)) is not None:
            out["ctx"] = shown
    return out


def _small(value: Any) -> Any:
    """`value` as JSON when that is at most `MAX_ECHO_CHARS` long, else None (left out)."""
    if isinstance(value, str | bytes | list | dict) and len(value) > MAX_ECHO_CHARS:
        return None             # the common large cases, decided without encoding them
    try:
        encoded = jsonable_encoder(value)
        text = json.dumps(encoded, ensure_ascii=False)
        text.encode("utf-8")        # a lone surrogate ("\ud800" in the JSON) cannot be answered: left out
    except (TypeError, ValueError):
        return None
    return encoded if len(text) <= MAX_ECHO_CHARS else None
