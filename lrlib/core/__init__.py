"""Layer 1, the text core: tree lines, line selections, answer parsing (with the echo
check), pruning and views, prompts, tokens, sanitising and the :class:`~lrlib.core.step.Step`
record. Pure functions; imports only :mod:`lrlib.settings` and :mod:`lrlib.paths`."""
