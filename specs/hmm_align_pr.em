# The HMM aligner under posterior regularization (Ganchev, Graca & Taskar 2008; Graca, Ganchev &
# Taskar 2010): after each E-step, each sentence pair's posterior over alignments is projected
# onto those in which every source word is, in expectation, linked to at most one target word
# (bijectivity), by a few projected-gradient steps on the pair's duals, each one E-step with the
# link scores of source position i shifted by exp(-lambda_i) (emc/runtime/example_constraints.py).
# Decoding projects each pair's posterior the same way. `emc fit --constraints off` fits the plain
# HMM aligner (specs/hmm_align.em) for comparison.
model hmm_align_pr
observed e : tokens, f : tokens
latent   a : alignment(f from e, null=yes, jump=yes, maxjump=20)
multinomial trans : P(a.target | a.source)
multinomial jump  : P(a.jump)                 # i - i_prev: -20 (or less) .. 20 (or more), NULL
constraint bijective : E[count per a.source] <= 1   # per pair, at each source position
