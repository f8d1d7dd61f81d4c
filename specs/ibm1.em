# IBM Model 1 word alignment (Brown et al. 1993); two of them trained by agreement with
# `emc fit --agree` (Liang, Taskar & Klein 2006).
model ibm1
observed e : tokens, f : tokens               # a sentence pair `e ||| f`; f is generated from e
latent   a : alignment(f from e, null=yes)    # each f_j links to one e_i or to NULL
multinomial trans : P(a.target | a.source)    # t(f_j | e_aj), sparse: co-occurring pairs only
