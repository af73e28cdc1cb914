"""The API function: every REST route and MCP endpoint behind API Gateway (layers/core/cairn)."""

from cairn.bootstrap import build_container
from cairn.config import Settings
from cairn.entrypoints.aws_lambda import api_handler

handler = api_handler(lambda: build_container(Settings()))
