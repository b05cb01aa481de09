"""The OpenAPI page (`/docs`) served with no CDN: FastAPI's default loads Swagger UI from a CDN, so
the docs were blank on any machine without internet. The assets come from the `fastapi-offline`
distribution (Swagger UI 5, which renders OpenAPI 3.1), served under `/static-docs`; the page is
FastAPI's own HTML pointed at them, with a security policy that allows its inline start-up script
by its hash. ReDoc is not offered: its page fetches a logo from a CDN."""

from __future__ import annotations

import importlib.resources
import re

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from gate.api.security_headers import policy
from gate.domain import routes

ASSETS_URL = "/static-docs"


def install(app: FastAPI) -> None:
    """Add `/docs` and its assets to an app created with docs_url=redoc_url=None."""
    assets = importlib.resources.files("fastapi_offline") / "static"
    app.mount(ASSETS_URL, StaticFiles(directory=str(assets)), name="static-docs")
    openapi_url = app.openapi_url or routes.OPENAPI
    redirect_url = app.swagger_ui_oauth2_redirect_url or routes.DOCS + "/oauth2-redirect"

    @app.get(routes.DOCS, include_in_schema=False)
    def swagger_ui() -> HTMLResponse:
        return _own_scripts(get_swagger_ui_html(openapi_url=openapi_url, title=f"{app.title}: API",
                                                oauth2_redirect_url=redirect_url,
                                                swagger_js_url=f"{ASSETS_URL}/swagger-ui-bundle.js",
                                                swagger_css_url=f"{ASSETS_URL}/swagger-ui.css",
                                                swagger_favicon_url=f"{ASSETS_URL}/favicon.png"))

    @app.get(redirect_url, include_in_schema=False)
    def swagger_ui_redirect() -> HTMLResponse:
        return _own_scripts(get_swagger_ui_oauth2_redirect_html())


def _own_scripts(page: HTMLResponse) -> HTMLResponse:
    """`page` with a security policy that allows its own inline start-up scripts, and no other."""
    inline = re.findall(r"<script>(.*?)</script>", bytes(page.body).decode(), re.S)
    page.headers["Content-Security-Policy"] = policy(scripts=tuple(inline))
    return page
