"""A JSON-reply chat client over Bedrock Converse, for the background model calls (facts, reflection).

It stands in for openai_chat.OpenAIChat: the same `model` attribute and `complete_json(system,
user) -> dict`, so OpenAIFactExtractor and OpenAIReflector run on Bedrock unchanged. Converse has
no JSON mode, so the prompt's own instructions carry the format, at temperature 0, and the reply is
parsed with openai_chat.parse_json_object (```json fences, a <think> block, prose around it).
Retries and error mapping follow bedrock_errors; a model timeout is not retried.
"""

from __future__ import annotations

from typing import Any

from cairn.adapters.aws.bedrock_errors import BedrockRuntime, call_with_retries
from cairn.adapters.local.openai_chat import parse_json_object
from cairn.adapters.retrying import RetryPolicy
from cairn.ports.generator import GenerationError


class BedrockChat:
    def __init__(
        self,
        client: BedrockRuntime,
        model_id: str,
        *,
        max_tokens: int = 4096,
        retry: RetryPolicy | None = None,
    ) -> None:
        self._client = client
        self.model = model_id
        self.provider = "bedrock"
        self._max_tokens = max_tokens
        self._retry = retry or RetryPolicy()

    @property
    def model_id(self) -> str:
        return self.model

    def complete_json(self, system: str, user: str) -> dict[str, Any]:
        """The model's reply to one system + user turn, as a JSON object. Raises GenerationError."""
        request = {
            "modelId": self.model,
            "system": [{"text": system}],
            "messages": [{"role": "user", "content": [{"text": user}]}],
            "inferenceConfig": {"temperature": 0, "maxTokens": self._max_tokens},
        }
        response = call_with_retries(lambda: self._client.converse(**request), self.model, self._retry)
        text, stop = self._reply(response)
        parsed = parse_json_object(text)
        if parsed is None:
            why = " (cut off at the token limit)" if stop == "max_tokens" else ""
            raise self._bad(f"a reply that is not a JSON object{why}")
        return parsed

    def _reply(self, response: Any) -> tuple[str, str | None]:
        """The text of the reply's content blocks and the stop reason."""
        output = response.get("output") if isinstance(response, dict) else None
        message = output.get("message") if isinstance(output, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            raise self._bad("a reply without a message")
        texts = [block["text"] for block in content if isinstance(block, dict) and "text" in block]
        if not texts or not all(isinstance(t, str) for t in texts):
            raise self._bad("a reply without text")
        stop = response.get("stopReason")
        return "".join(texts), stop if isinstance(stop, str) else None

    def _bad(self, what: str) -> GenerationError:
        return GenerationError("bad_response", f"Bedrock model {self.model} sent {what}", retryable=False)
