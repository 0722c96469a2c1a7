"""Layer 5, evaluation: metrics, intervals, costs, offline evaluation, the injection
set, and the cross-validated training of the learned and program reducers."""
