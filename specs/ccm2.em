# CCM model 2 (Smith & Eisner 2004): as specs/ccm.em, but the yield is conditioned on its length.
model ccm2
observed x : tokens                            # one tag sequence per line
latent   t : spantree(x, empty=yes)            # a binary bracketing; every span is in or out
multinomial yield   : P(t.yield | t.constituent, t.length)  smooth add(1)
multinomial context : P(t.context | t.constituent)          smooth add(1)
