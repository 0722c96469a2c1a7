"""Datasets beyond the shipped one: WebLINX-BG's importer (`lrlib import-weblinx`), and
`lrlib evaluate` on files larger than memory (:mod:`lrlab.scale.evaluate_backend`: episodes
sharded across every core, :mod:`lrlab.scale.sharded`; the summary folded per episode,
:mod:`lrlab.scale.episode_stats`)."""
