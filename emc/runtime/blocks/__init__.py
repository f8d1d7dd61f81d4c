"""The learned blocks' M-step: the log-linear (featured) blocks' models and their compiled
optimisers (features.py, loglinear.py, feature_groups.py; a sparse table over word pairs:
pair_features.py, pair_mstep.py)."""
