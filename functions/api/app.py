"""The API function: every REST route and MCP endpoint behind API Gateway (layers/core/cairn)."""

from cairn.bootstrap.functions import api_function

handler = api_function()
