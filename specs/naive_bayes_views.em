# A naive Bayes mixture whose classes emit two views of every token: the lowercased word and the
# word's shape (capitals, digits, punctuation: Xxxx, dd.dd, x@x.x). Meant for raw tokens
# (--tokenize whitespace), where the shapes carry what lowercasing throws away. Compare with
# specs/naive_bayes.em on 20 Newsgroups: bench/new_models.py naive_bayes_views.
model naive_bayes_views
observed d : tokens
latent   c : label(d, classes=20)
multinomial prior : P(c)                 smooth add(0.01)
multinomial words : P(d.lower | c)       smooth add(0.01)
multinomial shape : P(d.shape | c)       smooth add(0.01)
