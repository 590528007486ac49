"""What keeps the tool quick to start and quick on big inputs: the files it keeps between
runs (``cache``) and regexes compiled when first used (``lazyregex``)."""
