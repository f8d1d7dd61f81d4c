# A bigram HMM whose emissions are log-linear in features of the word (Berg-Kirkpatrick,
# Bouchard-Cote, DeNero & Klein 2010): each feature conjoined with the state, weights fitted by
# L-BFGS in the M-step, an unseen word scored from its spelling.
model hmm_features
observed x : tokens
latent   z : chain(x, states=45)
multinomial trans : P(z | z.prev)
multinomial emit  : P(x | z)  features(x, x.lower, x.suffix(1), x.suffix(2), x.suffix(3),
                                       x.has_digit, x.has_hyphen, x.capitalized)  l2(1.0)
