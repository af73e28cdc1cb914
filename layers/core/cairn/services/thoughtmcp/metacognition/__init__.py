"""ThoughtMCP's metacognitive tools: assess_confidence, detect_bias, detect_emotion and evaluate.

`MetacognitionService` (service.py) answers them, with offline rule engines (confidence.py and
interpretation.py, bias.py, emotion.py, evaluation.py over signals.py and lexicons.py) or the
configured language model (model_path.py). docs/METACOGNITION.md describes what each computes.
"""

from cairn.services.thoughtmcp.metacognition.model_path import MetacognitionFailed
from cairn.services.thoughtmcp.metacognition.service import MetacognitionService

__all__ = ["MetacognitionFailed", "MetacognitionService"]
