"""The job task function: runs background jobs for Step Functions and the consolidation schedule."""

from cairn.bootstrap.functions import jobs_function

handler = jobs_function()
