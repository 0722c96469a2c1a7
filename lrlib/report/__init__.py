"""Layer 6, what notebooks and ``lrlib figures`` call: runs, replay helpers, the
explorer, plots, tables, forest plots, vector-pack building, the injection benchmark."""
