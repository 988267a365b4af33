"""The local model server's batch endpoints, driven by the official SDKs: OpenAI Files +
Batches and Anthropic Message Batches (status transitions, result files, errors)."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import openai
import pytest

from judge.testing import LLMServer, fail, verdict
from judge.testing.batch_wire import BATCH_HEADER


def chat(content: str) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": content}]}


def openai_file(client: openai.OpenAI, lines: list[dict[str, Any]]) -> str:
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    return client.files.create(file=("in.jsonl", data, "application/jsonl"), purpose="batch").id


def request_line(key: str, content: str, url: str = "/v1/chat/completions") -> dict[str, Any]:
    return {"custom_id": key, "method": "POST", "url": url, "body": chat(content)}


def test_openai_batch_moves_through_its_statuses_and_writes_output_and_error_files() -> None:
    with LLMServer() as server:
        server.push(verdict(True), fail(400, "bad request body"))
        client = openai.OpenAI(api_key="k", base_url=server.openai_base_url, max_retries=0)
        file_id = openai_file(client, [request_line("a", "one"), request_line("b", "two")])
        assert client.files.retrieve(file_id).purpose == "batch"
        batch = client.batches.create(
            input_file_id=file_id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        assert batch.status == "validating"
        seen = [client.batches.retrieve(batch.id).status for _ in range(3)]
        assert seen == ["in_progress", "finalizing", "completed"]
        done = client.batches.retrieve(batch.id)
        assert done.request_counts is not None and (
            done.request_counts.completed,
            done.request_counts.failed,
        ) == (1, 1)
        assert done.output_file_id and done.error_file_id
        output = [json.loads(line) for line in client.files.content(done.output_file_id).text.splitlines()]
        errors = [json.loads(line) for line in client.files.content(done.error_file_id).text.splitlines()]
    assert output[0]["custom_id"] == "a" and output[0]["response"]["status_code"] == 200
    assert json.loads(output[0]["response"]["body"]["choices"][0]["message"]["content"]) == {"ok": True}
    assert errors[0]["custom_id"] == "b" and errors[0]["response"]["status_code"] == 400
    assert errors[0]["response"]["body"]["error"]["message"] == "bad request body"
    assert [r.headers[BATCH_HEADER] for r in server.requests] == [
        batch.id,
        batch.id,
    ]  # each line answered once


def test_openai_batch_cancel_expiry_and_validation_failures() -> None:
    with LLMServer() as server:
        client = openai.OpenAI(api_key="k", base_url=server.openai_base_url, max_retries=0)
        lines = [request_line(k, k) for k in ("a", "b", "c")]
        cancelled = client.batches.create(
            input_file_id=openai_file(client, lines), endpoint="/v1/chat/completions", completion_window="24h"
        )
        client.batches.retrieve(cancelled.id)
        assert client.batches.cancel(cancelled.id).status == "cancelling"
        ended = client.batches.retrieve(cancelled.id)
        assert ended.status == "cancelled" and ended.error_file_id
        codes = {
            json.loads(x)["error"]["code"]
            for x in client.files.content(ended.error_file_id).text.splitlines()
        }
        assert codes == {"batch_cancelled"}

        server.batches.controls.end_as, server.batches.controls.finish_only = "expired", 1
        expired = client.batches.create(
            input_file_id=openai_file(client, lines), endpoint="/v1/chat/completions", completion_window="24h"
        )
        client.batches.retrieve(expired.id)
        done = client.batches.retrieve(expired.id)
        assert (
            done.status == "expired"
            and done.request_counts is not None
            and done.request_counts.completed == 1
        )
        assert done.output_file_id and done.error_file_id

        server.batches.controls.end_as = "completed"
        broken = openai_file(client, [request_line("a", "x"), request_line("a", "y")])
        failed = client.batches.create(
            input_file_id=broken, endpoint="/v1/chat/completions", completion_window="24h"
        )
        done = client.batches.retrieve(failed.id)
        assert done.status == "failed" and done.errors is not None and done.errors.data
        assert "custom_id missing or duplicated" in str(done.errors.data[0].message)
        with pytest.raises(openai.BadRequestError):
            client.batches.create(
                input_file_id="file-missing", endpoint="/v1/chat/completions", completion_window="24h"
            )
    assert [r.path for r in server.side_requests].count("POST /v1/batches") == 4


def anthropic_request(key: str, content: str) -> Any:
    return {
        "custom_id": key,
        "params": {"model": "m", "max_tokens": 100, "messages": [{"role": "user", "content": content}]},
    }


def test_anthropic_message_batch_ends_with_results_of_every_kind() -> None:
    with LLMServer() as server:
        server.push(verdict(False, "no"), fail(400, "too long"))
        client = anthropic.Anthropic(api_key="k", base_url=server.anthropic_base_url, max_retries=0)
        batch = client.messages.batches.create(
            requests=[anthropic_request("a", "1"), anthropic_request("b", "2")]
        )
        assert batch.processing_status == "in_progress" and batch.request_counts.processing == 2
        assert client.messages.batches.retrieve(batch.id).processing_status == "in_progress"
        ended = client.messages.batches.retrieve(batch.id)
        assert ended.processing_status == "ended" and ended.results_url and ended.ended_at
        assert (ended.request_counts.succeeded, ended.request_counts.errored) == (1, 1)
        results = {r.custom_id: r.result for r in client.messages.batches.results(batch.id)}
        assert results["a"].type == "succeeded" and results["b"].type == "errored"
        assert json.loads(results["a"].message.content[0].text) == {"ok": False, "reason": "no"}  # type: ignore[union-attr]
        assert results["b"].error.error.message == "too long"  # type: ignore[union-attr]

        server.batches.controls.hold = True
        held = client.messages.batches.create(requests=[anthropic_request("c", "3")])
        for _ in range(3):
            assert client.messages.batches.retrieve(held.id).processing_status == "in_progress"
        assert client.messages.batches.cancel(held.id).processing_status == "canceling"
        assert client.messages.batches.retrieve(held.id).request_counts.canceled == 1
        assert [r.result.type for r in client.messages.batches.results(held.id)] == ["canceled"]

        server.batches.controls.hold, server.batches.controls.end_as = False, "expired"
        late = client.messages.batches.create(requests=[anthropic_request("d", "4")])
        client.messages.batches.retrieve(late.id)
        assert client.messages.batches.retrieve(late.id).request_counts.expired == 1

        with pytest.raises(anthropic.BadRequestError):
            client.messages.batches.create(requests=[anthropic_request("not valid!", "x")])
        with pytest.raises(anthropic.NotFoundError):
            client.messages.batches.retrieve("msgbatch_missing")


def test_batch_endpoints_check_the_api_key() -> None:
    with LLMServer(api_key="right") as server:
        client = openai.OpenAI(api_key="wrong", base_url=server.openai_base_url, max_retries=0)
        with pytest.raises(openai.AuthenticationError):
            client.files.create(file=("in.jsonl", b"{}\n", "application/jsonl"), purpose="batch")
        other = anthropic.Anthropic(api_key="wrong", base_url=server.anthropic_base_url, max_retries=0)
        with pytest.raises(anthropic.AuthenticationError):
            other.messages.batches.create(requests=[anthropic_request("a", "1")])
