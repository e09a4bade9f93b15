"""What samplescope measures of tokens, replies and runs once they are sampled: token
scores, a reply's score, surprising tokens, loops, where two runs fork, the divergence
of two models, the diversity of texts, a sweep's figures and their Pareto frontier."""
