"""The service's URL paths, named once (DESIGN.md's public contract fixes them).

The routes are declared with these, and every link the gate draws is made from them (`link`): the
pages and their templates, the commit status's and Check Run's target URL, `gate submit`'s answer.
A route renamed without its links then fails a test (tests/api/test_page_links.py follows every
link the pages draw) instead of leaving a dead link. Stdlib only: notify and the CLI link here too.
"""

from __future__ import annotations

from urllib.parse import quote

# Pages (HTML)
HOME = "/"
KERNEL_PAGE = "/kernels/{name}"
REVISION_PAGE = "/revisions/{ref}"          # ref: a revision id, a sha (prefix) or a branch
COMPARE_PAGE = "/compare"
# The dashboards' files, the OpenAPI page, operations
STATIC = "/static"                          # a mount of `dashboards/static`
PLOTLY_JS = STATIC + "/plotly.min.js"       # from the installed plotly package: no CDN
DOCS = "/docs"
OPENAPI = "/openapi.json"
HEALTHZ = "/healthz"
METRICS = "/metrics"                        # Prometheus text
# The JSON API
API = "/api/v1"
KERNELS = API + "/kernels"
KERNEL_HISTORY = API + "/kernels/{name}/history"
REVISIONS = API + "/revisions"
REVISION = API + "/revisions/{revision_id}"
REVISION_CANCEL = API + "/revisions/{revision_id}/cancel"
ARTIFACT = API + "/artifacts/{artifact_id}"
GITHUB_WEBHOOK = API + "/webhooks/github"


def link(path: str, **params: object) -> str:
    """`path` with its `{name}` parameters filled in, each quoted as one path segment."""
    return path.format(**{name: quote(str(value), safe="") for name, value in params.items()})


def prefix(path: str) -> str:
    """What every link of `path` starts with: the part before its first parameter."""
    return path.split("{", 1)[0]
