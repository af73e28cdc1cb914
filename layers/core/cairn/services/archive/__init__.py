"""Whole-brain archives: the format (records.py), export and import (service.py), a restore in
progress (restore.py)."""
