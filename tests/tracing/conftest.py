"""A loopback OTLP receiver per test (``agentworld.testing.otlp``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agentworld.testing.otlp import OtlpReceiver


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as running:
        yield running
