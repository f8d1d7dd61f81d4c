# Trigram (second-order) HMM with add-0.1 smoothing (Smith & Eisner 2004).
model hmm2
observed x : tokens
latent   z : chain(x, states=45, order=2)
multinomial trans : P(z | z.prev, z.prev2)  smooth add(0.1)
multinomial emit  : P(x | z)                smooth add(0.1)
