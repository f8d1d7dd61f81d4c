# The HMM aligner under posterior regularization (Ganchev, Graca & Taskar 2008; Graca, Ganchev &
# Taskar 2010), in the paper's best setting, symmetry and bijectivity together. `emc fit` trains
# both directions at once (RUN and RUN/reverse); after each E-step, each sentence pair's posterior
# over both directions' alignments is projected onto those in which the two directions agree on
# every link's expectation (symmetry) and every source word of each direction is, in expectation,
# linked to at most one target word (bijectivity), by a few projected-gradient steps on the pair's
# duals, each one E-step per direction with the link scores shifted (emc/runtime/symmetry.py).
# Without --init, --iterations or --constraint-esteps on the command line, the fit runs 5
# iterations of IBM 1, then 1 of constrained EM with at most 10 passes a projection: on the
# Hansards (bench/alignment_pr_hansards.py) more iterations overfit (AER 10.6% after 1, 15.6% after 5).
# `emc decode RUN BITEXT` projects each pair the same way and prints the links whose mean projected
# posterior is at least 0.5 (English position first).
# `emc fit --constraints off` fits the plain HMM aligner (specs/hmm_align.em) in each direction.
model hmm_align_pr
observed e : tokens, f : tokens
latent   a : alignment(f from e, null=yes, jump=yes, maxjump=20)
multinomial trans : P(a.target | a.source)
multinomial jump  : P(a.jump)                 # i - i_prev: -20 (or less) .. 20 (or more), NULL
constraint symmetric : E[a] agree                   # per pair, both directions' link posteriors
constraint bijective : E[count per a.source] <= 1   # per pair, at each source position, both directions
