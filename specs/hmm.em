# Bigram HMM for unsupervised part-of-speech tagging (Merialdo 1994; Liang & Klein 2009).
model hmm
observed x : tokens                          # one sentence per line
latent   z : chain(x, states=45)             # one hidden state per token
multinomial trans : P(z | z.prev)            # z.prev is the start symbol at position 0
multinomial emit  : P(x | z)
