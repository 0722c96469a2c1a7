"""Grouped cross-validation (task family, benchmark) and the tuning and training of the program and learned scorers."""
