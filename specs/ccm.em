# Constituent-context model for unsupervised bracketing (Klein & Manning 2002): every span of a
# part-of-speech sequence, in the tree or out of it, generates its yield and its context.
# empty=yes also scores the empty spans (always distituents), so the distituent contexts learn
# which adjacent symbols a constituent boundary does not fall between; add-1 smoothing keeps the
# many yields seen once from deciding their own bracketing. (bench/ccm_wsj10.py measures both.)
model ccm
observed x : tokens                            # one tag sequence per line
latent   t : spantree(x, empty=yes)            # a binary bracketing; every span is in or out
multinomial yield   : P(t.yield | t.constituent)    smooth add(1)
multinomial context : P(t.context | t.constituent)  smooth add(1)
