"""From test results to roles: role assignment, the study's role tables, and before/after change tables."""
