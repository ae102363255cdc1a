"""Models: loading BERT-family encoders, encoding records, the hub, and fine-tuning."""
