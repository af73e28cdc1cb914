"""ThoughtMCP's domain: sector memories (memories.py, thought_scoring.py), the reasoning tools
(reasoning/: think, analyze, ponder, breakdown) and the metacognition tools (metacognition/)."""
