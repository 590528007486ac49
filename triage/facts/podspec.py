"""Facts the pod spec alone decides, so a manifest has them before anything runs: the
memory request, credentials written into the environment, the GPUs one engine gets, and
how long a pod's termination lets vLLM run after it is told to stop."""

from __future__ import annotations

from typing import Any

from triage.facts import ContainerContext, Measured, PodContext, Unmeasurable, fact
from triage.facts.engine import flag_at
from triage.facts.kubernetes import LWS_SIZE_LABEL
from triage.facts.sizing import quantity_bytes
from triage.kube import workload
from triage.kube.env import EnvVar
from triage.results import Location
from triage.safety.redact import is_secret_name
from triage.snapshot import meta
from triage.speed import lazyregex

# --- memory -----------------------------------------------------------------------


@fact("memory_request_bytes", unit="bytes", scope="container",
      doc="resources.requests.memory of the container in bytes (the limit when only a limit "
          "is written: the API server defaults the request to it); None without either")
def memory_request_bytes(ctx: ContainerContext) -> Measured:
    res = ctx.container.get("resources") or {}
    request = (res.get("requests") or {}).get("memory") if isinstance(res, dict) else None
    limit = workload.memory_limit(ctx.container)
    at = (ctx.field("resources", "requests", "memory"),)
    if request is None and limit is not None:
        number = quantity_bytes(limit)
        return Measured(number, f"container {ctx.name} writes no memory request: the API "
                                f"server defaults it to the limit {limit}", at)
    if request is None:
        return Measured(None, f"container {ctx.name} has no memory request and no memory "
                              "limit", at)
    number = quantity_bytes(request)
    if number is None:
        return Measured(None, f"memory request {request} is not a quantity", at)
    return Measured(number, f"container {ctx.name} resources.requests.memory {request}", at)


# --- credentials in the environment --------------------------------------------------


_PLACEHOLDER = lazyregex.compile(r"^\$(?:\{\w+\}|\w+)$")


def _literal_place(var: EnvVar, ctx: ContainerContext) -> tuple[str, Location] | None:
    """Where a variable's literal value is written, never the value: the env entry, or
    the ConfigMap key it comes from. None when it is no literal (a Secret, a field)."""
    if var.origin == "literal":
        # `$HF_TOKEN` / `${HF_TOKEN}` is replaced (envsubst) before the manifest is applied:
        # the object applied holds the token itself.
        note = ", a placeholder substituted before apply" if _PLACEHOLDER.match(
            var.value or "") else ""
        return f"{var.name} ({var.described}{note})", ctx.field(*var.path)
    if var.origin == "configMap" and var.source is not None and var.key is not None:
        name = meta(var.source).get("name")
        via = var.described.split(" ", 1)[0]  # envFrom[0] / env[2]
        return (f"{var.name} (ConfigMap {name} key {var.key}, via {via})",
                Location(var.source, ("data", var.key)))
    return None


@fact("literal_secret_env", unit="list", scope="container",
      doc="the container's environment variables whose names say they hold a credential "
          "(HF_TOKEN, HUGGING_FACE_HUB_TOKEN, *_API_KEY, ...: the names redaction masks) "
          "given as a literal value: env[].value, or a ConfigMap's key through envFrom or "
          "configMapKeyRef; each as its name and where it is written, never its value; "
          "None when there is none")
def literal_secret_env(ctx: ContainerContext) -> Measured:
    found: list[str] = []
    at: list[Location] = []
    for var in ctx.env.vars.values():
        if not is_secret_name(var.name) or not var.value:
            continue  # an empty literal holds no credential
        place = _literal_place(var, ctx)
        if place is not None:
            found.append(place[0])
            at.append(place[1])
    if found:
        return Measured(found, f"container {ctx.name} is given "
                               + ", ".join(found) + " as plain text, not from a Secret",
                        tuple(at))
    unknown = ctx.env.opaque
    if unknown:
        raise Unmeasurable(f"{unknown[0].described}: {unknown[0].unknown}, so the "
                           "variables it gives are not known")
    return Measured(None, f"container {ctx.name} has no credential-named variable with "
                          "a literal value", (ctx.field("env"),))


# --- the GPUs one engine gets ----------------------------------------------------------


@fact("parallel_ranks", unit="ranks", scope="container",
      doc="the GPUs (ranks) one vLLM engine needs: --tensor-parallel-size x "
          "--pipeline-parallel-size")
def parallel_ranks(ctx: ContainerContext) -> Measured:
    tp, pp = ctx.fact("tensor_parallel_size"), ctx.fact("pipeline_parallel_size")
    if not tp.known or not pp.known:
        raise Unmeasurable(str(tp.unknown or pp.unknown))
    ranks = int(tp.value or 1) * int(pp.value or 1)
    return Measured(ranks, f"TP {tp.value} x PP {pp.value} = {ranks} rank(s), one GPU each "
                           f"({tp.evidence}; {pp.evidence})", tp.at + pp.at)


@fact("engine_gpus", unit="GPUs", scope="container",
      doc="the GPUs one vLLM engine can use: the container's GPU request, times the "
          "LeaderWorkerSet group size on a LeaderWorkerSet pod; unknown on a Ray pod "
          "(--distributed-executor-backend ray, a KubeRay pod) whose other nodes are not "
          "known")
def engine_gpus(ctx: ContainerContext) -> Measured:
    gpus = workload.gpu_request(ctx.container)
    at = ctx.fact("gpu_request").at
    size = (meta(ctx.pod).get("labels") or {}).get(LWS_SIZE_LABEL)
    if size is not None and str(size).isdigit():
        total = gpus * int(size)
        return Measured(total, f"LeaderWorkerSet group of {size} pod(s) (label "
                               f"{LWS_SIZE_LABEL}) x {gpus} GPU(s) per pod = {total}", at)
    labels = meta(ctx.pod).get("labels") or {}
    if ctx.engine.raw("distributed-executor-backend") == "ray" or "ray.io/node-type" in labels:
        raise Unmeasurable(f"container {ctx.name} runs on a Ray cluster: the GPUs of its "
                           "other nodes are not in what was read")
    return Measured(gpus, f"container {ctx.name} requests {gpus} GPU(s), one pod", at)


# --- termination ---------------------------------------------------------------------

# Kubernetes' default spec.terminationGracePeriodSeconds (pkg/apis/core/v1 defaults).
_DEFAULT_GRACE = 30


@fact("termination_grace_seconds", unit="seconds", scope="pod",
      doc="spec.terminationGracePeriodSeconds (Kubernetes' default 30): how long the kubelet "
          "lets the preStop hook and then the process run after the pod is deleted before "
          "it kills the container")
def termination_grace_seconds(ctx: PodContext) -> Measured:
    written = workload.pod_spec(ctx.pod).get("terminationGracePeriodSeconds")
    at = (ctx.pod_field("spec", "terminationGracePeriodSeconds"),)
    if written is None:
        return Measured(_DEFAULT_GRACE, "spec.terminationGracePeriodSeconds unset: the "
                                        f"kubelet kills the containers {_DEFAULT_GRACE}s "
                                        "(Kubernetes' default) after the pod's deletion", at)
    if isinstance(written, bool) or not isinstance(written, int):
        raise Unmeasurable(f"spec.terminationGracePeriodSeconds {written!r} is not a number "
                           "of seconds")
    return Measured(written, f"spec.terminationGracePeriodSeconds {written}: the kubelet "
                             f"kills the containers {written}s after the pod's deletion", at)


# `sleep 15`, `/bin/sleep 15`, `sleep 15s` in an exec command or a shell line.
_SLEEP = lazyregex.compile(
    r"(?:^|[\s;&|(])(?:/usr)?(?:/bin/)?sleep\s+(\d+(?:\.\d+)?)s?(?=$|[\s;&|)])")


def _exec_sleep(command: Any) -> float | None:
    """The seconds an exec preStop sleeps, when it only sleeps (or sleeps in a shell
    line); None when it runs something whose duration is not known."""
    if not isinstance(command, list) or not command:
        return None
    words = [str(w) for w in command]
    if words[-1].strip() and len(words) >= 2 and words[0].endswith("sleep"):
        line = " ".join(words)
    elif len(words) >= 3 and words[0].endswith("sh") and words[1] == "-c":
        line = words[2]
    else:
        return None
    found = [float(m.group(1)) for m in _SLEEP.finditer(line)]
    return sum(found) if found else None


@fact("prestop_delay_seconds", unit="seconds", scope="container",
      doc="how long the container's preStop hook holds it before the kubelet sends SIGTERM: "
          "lifecycle.preStop.sleep.seconds, or an exec hook's `sleep N`; 0 without a preStop "
          "hook; unknown for a hook whose duration the spec does not say (httpGet, a script)")
def prestop_delay_seconds(ctx: ContainerContext) -> Measured:
    hook = (ctx.container.get("lifecycle") or {}).get("preStop")
    at = (ctx.field("lifecycle", "preStop"),)
    if not isinstance(hook, dict):
        return Measured(0, f"container {ctx.name} has no preStop hook: SIGTERM comes at "
                           "once", at)
    sleep = hook.get("sleep")
    if isinstance(sleep, dict) and isinstance(sleep.get("seconds"), int):
        return Measured(sleep["seconds"], f"container {ctx.name} lifecycle.preStop.sleep."
                                          f"seconds {sleep['seconds']}", at)
    command = (hook.get("exec") or {}).get("command") if isinstance(hook.get("exec"),
                                                                   dict) else None
    seconds = _exec_sleep(command)
    if seconds is not None:
        shown = int(seconds) if seconds == int(seconds) else seconds
        return Measured(shown, f"container {ctx.name} lifecycle.preStop.exec sleeps "
                               f"{shown}s ({' '.join(str(w) for w in command or [])[:120]})",
                        at)
    kind = next((k for k in ("exec", "httpGet", "tcpSocket") if k in hook), "a hook")
    raise Unmeasurable(f"container {ctx.name}'s preStop hook ({kind}) does not say how long "
                       "it takes")


@fact("shutdown_timeout_seconds", unit="seconds", scope="container",
      doc="--shutdown-timeout as set: how long vLLM (0.18.0 and later) lets in-flight "
          "requests finish after SIGTERM; None when unset (vLLM's default 0 aborts them at "
          "once, as every release before 0.18.0 does)")
def shutdown_timeout_seconds(ctx: ContainerContext) -> Measured:
    why = ctx.engine.unknown("shutdown-timeout")
    if why:
        raise Unmeasurable(why)
    at = flag_at(ctx, "shutdown-timeout")
    if not ctx.engine.is_set("shutdown-timeout"):
        return Measured(None, f"container {ctx.name}: --shutdown-timeout unset", at)
    seconds = ctx.engine.number("shutdown-timeout")
    if seconds is None:
        raise Unmeasurable(f"container {ctx.name}: "
                           f"{ctx.engine.describe('shutdown-timeout')} is not a number")
    return Measured(int(seconds) if seconds == int(seconds) else seconds,
                    f"container {ctx.name}: {ctx.engine.describe('shutdown-timeout')}", at)


@fact("shutdown_needs_seconds", unit="seconds", scope="container",
      doc="how long the pod's termination takes until vLLM has let its in-flight requests "
          "finish: prestop_delay_seconds plus shutdown_timeout_seconds (0 when unset)")
def shutdown_needs_seconds(ctx: ContainerContext) -> Measured:
    delay, drain = ctx.fact("prestop_delay_seconds"), ctx.fact("shutdown_timeout_seconds")
    if not delay.known or not drain.known:
        raise Unmeasurable(str(delay.unknown or drain.unknown))
    total = (delay.value or 0) + (drain.value or 0)
    drained = (f"--shutdown-timeout {drain.value}s" if drain.value is not None else
               "0s of drain (--shutdown-timeout unset: vLLM aborts in-flight requests at "
               "once on SIGTERM)")
    return Measured(total, f"preStop {delay.value or 0}s + {drained} = {total}s",
                    delay.at + drain.at)
