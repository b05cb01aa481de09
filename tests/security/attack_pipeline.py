"""The pipeline `gate serve` runs in these tests (GATE_TEST_PIPELINE=attack_pipeline:judged): the
service's fake, which judges every job `accept` at once, so an attack meets a server that really
plans, runs and stores jobs without a GPU."""

from __future__ import annotations

from tests.service_fakes import FakePipeline

judged = FakePipeline()
