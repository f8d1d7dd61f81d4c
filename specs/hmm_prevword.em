# An HMM whose transitions also see the previous word (its last two letters), written as rules:
# the chain's fixed slots give a transition its two tags only. The first tag is chosen by its own
# block; every later one from the tag before it and the word before it:
#   emc fit specs/hmm_prevword.em train.txt.gz --format conll --gold-column 2
model hmm_prevword
observed x : tokens
structure tags(x, states=45)
  item  state(t in 0..n, k in 0..states-1)      # x[0:t] tagged, the last tag k
  item  done()
  part  first(k) : state(1, k) for k in 0..states-1 where w = x[0] labels x[0] as k
  part  step(t, j, k) : state(t, k) += state(t - 1, j) for k in 0..states-1, t in 2..n
        where w = x[t - 1], prev = x[t - 2] labels x[t - 1] as k
  part  stop(k) : done() += state(n, k)
  goal  done()
latent z : tags(x)
multinomial start : P(z.first.k)
multinomial trans : P(z.step.k | z.j, z.prev.suffix(2))   # the tag before and the word before
multinomial emit  : P(z.first.w | z.first.k)
multinomial emit_next : P(z.step.w | z.step.k) shares emit
