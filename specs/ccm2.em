# CCM model 2 (Smith & Eisner 2004): the yield is conditioned on its length as well.
model ccm2
observed x : tokens                            # one tag sequence per line
latent   t : spantree(x)                       # a binary bracketing; every span is in or out
multinomial yield   : P(t.yield | t.constituent, t.length)
multinomial context : P(t.context | t.constituent)
