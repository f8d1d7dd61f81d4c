# The HMM aligner (Vogel, Ney & Tillmann 1996) with the log-linear translation table of
# specs/ibm1_features.em: pair features (identical words, a shared 4-letter prefix) shared by
# every source word. `emc fit --init ibm1` starts it from IBM 1 with the same features.
model hmm_align_features
observed e : tokens, f : tokens
latent   a : alignment(f from e, null=yes, jump=yes, maxjump=20)
param    kappa = 0.1                          # the l2 penalty (--set kappa=1)
multinomial trans : P(a.target | a.source)  features(a.target, pair.same, pair.same_lower, pair.prefix(4))  l2(kappa)
multinomial jump  : P(a.jump)                 # i - i_prev: -20 (or less) .. 20 (or more), NULL
