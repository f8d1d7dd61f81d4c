# IBM Model 1 without NULL: every target word must come from a source word (compare with
# specs/ibm1.em on the Hansards: bench/new_models.py ibm1_nonull).
model ibm1_nonull
observed e : tokens, f : tokens
latent   a : alignment(f from e, null=no)
multinomial trans : P(a.target | a.source)
