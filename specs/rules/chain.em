# The bigram HMM of specs/hmm.em written as rules: the same blocks, tables and model, with the
# chain's dynamic program stated instead of built in. `emc fit specs/rules/chain.em DATA --init RUN`
# starts from a run of specs/hmm.em (same block names, same tables).
model rules_chain
observed x : tokens
structure tags(x, states=45)
  item  state(t in 0..n, k in 0..states)        # x[0:t] tagged, the last tag k (k = states: the start)
  item  done()                                  # the whole sentence tagged and stopped
  axiom state(0, states)
  part  step(t, j, k) : state(t, k) += state(t - 1, j) for k in 0..states-1
        where w = x[t - 1], to = k in 0..states labels x[t - 1] as k
  part  stop(k) : done() += state(n, k) for k in 0..states-1
        where to = states in 0..states, from = k in 0..states
  goal  done()
latent z : tags(x)
multinomial trans : P(z.step.to | z.j)             # z.j = states: the start symbol
multinomial emit  : P(z.w | z.step.k)
multinomial stop  : P(z.stop.to | z.from) shares trans   # the transition to the stop symbol
