"""The FastAPI application: `create_app(settings)`; tests inject a fake pipeline and source reader."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool

from gate.api.context import GateContext, NoExecutor
from gate.api import docs_pages, pages, validation_errors
from gate.api.auth import AuthBeforeBody
from gate.api.body_limit import BodyLimit
from gate.api.series_warmup import SeriesWarmup
from gate.api.page_cache import PageCache
from gate.api.security_headers import SecurityHeaders
from gate.api.routes import artifacts, github, health, kernels, revisions
from gate.api.telemetry import make_registry
from gate.config import Settings, get_settings
from gate.domain import routes
from gate.domain.executor import Executor
from gate.executors.base import JobEnvironment
from gate.executors.job import GateJob, load_gate_job
from gate.notify.listeners import notifier_for
from gate.services.outbox import start_sweeper
from gate.services.planner import Planner
from gate.services.sources import MirrorSources, SourceReader
from gate.sources.mirror import end_fetches
from gate.sources.policy import FetchPolicy
from gate.storage.series_cache import SeriesCache
from gate.storage.series_snapshot import SeriesSnapshots
from gate.storage.unit import Store

ROUTERS = [revisions.router, kernels.router, artifacts.router, github.router, health.router, pages.router]


def _executor(settings: Settings, env_factory, embedded: bool) -> Executor:  # noqa: ANN001
    if settings.executor == "celery":   # the server only sends; GPU workers run
        from gate.executors.celery import CeleryExecutor

        return CeleryExecutor(env_factory(), settings.broker_url)
    if not embedded:
        return NoExecutor()
    from gate.executors.local import LocalExecutor

    return LocalExecutor(env_factory())


def _install_guards(app: FastAPI, settings: Settings) -> None:
    docs_pages.install(app)             # /docs without a CDN
    pages.install_error_pages(app)      # page routes answer errors with HTML, the API with JSON
    validation_errors.install(app)      # 422s that do not echo large input
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes,
                       unauthenticated_bytes=settings.unauthenticated_body_bytes)
    app.add_middleware(AuthBeforeBody, settings=settings)     # refusals before any body
    app.add_middleware(SecurityHeaders)                       # outermost: on every answer, refusals too


def create_app(settings: Settings | None = None, *, gate_job: GateJob | None = None,
               sources: SourceReader | None = None, embedded_executor: bool = True,
               executor: Executor | None = None, local_repos: bool = True) -> FastAPI:
    """The app. The schema must exist (`gate migrate`; `gate serve` migrates before it starts).
    `local_repos` is the default of GATE_ALLOW_LOCAL_REPOS: `gate serve` passes False."""
    settings = settings or get_settings(service=True)
    store = Store.from_url(settings.database_url)
    policy = FetchPolicy.from_env(local_default=local_repos).protecting(settings.data_dir)
    sources = sources if sources is not None else MirrorSources(settings.data_dir, policy)
    notifier = notifier_for(settings)      # GitHub statuses / Check Runs / webhooks, from the settings

    def env_factory() -> JobEnvironment:
        return JobEnvironment(store=store, gate_job=gate_job or load_gate_job(),
                              data_dir=settings.data_dir, options=settings.run_options(),
                              mirror=getattr(sources, "mirror", None), notifier=notifier,
                              spare_child=settings.spare_child)

    series_cache = SeriesCache(snapshots=SeriesSnapshots(settings.data_dir / "series", store.engine.url.render_as_string()))
    warmup = SeriesWarmup(store, series_cache, max_points=pages.PAGE_POINTS)
    gate = GateContext(settings=settings, store=store, sources=sources,
                       executor=executor or _executor(settings, env_factory, embedded_executor),
                       planner=Planner(settings.planner_workers, settings.planner_queue), policy=policy,
                       notifier=notifier)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        sweeper = start_sweeper(settings, store, notifier)
        if settings.warm_history:
            warmup.start()
        else:
            warmup.done.set()
        gate.planner.start()
        await run_in_threadpool(gate.recover)      # queues leftovers; planning them does not hold the start
        gate.executor.start()
        try:
            yield
        finally:
            await run_in_threadpool(gate.planner.stop, end_fetches)      # no git child outlives the server
            await run_in_threadpool(warmup.stop)
            await run_in_threadpool(gate.executor.stop)
            await run_in_threadpool(sweeper.stop)
            store.dispose()

    app = FastAPI(title="FlashCore Gate", version="0.1.0", lifespan=lifespan, docs_url=None, redoc_url=None,
                  description="Gates CUDA kernel revisions: build, correctness, timing, profile, verdict.")
    _install_guards(app, settings)
    app.state.gate = gate
    app.state.metrics_registry = make_registry(store)
    app.state.page_cache = PageCache()
    app.state.series_cache = series_cache
    app.state.series_warmup = warmup
    for router in ROUTERS:
        app.include_router(router)
    app.mount(routes.STATIC, pages.static_files, name="static")
    return app
