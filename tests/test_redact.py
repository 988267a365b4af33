"""Secrets in URLs never reach a reason, a warning or a log."""

from __future__ import annotations

import pytest

from judge.llm.providers.openai import OpenAIProvider
from judge.redact import redact_url


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://u:pw@h:5432/db", "postgresql://u:***@h:5432/db"),
        ("postgresql://h/db?password=pw&sslmode=require", "postgresql://h/db?password=***&sslmode=require"),
        ("https://gw.example/v1?api-key=k1&x=1", "https://gw.example/v1?api-key=***&x=1"),
        ("https://gw.example/v1?key=k1", "https://gw.example/v1?key=***"),
        ("http://gwuser:TOPSECRET@127.0.0.1:8080/v1", "http://gwuser:***@127.0.0.1:8080/v1"),
        ("postgresql://u@h/db", "postgresql://u@h/db"),
        ("http://sk-live-SECRET@127.0.0.1:9/v1", "http://***@127.0.0.1:9/v1"),
        ("https://api.openai.com/v1", "https://api.openai.com/v1"),
    ],
)
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_a_provider_names_its_server_without_the_password() -> None:
    # the URL is part of every provider failure: a reason the judged agent reads
    env = {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "http://gwuser:TOPSECRET@127.0.0.1:9/v1"}
    provider = OpenAIProvider("judge-test", env)
    assert provider.url == "http://gwuser:***@127.0.0.1:9/v1"
