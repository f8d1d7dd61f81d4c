# The PCFG of specs/pcfg.em written as rules: CKY over labeled spans, the same blocks and tables;
# `--init RUN` takes a run of pcfg.em.
model rules_pcfg
observed x : tokens                                          # one tag sequence per line
structure tree(x, labels=10)
  item  span(i in 0..n, j in 0..n, a in 0..labels-1)         # x[i:j] derived from label a
  item  whole()                                              # the sentence, from its root label
  part  leaf(i, a) : span(i, i + 1, a) where word = x[i]
  part  binary(i, k, j, a, b, c) : span(i, j, a) += span(i, k, b) * span(k, j, c) for k in i+1..j-1
  part  top(a) : whole() += span(0, n, a)
  goal  whole()
latent t : tree(x)
multinomial rule : P(t.b, t.c | t.binary.a)                  # binary rewrites
multinomial emit : P(t.word | t.leaf.a)                      # preterminals
multinomial root : P(t.top.a)                                # the whole sentence's label
