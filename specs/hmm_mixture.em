# A mixture of HMMs, written as rules (a model has one latent variable, so no built-in has it): a
# sentence first picks one of `components` HMMs, then is tagged by it. Each component has its own
# transitions and emissions over `states` states; a token's tag is its state (the component
# aside) for scoring: emc fit specs/hmm_mixture.em train.txt.gz --format conll --gold-column 2.
model hmm_mixture
observed x : tokens
structure mixture(x, components=3, states=15)
  item  begin()
  item  state(t in 0..n, m in 0..components-1, k in 0..states)   # x[0:t] tagged by component m, the last tag k
  item  done()
  axiom begin()
  part  pick(m) : state(0, m, states) += begin() for m in 0..components-1
  part  step(t, m, j, k) : state(t, m, k) += state(t - 1, m, j) for k in 0..states-1
        where w = x[t - 1], to = k in 0..states labels x[t - 1] as k
  part  stop(m, k) : done() += state(n, m, k) for k in 0..states-1
        where to = states in 0..states, from = k in 0..states
  goal  done()
latent z : mixture(x)
multinomial component : P(z.pick.m)
multinomial trans : P(z.step.to | z.j, z.step.m)
multinomial emit  : P(z.w | z.step.k, z.step.m)
multinomial stop  : P(z.stop.to | z.from, z.stop.m) shares trans
