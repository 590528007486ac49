"""Progress bars in a log, as tqdm's default format draws them after a description:
``model-00012-of-00017.safetensors:  43%|████▎     | 2.13G/4.95G [00:56<01:05, 30.8MB/s]``.

The description says what progresses, and is a wording (``patterns/wordings.yaml``); what
follows it is tqdm's, the same for every bar: structure, read here.
"""

from __future__ import annotations

from triage.speed import lazyregex

# The percent, right after the description: ":  43%".
PERCENT = lazyregex.compile(r":\s+(\d+)%")
# The bar and the counts, right after the percent: "|████▎     | 2.13G/4.95G": the total and
# its unit (k, M, G, T).
SIZES = lazyregex.compile(r"\|[^|]*\|\s*[\d.]+[kMGT]?B?/([\d.]+)([kMGT]?)B?\b")
# The bar's drawing alone (block characters between bars).
DRAWING = lazyregex.compile(r"\|[\u2580-\u259f ]+\|")
