"""The protocol: its schema, loading and validation (the layer every other layer may read)."""
