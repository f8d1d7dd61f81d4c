# Word segmentation with a learned length distribution in place of the fixed penalty
# exp(-length ^ 1.6) of specs/segment.em.
model segment_length
observed x : symbols
latent   s : segmentation(x, maxlen=10)
multinomial word   : P(s.word)
multinomial length : P(s.length)
