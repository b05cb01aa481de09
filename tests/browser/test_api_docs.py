"""The OpenAPI pages render in Chromium with every request outside the server refused: no CDN."""

from __future__ import annotations

from urllib.parse import urlparse

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("served-history")]   # conftest.py says why


def _offline_page(browser, server: str):  # noqa: ANN001, ANN202
    """A page whose requests to any host but the server's are aborted, and the hosts it tried."""
    page = browser.new_page(viewport={"width": 1360, "height": 900})
    local, refused = urlparse(server).netloc, []

    def route(r):  # noqa: ANN001, ANN202
        if urlparse(r.request.url).netloc == local:
            return r.continue_()
        refused.append(r.request.url)
        return r.abort()

    page.route("**/*", route)
    return page, refused


def test_swagger_ui_renders_every_route_without_internet(browser, server):  # noqa: ANN001
    page, refused = _offline_page(browser, server)
    page.goto(server + "/docs", wait_until="networkidle")
    page.wait_for_selector(".swagger-ui .info .title")
    assert "FlashCore Gate" in page.inner_text(".swagger-ui .info .title")
    paths = page.locator(".opblock-summary-path").all_inner_texts()
    assert "/api/v1/revisions" in paths and "/api/v1/webhooks/github" in paths
    assert refused == []

