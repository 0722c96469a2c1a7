"""Layer 1, the text core: tree lines, answer parsing, views, prompts, pruning, tokens,
windows and the :class:`~lrlib.core.step.Step` record. Pure functions; imports only
:mod:`lrlib.paths`."""
