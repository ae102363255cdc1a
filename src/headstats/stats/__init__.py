"""Statistics: tables in, tables out. Never imports torch, matplotlib or rich."""
