# POS induction with posterior sparsity (Graca, Ganchev, Taskar & Pereira 2009, "Posterior vs.
# parameter sparsity in latent variable models"): the bigram HMM of specs/hmm.em, whose E-step
# posterior is projected onto posteriors in which each word type uses few tags. The projection
# minimises KL(q || p) + 1.0 * sum, over word types w and states t, of max over the tokens i of w
# of q(z_i = t) (an L1/Linf penalty), by a few projected-gradient steps on its duals (one per
# token and state) each iteration, warm-started from the last (emc/runtime/sparsity.py).
# `emc fit --constraints off` fits the plain HMM for comparison.
model hmm_sparse
observed x : tokens                          # one sentence per line
latent   z : chain(x, states=45)             # one hidden state per token
multinomial trans : P(z | z.prev)
multinomial emit  : P(x | z)
constraint sparse : E[max z per x] penalty 1.0   # sum over (word type, state) of the largest posterior
