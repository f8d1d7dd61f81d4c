# IBM Model 1 with a log-linear translation table (Berg-Kirkpatrick, Bouchard-Cote, DeNero & Klein
# 2010): t(f | e) ~ exp(w_e . f(f) + u . g(f, e)) over the co-occurring pairs, where the pair
# features g (identical words, a shared 4-letter prefix) have one weight each, shared by every
# source word, so cognates and names link without a count of their own.
model ibm1_features
observed e : tokens, f : tokens               # a sentence pair `e ||| f`; f is generated from e
latent   a : alignment(f from e, null=yes)    # each f_j links to one e_i or to NULL
param    kappa = 0.1                          # the l2 penalty (--set kappa=1)
multinomial trans : P(a.target | a.source)  features(a.target, pair.same, pair.same_lower, pair.prefix(4))  l2(kappa)
