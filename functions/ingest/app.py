"""The ingest task function: the steps of the ingest state machine (infra/statemachines/ingest.asl.json)."""

from cairn.bootstrap.functions import jobs_function

handler = jobs_function()
