"""Every link a page draws resolves to a registered route and answers (issue 23): the routes and the
links are made of the same names (`gate.domain.routes`), on SQLite and PostgreSQL."""

from __future__ import annotations

from html.parser import HTMLParser
from urllib.parse import urlsplit

from figures_once import distinct_figures_result, store_judged
from sqlalchemy import select
from starlette.routing import Match

from gate.demo.sample_db import write_sample_files
from gate.domain import routes
from gate.sample import seed_judged_history
from gate.storage.unit import UnitOfWork
from gate.storage.models import Revision, RevisionStatus

LINK_ATTRIBUTES = ("href", "src", "action", "data-live")
BROWSER = {"Accept": "text/html,application/xhtml+xml"}    # what an unknown path answers a browser with


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: set[str] = set()
        self.revision_page = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in LINK_ATTRIBUTES and value and value.startswith("/") and not value.startswith("//"):
                self.links.add(value)
            if tag == "body" and name == "data-revision-page":
                self.revision_page = value or ""


def _links(html: str) -> _Links:
    parser = _Links()
    parser.feed(html)
    return parser


def _answered(app, path: str, method: str = "GET") -> bool:  # noqa: ANN001
    """Whether a registered route (or mount) of `app` answers `method` `path`, as the router decides."""
    scope = {"type": "http", "method": method, "path": path, "root_path": "", "query_string": b"",
             "headers": []}
    return any(route.matches(scope)[0] is Match.FULL for route in app.routes)


def test_every_link_the_pages_draw_answers(make_client, session_factory, tmp_path):
    with session_factory() as session:
        uow = UnitOfWork(session)
        seed_judged_history(uow, revisions=6, kernels=["flashcore_wmma"], a100=False)
        write_sample_files(uow, tmp_path / "data")
        running = session.scalar(select(Revision.id).where(Revision.status == RevisionStatus.RUNNING))
    revision_id, _ = store_judged(session_factory, distinct_figures_result(), tmp_path / "data")
    client = make_client(embedded_executor=False)
    pages = [routes.HOME, routes.link(routes.REVISION_PAGE, ref=revision_id),
             routes.link(routes.REVISION_PAGE, ref=running), routes.COMPARE_PAGE,
             f"{routes.COMPARE_PAGE}?a={revision_id - 1}&b={revision_id}", "/nowhere"]   # an error page too
    home = _links(client.get(routes.HOME).text)
    kernel_pages = {link for link in home.links if link.startswith(routes.prefix(routes.KERNEL_PAGE))}
    assert kernel_pages
    pages += sorted(kernel_pages)
    links: set[str] = set()
    for page in pages:
        found = _links(client.get(page, headers=BROWSER).text)
        assert found.revision_page == routes.prefix(routes.REVISION_PAGE)    # where a chart's click goes
        links |= found.links
    links.add(home.revision_page + str(revision_id))
    drawn = {urlsplit(link).path for link in links}
    assert {routes.PLOTLY_JS, routes.DOCS, routes.link(routes.REVISION, revision_id=running)} <= drawn
    assert any(path.startswith(routes.prefix(routes.ARTIFACT)) for path in drawn)      # the job's files
    assert any(path.startswith(routes.prefix(routes.REVISION_PAGE)) for path in drawn)
    for link in sorted(links):
        assert _answered(client.app, urlsplit(link).path), link
        assert client.get(link, headers=BROWSER).status_code == 200, link


def test_every_named_path_is_a_registered_route(make_client):
    app = make_client(embedded_executor=False).app
    params = {"name": "k", "ref": "1", "revision_id": 1, "artifact_id": 1}
    gets = (routes.HOME, routes.KERNEL_PAGE, routes.REVISION_PAGE, routes.COMPARE_PAGE, routes.PLOTLY_JS,
            routes.STATIC + "/gate.js", routes.DOCS, routes.OPENAPI, routes.HEALTHZ, routes.METRICS,
            routes.KERNELS, routes.KERNEL_HISTORY, routes.REVISION, routes.ARTIFACT)
    posts = (routes.REVISIONS, routes.REVISION_CANCEL, routes.GITHUB_WEBHOOK)
    for method, paths in (("GET", gets), ("POST", posts)):
        for path in paths:
            filled = path.format(**params)
            assert _answered(app, filled, method), f"{method} {path}"
    assert not _answered(app, "/kernels")           # the check itself can fail


def test_a_link_quotes_each_parameter_as_one_segment():
    assert routes.link(routes.KERNEL_PAGE, name="a b/c") == "/kernels/a%20b%2Fc"
    assert routes.link(routes.ARTIFACT, artifact_id=7) == "/api/v1/artifacts/7"
