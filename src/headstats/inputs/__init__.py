"""Inputs: records (single sentences and pairs), readers for each file format, and dependency parses."""

from headstats.inputs.records import Record, Word

__all__ = ["Record", "Word"]
