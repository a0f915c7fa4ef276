"""Fixtures of the model-layer tests: a fake OpenAI-compatible server and clients bound to it."""

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from research.llm.config import LLMConfig
from research.llm.openai_compatible import OpenAICompatibleClient
from tests.llm.fake_openai import FakeOpenAIServer


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAIServer]:
    server = FakeOpenAIServer()
    yield server
    server.close()


class SleepRecorder:
    """Stands in for ``time.sleep`` so back-off is asserted, not waited for."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture
def sleeps() -> SleepRecorder:
    return SleepRecorder()


@pytest.fixture
def make_client(
    fake_openai: FakeOpenAIServer, sleeps: SleepRecorder
) -> Callable[..., OpenAICompatibleClient]:
    def build(**overrides: Any) -> OpenAICompatibleClient:
        options: dict[str, Any] = {
            "base_url": fake_openai.base_url,
            "api_key": "test-key",
            "model": "fake-model",
            "timeout_seconds": 2.0,
        }
        options.update(overrides)
        return OpenAICompatibleClient(LLMConfig(**options), sleep=sleeps)

    return build
