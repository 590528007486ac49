"""vLLM's effective engine settings, read from a container the way vLLM reads them.

Handles ``vllm serve MODEL --flag value`` (also as args alone to the
``vllm/vllm-openai`` image, whose ENTRYPOINT is ``vllm serve``), ``--flag=value``,
``python -m vllm.entrypoints.openai.api_server --model MODEL``, a shell
wrapper (``sh -c "vllm serve ..."``), Kubernetes ``$(VAR)`` expansion in
args, the KServe Hugging Face runtime (``--model_id``, ``--backend=vllm``)
and a ``--config`` YAML file mounted from a ConfigMap.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

import regex
import yaml

from triage.kube.env import container_env
from triage.snapshot import Obj, Snapshot, meta
from triage.speed import lazyregex

# Flags that take no value; everything else takes the next token.
_BOOLEAN_FLAGS = {
    "enforce-eager", "trust-remote-code", "enable-prefix-caching", "no-enable-prefix-caching",
    "enable-chunked-prefill", "no-enable-chunked-prefill", "disable-log-requests",
    "disable-log-stats", "enable-lora", "enable-auto-tool-choice", "disable-custom-all-reduce",
    "enable-expert-parallel", "disable-frontend-multiprocessing", "enable-log-requests",
    "disable-fastapi-docs", "enable-prompt-tokens-details", "no-enable-log-requests",
    "disable-uvicorn-access-log", "enable-sleep-mode", "headless", "async-scheduling",
    "enable-server-load-tracking", "enable-force-include-usage",
}

# KServe huggingface runtime spellings -> vLLM's.
_ALIASES = {"model-id": "model", "model-dir": "model", "max-length": "max-model-len"}

# Defaults that matter for the checklist, with what vLLM does when unset.
DEFAULTS: dict[str, str] = {
    "gpu-memory-utilization": "0.9",
    "tensor-parallel-size": "1",
    "pipeline-parallel-size": "1",
    "dtype": "auto",
    "kv-cache-dtype": "auto",
    "max-lora-rank": "16",
}
UNSET_MEANING: dict[str, str] = {
    "max-model-len": "the model's full context length (from its config.json)",
    "max-num-batched-tokens": "vLLM's default for the version and usage context "
    "(V1 online serving: 2048-8192 with chunked prefill)",
    "max-num-seqs": "vLLM's default (256 in V0; 256-1024 in V1 depending on GPU)",
    "enforce-eager": "False (CUDA graphs captured)",
}

_VAR_REF = lazyregex.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


@dataclass
class EngineConfig:
    """vLLM's engine flags as the container sets them, and where."""

    model: str | None = None
    flags: dict[str, str] = field(default_factory=dict)
    # flag -> "args" | "command" | "config <file>": where it is written
    sources: dict[str, str] = field(default_factory=dict)
    config_file: str | None = None
    notes: list[str] = field(default_factory=list)
    # Why a --config file named on the command line could not be read: then
    # every flag not set on the command line is unknown, not vLLM's default.
    config_unread: str | None = None
    # The ConfigMap the --config file was read from, and its key.
    config_source: tuple[Obj, str] | None = None

    def raw(self, name: str) -> str | None:
        return self.flags.get(name)

    def value(self, name: str) -> str | None:
        """The flag as set, else vLLM's default where one is fixed."""
        return self.flags.get(name, DEFAULTS.get(name))

    def is_set(self, name: str) -> bool:
        return name in self.flags

    def unknown(self, name: str) -> str | None:
        """Why this flag's value cannot be known (an unread --config), or None."""
        return None if name in self.flags else self.config_unread

    def number(self, name: str) -> float | None:
        v = self.value(name)
        if v is None:
            return None
        try:
            return float(v.replace("_", ""))
        except ValueError:
            return _parse_size(v)

    def integer(self, name: str) -> int | None:
        n = self.number(name)
        # "nan" and "inf" parse as floats; no flag has such an integer value.
        return int(n) if n is not None and math.isfinite(n) else None

    def describe(self, name: str) -> str:
        if name in self.flags:
            where = self.sources.get(name, "args")
            return f"--{name}={self.flags[name]} (set in {where})"
        if name in DEFAULTS:
            return f"--{name} unset: vLLM default {DEFAULTS[name]}"
        meaning = UNSET_MEANING.get(name)
        return f"--{name} unset" + (f": vLLM uses {meaning}" if meaning else "")


def _parse_size(text: str) -> float | None:
    # vLLM accepts human sizes such as 32k or 1M for lengths and token counts.
    m = regex.fullmatch(r"(?i)\s*(\d+(?:\.\d+)?)\s*([kmg])\s*", text)
    if not m:
        return None
    scale = {"k": 1_000, "m": 1_000_000, "g": 1_000_000_000}[m.group(2).lower()]
    return float(m.group(1)) * scale


def _expand(token: str, env: dict[str, str]) -> str:
    expanded: str = _VAR_REF.sub(lambda m: env.get(m.group(1), m.group(0)), token)
    return expanded


def _tokens(container: Obj, env: dict[str, str]) -> list[tuple[str, str]]:
    """The command line's words, each with the field it is written in (command or args),
    ``$(VAR)`` expanded as the kubelet does and ``sh -c`` scripts split as the shell does."""
    out: list[tuple[str, str]] = []
    for part in ("command", "args"):
        for raw in container.get(part) or []:
            w = _expand(str(raw), env)
            if " " in w and ("vllm" in w or "--" in w):
                try:
                    out.extend((word, part) for word in shlex.split(w, comments=False))
                    continue
                except ValueError:
                    pass
            out.append((w, part))
    return out


def parse(container: Obj, snapshot: Snapshot | None = None, pod: Obj | None = None) -> EngineConfig:
    cfg = EngineConfig()
    if snapshot is not None and pod is not None:
        env = container_env(snapshot, pod, container).values()
    else:
        env = {str(e.get("name")): str(e.get("value")) for e in container.get("env") or []
               if isinstance(e, dict) and "value" in e}
    tokens = _tokens(container, env)
    positional: list[tuple[str, str]] = []
    i = 0
    while i < len(tokens):
        tok, part = tokens[i]
        if tok.startswith("--") and len(tok) > 2:
            name, eq, value = tok[2:].partition("=")
            name = _ALIASES.get(name.replace("_", "-"), name.replace("_", "-"))
            if not eq:
                nxt = tokens[i + 1][0] if i + 1 < len(tokens) else None
                if name in _BOOLEAN_FLAGS or nxt is None or nxt.startswith("--"):
                    value = "true"
                else:
                    value = nxt
                    i += 1
            cfg.flags[name] = value
            cfg.sources[name] = part
        elif tok.startswith("-") and len(tok) == 2 and i + 1 < len(tokens):
            # short forms: -tp 2 is "--tensor-parallel-size" in recent vLLM
            i += 1
        else:
            positional.append((tok, part))
        i += 1
    if "tp" in cfg.flags and "tensor-parallel-size" not in cfg.flags:
        cfg.flags["tensor-parallel-size"] = cfg.flags.pop("tp")
        cfg.sources["tensor-parallel-size"] = cfg.sources.pop("tp", "args")
    # `vllm serve MODEL`: the first positional after "serve" is the model.
    words = [w for w, _ in positional]
    if "serve" in words:
        rest = positional[words.index("serve") + 1 :]
        if rest:
            cfg.model, cfg.sources["model"] = rest[0]
    elif positional and _image_entrypoint_serves(container):
        # The vllm/vllm-openai image's own ENTRYPOINT is `vllm serve`: with no
        # command, args ["Qwen/Qwen3-8B", "--port", "8000"] serve that model.
        cfg.model, cfg.sources["model"] = positional[0]
    if cfg.flags.get("model"):
        cfg.model = cfg.flags["model"]
    if "config" in cfg.flags and snapshot is not None and pod is not None:
        _merge_config_file(cfg, cfg.flags["config"], container, snapshot, pod)
    return cfg


# Images whose ENTRYPOINT is `vllm serve` (docker/Dockerfile, vllm-openai target).
_SERVE_ENTRYPOINT_IMAGE = lazyregex.compile(r"(?i)(?:^|/)vllm-openai(?:[:@]|$)")


def _image_entrypoint_serves(container: Obj) -> bool:
    """The container runs the image's own ENTRYPOINT, and that is `vllm serve`."""
    if container.get("command"):
        return False
    return bool(_SERVE_ENTRYPOINT_IMAGE.search(str(container.get("image") or "")))


def _merge_config_file(
    cfg: EngineConfig, path: str, container: Obj, snapshot: Snapshot, pod: Obj
) -> None:
    """Read a --config YAML from the ConfigMap mounted at its directory."""
    cfg.config_file = path
    data, why, origin = _config_map_file(path, container, snapshot, pod)
    cfg.config_source = origin
    if data is None:
        cfg.config_unread = f"--config {path} was not read: {why}"
        cfg.notes.append(cfg.config_unread)
        return
    try:
        loaded: Any = yaml.safe_load(data)
    except yaml.YAMLError as exc:
        cfg.config_unread = f"--config {path} is not YAML ({exc.__class__.__name__})"
        cfg.notes.append(cfg.config_unread)
        return
    if not isinstance(loaded, dict):
        cfg.config_unread = f"--config {path} does not hold a mapping of settings"
        cfg.notes.append(cfg.config_unread)
        return
    for key, value in loaded.items():
        name = str(key).replace("_", "-")
        if name not in cfg.flags:  # command-line flags win over the file, as in vLLM
            cfg.flags[name] = str(value).lower() if isinstance(value, bool) else str(value)
            cfg.sources[name] = f"config {path}"
    if not cfg.model and cfg.flags.get("model"):
        cfg.model = cfg.flags["model"]


def _config_map_file(path: str, container: Obj, snapshot: Snapshot, pod: Obj
                     ) -> tuple[str | None, str, tuple[Obj, str] | None]:
    """The --config file's text from the ConfigMap mounted at its directory, or why not."""
    target = PurePosixPath(path)
    volumes = {v.get("name"): v for v in (pod.get("spec") or {}).get("volumes") or []
               if isinstance(v, dict)}
    ns = str(meta(pod).get("namespace", ""))
    for mount in container.get("volumeMounts") or []:
        mount_path = PurePosixPath(str(mount.get("mountPath", "")))
        vol = volumes.get(mount.get("name")) or {}
        cm_name = (vol.get("configMap") or {}).get("name")
        if not cm_name:
            continue
        sub = mount.get("subPath")
        if sub and target == mount_path:
            key = sub
        elif target.parent == mount_path:
            key = target.name
        else:
            continue
        cm = snapshot.find("configmaps", ns, str(cm_name))
        if cm is None:
            failed = snapshot.failure("configmaps", ns, str(cm_name))
            return None, (f"ConfigMap {cm_name} could not be read ({failed.reason})" if failed
                          else f"ConfigMap {cm_name} was not collected"), None
        value = (cm.get("data") or {}).get(key)
        if value is None:
            return None, f"ConfigMap {cm_name} has no key {key}", None
        return str(value), "", (cm, str(key))
    return None, "it is not in a ConfigMap mounted into the container", None
