"""What the model-backed fact extractor and reflector need from a chat model: a JSON completion.

Implemented by the OpenAI-compatible client (adapters/local/openai_chat.py) and Bedrock Converse
(adapters/aws/bedrock_chat.py); both raise GenerationError on failure.
"""

from __future__ import annotations

from typing import Any, Protocol


class JsonChat(Protocol):
    provider: str  # "openai", "bedrock": recorded in each fact's extracted_by
    model: str

    def complete_json(self, system: str, user: str) -> dict[str, Any]: ...
