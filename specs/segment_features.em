# Penalized unigram word segmentation with a log-linear word distribution (Berg-Kirkpatrick,
# Bouchard-Cote, DeNero & Klein 2010): P(s.word) ~ exp(w . f(word)), where f is the word itself,
# its first and last symbols (1 to 3 of them) and its length, so words that share pieces share
# weight; the length penalty of specs/segment.em stays.
model segment_features
observed x : symbols                          # one utterance per line; each character is a symbol
latent   s : segmentation(x, maxlen=10)       # words of at most 10 symbols (--maxlen 8)
param    beta = 1.6                           # the length penalty's exponent (--set beta=1.8)
multinomial word : P(s.word)  features(s.word, s.word.prefix(1), s.word.prefix(2), s.word.prefix(3),
                                       s.word.suffix(1), s.word.suffix(2), s.word.suffix(3), s.word.length)  l2(1.0)
weight penalty : exp(-s.length ^ beta)        # fixed, not learned
