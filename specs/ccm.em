# Constituent-context model for unsupervised bracketing (Klein & Manning 2002): every span of a
# part-of-speech sequence, in the tree or out of it, generates its yield and its context.
model ccm
observed x : tokens                            # one tag sequence per line
latent   t : spantree(x)                       # a binary bracketing; every span is in or out
multinomial yield   : P(t.yield | t.constituent)
multinomial context : P(t.context | t.constituent)
