"""The study report: blocks rendered to Markdown and HTML, and the builder that assembles them."""
