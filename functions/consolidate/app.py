"""The consolidation task function: the steps of infra/statemachines/consolidate.asl.json."""

from cairn.bootstrap.functions import jobs_function

handler = jobs_function()
