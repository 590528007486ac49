"""Facts about the model that can be read before it is loaded: estimates from its name.

A manifest does not say how big the weights are or how long a context the
model has: vLLM logs both once it starts. What the name and the flags give
is an estimate, and the evidence says so. The parameter count is in most
hub names (``Qwen/Qwen3-8B``, ``meta-llama/Llama-3.1-70B-Instruct``,
``mistralai/Mixtral-8x7B-v0.1``), the bytes per parameter in ``--dtype``,
``--quantization`` or the name (``-AWQ``, ``-FP8``); the context length
models are published with comes from their ``config.json``
(``max_position_embeddings``), for the families listed below. What a pattern
does with the figure (a load time per GiB, a context limit) is the pattern's.
"""

from __future__ import annotations

from triage.facts import ContainerContext, Measured, Unmeasurable, fact
from triage.facts.engine import flag_at
from triage.results import Location
from triage.speed import lazyregex

_MOE = lazyregex.compile(r"(?i)(?:^|[-_/.])(\d+)x(\d+(?:\.\d+)?)b(?![a-z0-9])")
_SIZE = lazyregex.compile(r"(?i)(?:^|[-_/.])(\d+(?:\.\d+)?)([bm])(?![a-z0-9])")
_FOUR_BIT = lazyregex.compile(r"(?i)awq|gptq|int4|4bit|4-bit|w4a16|nf4|bnb")
_EIGHT_BIT = lazyregex.compile(r"(?i)fp8|int8|8bit|8-bit|w8a8|w8a16")
_QUANT_BYTES = {"awq": 0.5, "awq_marlin": 0.5, "gptq": 0.5, "gptq_marlin": 0.5,
                "bitsandbytes": 0.5, "marlin": 0.5, "fp8": 1.0, "fbgemm_fp8": 1.0,
                "int8": 1.0}

# Context lengths families are published with (config.json max_position_embeddings),
# most specific first. Sources: the models' config.json on the Hugging Face hub.
_CONTEXT: tuple[tuple[str, int], ...] = (
    (r"(?i)qwen3-[^/]*-2507", 262144),
    (r"(?i)qwen3", 40960),
    (r"(?i)qwen2\.5-[^/]*-1m", 1010000),
    (r"(?i)qwen2(?:\.5)?", 32768),
    (r"(?i)llama-?3\.[123]", 131072),
    (r"(?i)llama-?4", 1048576),
    (r"(?i)llama-?3(?![.\d])", 8192),
    (r"(?i)llama-?2", 4096),
    (r"(?i)deepseek-r1-distill", 131072),
    (r"(?i)mixtral", 32768),
    (r"(?i)mistral-7b", 32768),
    (r"(?i)gemma-3-1b", 32768),
    (r"(?i)gemma-3", 131072),
    (r"(?i)gemma-2", 8192),
    (r"(?i)phi-3[^/]*-128k|phi-3\.5|phi-4-mini", 131072),
    (r"(?i)phi-3[^/]*-4k", 4096),
    (r"(?i)phi-4", 16384),
    (r"(?i)gpt-oss", 131072),
)
_CONTEXT_RX = tuple((lazyregex.compile(rx), n) for rx, n in _CONTEXT)


def _model(ctx: ContainerContext) -> str:
    model = ctx.engine.model
    if not model:
        why = ctx.engine.unknown("model")
        if why:
            raise Unmeasurable(why)
    return str(model or "")


def _params_billions(name: str) -> float | None:
    base = name.rstrip("/").rsplit("/", 1)[-1]
    m = _MOE.search(base)
    if m:
        return float(m.group(1)) * float(m.group(2))
    sizes = [float(n) * (1.0 if unit.lower() == "b" else 0.001)
             for n, unit in _SIZE.findall(base)]
    return max(sizes) if sizes else None


def _bytes_per_param(ctx: ContainerContext, name: str) -> tuple[float, str]:
    quant = (ctx.engine.raw("quantization") or "").lower()
    if quant in _QUANT_BYTES:
        return _QUANT_BYTES[quant], f"--quantization {quant}"
    if _FOUR_BIT.search(name):
        return 0.5, "4-bit weights by the name"
    if _EIGHT_BIT.search(name):
        return 1.0, "8-bit weights by the name"
    dtype = (ctx.engine.value("dtype") or "auto").lower()
    if dtype in ("float32", "float"):
        return 4.0, f"--dtype {dtype}"
    return 2.0, f"bf16/fp16 (--dtype {dtype})"


@fact("model_weights_gib", unit="GiB", scope="container",
      doc="an estimate of the model's weights: the parameter count in its name (8B, 70B, "
          "8x7B) x bytes per parameter (--dtype, --quantization, AWQ/GPTQ/FP8 in the name); "
          "None when the name gives no size")
def model_weights_gib(ctx: ContainerContext) -> Measured:
    return estimate_weights_gib(ctx, _model(ctx), flag_at(ctx, "model"))


def estimate_weights_gib(ctx: ContainerContext, name: str, at: tuple[Location, ...]
                         ) -> Measured:
    """The weights of the model ``name`` names, estimated: parameters x bytes each."""
    params = _params_billions(name) if name else None
    if params is None:
        return Measured(None, f"container {ctx.name}: the model name {name or '(none)'} gives "
                              "no parameter count to estimate its weights from", at)
    per, why = _bytes_per_param(ctx, name)
    gib = params * 1e9 * per / 2**30
    return Measured(round(gib, 1), f"estimate from the model name {name}: {params:g}B "
                                   f"parameters x {per:g} byte(s) ({why}) = about {gib:.1f} GiB "
                                   "of weights", at)


@fact("model_context_estimate", unit="tokens", scope="container",
      doc="an estimate of the context length the model is published with (its config.json "
          "max_position_embeddings), by its family in the name; None for a family not known")
def model_context_estimate(ctx: ContainerContext) -> Measured:
    name = _model(ctx)
    at = flag_at(ctx, "model")
    for rx, tokens in _CONTEXT_RX:
        if name and rx.search(name):
            return Measured(tokens, f"estimate: {name} is of a family published with a "
                                    f"context of {tokens:,} tokens (config.json "
                                    "max_position_embeddings); vLLM logs the real one at "
                                    "start", at)
    return Measured(None, f"the context length of {name or 'the model'} is not known before "
                          "vLLM reads its config.json", at)
