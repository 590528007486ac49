"""What keeps the tool quick to start: regexes compiled when first used (``lazyregex``,
the one start-up measure kept, measured to save about 65 ms of a small ``analyze``), and
the directory where the log engine keeps its Hyperscan databases between runs (``cache``).
"""
