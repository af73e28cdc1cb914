"""ThoughtMCP's reasoning tools: think (five modes), analyze, ponder, breakdown (service.py).

context.py holds the MemoryContext protocol the metacognition tools share; docs/REASONING.md
describes the offline rules and the model path.
"""
