# Penalized unigram word segmentation (Liang & Klein 2009): p(x, z) ~ prod_k p(x_zk) exp(-|z_k| ^ beta).
model segment
observed x : symbols                          # one utterance per line; each character is a symbol
latent   s : segmentation(x, maxlen=10)       # words of at most 10 symbols (--maxlen 8)
param    beta = 1.6                           # the length penalty's exponent (--set beta=1.8)
multinomial word : P(s.word)                  # one distribution over every substring of the data
weight penalty : exp(-s.length ^ beta)        # fixed, not learned
