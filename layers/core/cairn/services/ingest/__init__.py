"""Ingesting files, URLs and notes into documents (service.py), and the staged ingest the Step
Functions state machine runs one step at a time (ingest_steps.py)."""
