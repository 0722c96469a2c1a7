"""lrlab: the research wing beside :mod:`lrlib`. lrlib never imports it; it reaches lrlib's
registries through the ``lrlib.plugins`` entry point (:mod:`lrlab.plugin`).

- :mod:`lrlab.reducers`: the tuned and learned scorers (``program``, ``learned``), the BM25
  and embedding baselines, and the injection guard they share;
- :mod:`lrlab.tuning`: grouped cross-validation and the scorers' tuning and training;
- :mod:`lrlab.injection`: the prompt-injection benchmark, its sets and its report;
- :mod:`lrlab.scale`: the WebLINX-BG importer;
- :mod:`lrlab.agent`: live MiniWoB++ episodes with a reducer in the loop, minimal failure sets;
- :mod:`lrlab.report`: the explorer, the trade-off and forest plots, the vector packs.
"""
