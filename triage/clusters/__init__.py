"""Several clusters in one scan (``--context A --context B``, ``--all-contexts``): each read
and analysed in parallel (``scan``), one report with a section per cluster (``report``)."""
