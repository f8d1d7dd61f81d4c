# The penalized unigram segmenter of specs/segment.em written as rules: the same word block, the
# same fixed length penalty, the same substring vocabulary; `--init RUN` takes a run of segment.em.
model rules_segment
observed x : symbols                          # one utterance per line; each character is a symbol
structure words(x, maxlen=10)
  item  end(i in 0..n)                        # x[0:i] split into words
  axiom end(0)
  part  seg(i, j) : end(j) += end(i) for i in j-maxlen..j-1
        where word = x[i:j], length = j - i in 1..maxlen
  goal  end(n)
latent   s : words(x)
param    beta = 1.6
multinomial word : P(s.word)
weight penalty : exp(-s.length ^ beta)
