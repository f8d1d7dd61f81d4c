# Interpolating two fixed unigram language models: EM learns only the mixing weight lambda =
# P(m = 0), the expected share of tokens (one per line: per-token interpolation) or documents
# (one per line) that model 0 explains. Give the models with --fixed lm=FILE (format:
# emc/io/fixed_blocks.py, e.g. the line `the 0 0.05` is P(s = the | m = 0)).
model interpolate
observed s : tokens
latent   m : label(s, classes=2)
multinomial mix : P(m)
multinomial lm  : P(s | m)  fixed             # read from a file at fit time, never re-estimated
