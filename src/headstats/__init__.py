"""headstats: statistics, not averages, for what each attention head of a BERT-family model does."""

__version__ = "0.1.0"
