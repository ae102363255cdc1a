"""A whole study: preflight, scoring, the comparison step, storage of the tables, and the run itself."""
