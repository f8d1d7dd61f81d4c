# A bigram HMM whose states also emit the word's last three letters and its shape (a product of
# experts on the emission side): not in the reference papers; the views help rare and unseen words.
model hmm_suffix
observed x : tokens
latent   z : chain(x, states=45)
multinomial trans  : P(z | z.prev)
multinomial emit   : P(x | z)
multinomial suffix : P(x.lower.suffix(3) | z)
multinomial shape  : P(x.shape | z)
