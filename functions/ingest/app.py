"""The ingest task function: the steps of the ingest state machine (infra/statemachines/ingest.asl.json)."""

from cairn.bootstrap import build_container
from cairn.config import Settings
from cairn.entrypoints.aws_lambda import jobs_handler

handler = jobs_handler(lambda: build_container(Settings()))
