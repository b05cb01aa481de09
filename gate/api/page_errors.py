"""Errors as a person meets them: a page route (or a browser asking for an unknown path) gets an
HTML page that says what was not found and links back; the JSON API keeps FastAPI's JSON errors
(`{"detail": ...}`), which scripts and `gate submit` read.
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler, request_validation_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from gate.domain import routes

PAGE_PREFIXES = tuple(routes.prefix(p) for p in (routes.KERNEL_PAGE, routes.REVISION_PAGE, routes.COMPARE_PAGE))
JSON_PREFIXES = (routes.API + "/", routes.HEALTHZ, routes.METRICS, routes.OPENAPI, routes.STATIC, routes.DOCS)
TITLES = {404: "Not found", 400: "Bad request", 422: "Bad request"}

# (request, HTTP status, message) -> the HTML page; `gate.api.pages` supplies it.
RenderError = Callable[[Request, int, str], Response]


def wants_html(request: Request) -> bool:
    """Page routes always answer HTML; another path does when a browser asks for HTML."""
    path = request.url.path
    if path.startswith(JSON_PREFIXES):
        return False
    if path == routes.HOME or path.startswith(PAGE_PREFIXES):
        return True
    # Every Accept field: a request may send several (RFC 9110 5.3), and the first may not be the HTML one.
    return any("text/html" in accept for accept in request.headers.getlist("accept"))


def install(app: FastAPI, render: RenderError) -> None:
    """Route HTTP and validation errors of pages to `render`, the rest to FastAPI's handlers."""

    async def on_http(request: Request, exc: StarletteHTTPException) -> Response:
        if wants_html(request) and exc.status_code >= 400:
            return render(request, exc.status_code, str(exc.detail))
        return await http_exception_handler(request, exc)

    async def on_invalid(request: Request, exc: RequestValidationError) -> Response:
        if wants_html(request):
            problems = "; ".join(f"{'.'.join(map(str, e['loc'][1:]))}: {e['msg']}"   # pydantic's ErrorDetails
                                 for e in exc.errors())
            return render(request, 400, problems or "the request is not valid")
        return await request_validation_exception_handler(request, exc)

    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(RequestValidationError, on_invalid)
