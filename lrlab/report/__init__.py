"""Research reports: the explorer, trade-off curves, forest plots and the embedding vector packs."""
