# Naive Bayes mixture of multinomials: document clustering, and semi-supervised classification
# with labeled + unlabeled documents (Nigam, McCallum, Thrun & Mitchell 2000). Add-0.01 smoothing.
model naive_bayes
observed d : tokens                           # a document, word order ignored
latent   c : label(d, classes=20)             # one class per document
multinomial prior : P(c)      smooth add(0.01)
multinomial emit  : P(d | c)  smooth add(0.01)  # once per token of d
