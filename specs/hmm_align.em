# The HMM aligner (Vogel, Ney & Tillmann 1996): IBM 1's translation table plus a distribution
# over jumps between the source positions of consecutive links (NULL links keep the position,
# Och & Ney 2003). `emc fit --init ibm1` starts it from IBM 1, `--agree` trains both directions
# jointly (Liang, Taskar & Klein 2006).
model hmm_align
observed e : tokens, f : tokens
latent   a : alignment(f from e, null=yes, jump=yes, maxjump=20)
multinomial trans : P(a.target | a.source)
multinomial jump  : P(a.jump)                 # i - i_prev: -20 (or less) .. 20 (or more), NULL
