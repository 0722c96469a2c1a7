"""Layer 3, the LLM: error taxonomy, endpoint, request/completion records, response
cache, client and the embedded server. Imports only core and data."""
