"""Layer 3, the LLM: error taxonomy, endpoint, request/completion records, response cache
and client (the embedded server is the research wing's, reached through :mod:`lrlib.plugins`).
Imports only the core."""
