# IBM Model 2 (Brown et al. 1993) with fast_align's diagonal (Dyer, Chahuneau & Smith 2013):
# IBM 1's translation table, and a distribution over how far each link lies from the diagonal
# (the source position under the middle of the target word; distances of 8 or more share the end
# buckets, NULL has its own). `emc fit --init ibm1` starts it from IBM 1; `--agree` trains both
# directions jointly.
model ibm2
observed e : tokens, f : tokens               # a sentence pair `e ||| f`; f is generated from e
latent   a : alignment(f from e, null=yes, maxjump=8)
multinomial trans    : P(a.target | a.source) # t(f_j | e_aj), sparse: co-occurring pairs only
multinomial diagonal : P(a.diagonal)          # i - the diagonal's position at j: -8 (or less) .. 8 (or more), NULL
