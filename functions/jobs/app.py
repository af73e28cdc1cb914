"""The job task function: runs background jobs for Step Functions and the consolidation schedule."""

from cairn.bootstrap import build_container
from cairn.config import Settings
from cairn.entrypoints.aws_lambda import jobs_handler

handler = jobs_handler(lambda: build_container(Settings()))
