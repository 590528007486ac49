"""Rules: the pattern language, its loader, its evaluator and its whole-rule examples."""
