"""Reducers of the research wing: BM25 and embedding retrieval, the tuned program and the learned scorer (with their features, lexicon and budget), and the injection guard."""
