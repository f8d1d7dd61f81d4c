"""The blocks of a model as the M-step sees them: one interface for every kind (block.py: a fixed
table, a plain learned block with its prior, a featured block), and the featured blocks'
log-linear models with their compiled optimisers (features.py, loglinear.py, feature_groups.py; a
sparse table over word pairs: pair_features.py, pair_mstep.py)."""
