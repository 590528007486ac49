"""Facts about KServe's LLMInferenceService (``serving.kserve.io/v1alpha1``) that runs the
pod, and about the model download an init container does before vLLM starts.

An LLMInferenceService owns the Deployment of its main workload (``NAME-kserve``,
template ``spec.template``) and of its prefill workload (``NAME-kserve-prefill``,
``spec.prefill.template``); its status conditions say which layer is not ready:
``Ready`` = ``WorkloadsReady`` + ``RouterReady``, with ``MainWorkloadReady``,
``PrefillWorkloadReady``, ``SchedulerWorkloadReady``, ``ScalingReady`` (kserve
pkg/apis/serving/v1alpha1 llminferenceservice_lifecycle.go; kserve/website#683). A
false condition's message is evidence for the finding it explains.

KServe's storage-initializer (init container ``storage-initializer``, args ``hf://ORG/
REPO /mnt/models``) gets its credentials from the pod's ServiceAccount's Secrets (an
``HF_TOKEN`` key, pkg/credentials/hf), not from the main container's env: a token given
to vLLM only is not the initializer's (kserve/kserve#4400).
"""

from __future__ import annotations

from triage.facts import ContainerContext, Measured, PodContext, Unmeasurable, WorkloadContext, fact
from triage.facts.contexts import OfWorkload
from triage.facts.model import estimate_weights_gib
from triage.kube import workload
from triage.results import Location
from triage.snapshot import Obj, meta
from triage.speed import lazyregex

# The environment variables huggingface_hub reads a token from (huggingface_hub
# constants.py: HF_TOKEN; the older HUGGING_FACE_HUB_TOKEN; langchain's
# HUGGINGFACEHUB_API_TOKEN is not the hub client's).
HUB_TOKEN_VARS = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
# What a model-download init container fetches: KServe's storage-initializer's first
# argument (hf://ORG/REPO[:REVISION]), or `hf download` / `huggingface-cli download`'s repo.
_HF_URI = lazyregex.compile(r"^hf://([^:\s]+)")
_HF_CLI = lazyregex.compile(
    r"(?:^|[\s/])(?:hf|huggingface-cli)\s+download\s+(?:--\S+(?:[= ]\S+)?\s+)*"
    r"([A-Za-z0-9][\w.-]*/[\w.-]+)")


def llm_inference_service_of(ctx: OfWorkload) -> Obj | None:
    """The LLMInferenceService at the top of the pod's owners; Unmeasurable when the pod
    says it belongs to one and they could not be read."""
    chain = workload.owner_chain(ctx.snapshot, ctx.pod)
    top = chain[-1] if chain else None
    if top is not None and top.get("kind") == "LLMInferenceService":
        return top
    labels = meta(ctx.pod).get("labels") or {}
    # The last owner read names one as its controller, or the pod's labels say so.
    above = workload.controller_ref(top if top is not None else ctx.pod) or {}
    if above.get("kind") == "LLMInferenceService" \
            or labels.get("app.kubernetes.io/part-of") == "llminferenceservice":
        unread = ctx.unread("llminferenceservices")
        if unread:
            raise Unmeasurable(unread[0])
    return None


@fact("llm_inference_service", unit="text", scope="workload",
      doc="the name of the KServe LLMInferenceService that owns the workload (its Deployment's "
          "controller); None when none does")
def llm_inference_service(ctx: WorkloadContext) -> Measured:
    found = llm_inference_service_of(ctx)
    if found is None:
        return Measured(None, "no LLMInferenceService owns the workload")
    name = str(meta(found).get("name"))
    return Measured(name, f"LLMInferenceService {ctx.namespace}/{name} owns the workload "
                          f"({found.get('apiVersion') or 'serving.kserve.io/v1alpha1'})")


@fact("llm_inference_service_conditions", unit="list", scope="workload",
      doc="the status conditions of the LLMInferenceService that owns the workload, each "
          "'Type=Status Reason' (Ready, WorkloadsReady, MainWorkloadReady, RouterReady, "
          "ScalingReady, ...); the evidence quotes their messages; None without one")
def llm_inference_service_conditions(ctx: WorkloadContext) -> Measured:
    found = llm_inference_service_of(ctx)
    if found is None:
        return Measured(None, "no LLMInferenceService owns the workload")
    name = meta(found).get("name")
    items: list[str] = []
    texts: list[str] = []
    at: list[Location] = []
    for i, cond in enumerate((found.get("status") or {}).get("conditions") or []):
        if not isinstance(cond, dict):
            continue
        item = f"{cond.get('type')}={cond.get('status')} {cond.get('reason') or ''}".rstrip()
        items.append(item)
        texts.append(f"LLMInferenceService {name} {item}"
                     + (f": {cond['message']}" if cond.get("message") else ""))
        at.append(Location(found, ("status", "conditions", i)))
    if not items:
        return Measured([], f"LLMInferenceService {name} reports no condition yet")
    return Measured(items, "; ".join(texts), tuple(at))


# --- the model download of an init container ---------------------------------------------


def _token_env(container: Obj) -> list[str]:
    """Where a container gets a hub token: its env vars by name (with their Secret), and
    every envFrom Secret (its keys are not read: the tool never reads Secrets)."""
    out: list[str] = []
    for var in container.get("env") or []:
        if not isinstance(var, dict) or var.get("name") not in HUB_TOKEN_VARS:
            continue
        ref = ((var.get("valueFrom") or {}).get("secretKeyRef") or {})
        out.append(f"{var['name']} (Secret {ref.get('name')} key {ref.get('key')})" if ref
                   else f"{var['name']} (a value)")
    for source in container.get("envFrom") or []:
        if isinstance(source, dict) and (source.get("secretRef") or {}).get("name"):
            out.append(f"envFrom Secret {source['secretRef']['name']}")
    return out


@fact("hub_token_env", unit="list", scope="container",
      doc="where the container gets a Hugging Face token: HF_TOKEN / HUGGING_FACE_HUB_TOKEN "
          "in its env (with the Secret), and envFrom Secrets (whose keys are not read); [] "
          "when it gets none")
def hub_token_env(ctx: ContainerContext) -> Measured:
    found = _token_env(ctx.container)
    if not found:
        return Measured([], f"{ctx.label} sets no {' or '.join(HUB_TOKEN_VARS)} and takes no "
                            "envFrom Secret", (ctx.field("env"),))
    return Measured(found, f"{ctx.label} gets a hub token from " + ", ".join(found),
                    (ctx.field("env"),))


@fact("server_hub_token_env", unit="list", scope="pod",
      doc="hub_token_env of the pod's serving containers (not its init containers): the "
          "token vLLM is given, to compare with an init container's")
def server_hub_token_env(ctx: PodContext) -> Measured:
    found = [f"{c.get('name')}: {t}" for c in workload.containers(ctx.pod) for t in
             _token_env(c)]
    if not found:
        return Measured([], f"pod {ctx.pod_name}'s containers get no hub token")
    return Measured(found, f"pod {ctx.pod_name}'s containers get a hub token: "
                           + ", ".join(found))


@fact("download_model", unit="text", scope="container",
      doc="the hub model an init container downloads: KServe's storage-initializer's "
          "hf://ORG/REPO argument, or the repo of `hf download` / `huggingface-cli download`; "
          "None for a container that downloads no hub model that way")
def download_model(ctx: ContainerContext) -> Measured:
    words = workload.command_line(ctx.container)
    for word in words:
        m = _HF_URI.match(word)
        if m:
            return Measured(m.group(1), f"{ctx.label} downloads {word}",
                            (ctx.field("args"),))
    m = _HF_CLI.search(" ".join(words))
    if m:
        return Measured(m.group(1), f"{ctx.label} runs `{m.group(0).strip()}`",
                        (ctx.field("args"),))
    return Measured(None, f"{ctx.label} downloads no hub model by its command")


@fact("download_model_gib", unit="GiB", scope="container",
      doc="an estimate of the weights download_model fetches, by its name (parameters x "
          "bytes per parameter, as model_weights_gib); None when the name gives no size")
def download_model_gib(ctx: ContainerContext) -> Measured:
    model = ctx.fact("download_model")
    if model.unknown:
        raise Unmeasurable(model.unknown)
    if not model.value:
        return Measured(None, model.evidence)
    return estimate_weights_gib(ctx, str(model.value), model.at)


@fact("server_memory_limit", unit="text", scope="pod",
      doc="resources.limits.memory of the pod's serving containers (not its init "
          "containers), 'name=limit': what the model server is given, to compare with an "
          "init container's; None when none sets one")
def server_memory_limit(ctx: PodContext) -> Measured:
    found = [f"{c.get('name')}={workload.memory_limit(c)}" for c in workload.containers(ctx.pod)
             if workload.memory_limit(c)]
    if not found:
        return Measured(None, f"pod {ctx.pod_name}'s containers set no memory limit")
    return Measured(", ".join(found), f"pod {ctx.pod_name}'s containers' memory limits: "
                                      + ", ".join(found))
