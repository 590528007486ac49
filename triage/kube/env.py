"""A container's environment as the kubelet builds it: ``envFrom``, then ``env``.

The kubelet (``pkg/kubelet/kubelet_pods.go`` ``makeEnvironmentVariables``) takes
each ``envFrom`` source in order (a ConfigMap's or Secret's keys, with the
source's ``prefix``; a later source wins over an earlier one), then each
``env`` entry (a literal ``value``, expanded against the variables before it,
or ``valueFrom`` a ConfigMap key, a Secret key, a field or a resource), which
wins over ``envFrom``. A variable from a ConfigMap in the snapshot (the
manifests linted, or the ConfigMaps a scan read) has its value; one from a
Secret (never read), a field of the running pod, or a ConfigMap that was not
read has none, and says why.
"""

from __future__ import annotations

from dataclasses import dataclass

from triage.snapshot import Obj, Snapshot, meta
from triage.speed import lazyregex

# $(VAR) in a value or an argument (a $$ escapes it), as the kubelet expands them.
_REF = lazyregex.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


@dataclass(frozen=True)
class EnvVar:
    """One variable of the container's environment and where it comes from."""

    name: str
    value: str | None  # None: not known from what was read (see ``unknown``)
    # literal | configMap | secret | field | resource
    origin: str
    # How it is given, for evidence: 'env[2].value', 'envFrom[0] ConfigMap llm-env key
    # HF_HOME', 'env[1] valueFrom secretKeyRef hf-token/token'.
    described: str
    path: tuple[str | int, ...]  # the container field that gives it (("env", 2), ("envFrom", 0))
    source: Obj | None = None  # the ConfigMap it comes from, when it is in the snapshot
    key: str | None = None  # the ConfigMap's (or Secret's) key
    unknown: str | None = None  # why its value is not known; None when it is, or it is absent


def _config_map(snapshot: Snapshot, namespace: str, name: str) -> tuple[Obj | None, str | None]:
    """The ConfigMap, or why it is not known."""
    found = snapshot.find("configmaps", namespace, name)
    if found is not None:
        return found, None
    failed = snapshot.failure("configmaps", namespace, name)
    if failed is not None:
        return None, f"ConfigMap {name} could not be read ({failed.reason})"
    return None, f"ConfigMap {name} is not in what was read"


def _data(cm: Obj) -> dict[str, str]:
    data = cm.get("data")
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def expand(text: str, env: dict[str, EnvVar]) -> str:
    """``$(VAR)`` in ``text`` replaced by the variable's value where it is known, as the
    kubelet does (an unknown or undefined reference is left as written)."""
    def one(m: object) -> str:
        whole = m.group(0)  # type: ignore[attr-defined]
        if whole == "$$":
            return "$"
        var = env.get(m.group(1))  # type: ignore[attr-defined]
        return var.value if var is not None and var.value is not None else whole
    if "$" not in text:
        return text
    expanded: str = _REF.sub(one, text)
    return expanded


@dataclass(frozen=True)
class Environment:
    """A container's environment: its variables by name, and the ``envFrom`` sources whose
    keys are not known (a ConfigMap that was not read: any variable may come from it)."""

    vars: dict[str, EnvVar]
    opaque: tuple[EnvVar, ...] = ()

    def get(self, name: str) -> EnvVar | None:
        return self.vars.get(name)

    def unknown(self, name: str) -> str | None:
        """Why the variable's value is not known: it comes from what was not read, or it
        may (an unread ConfigMap's keys); None when its value, or its absence, is known."""
        var = self.vars.get(name)
        if var is not None:
            return var.unknown
        if self.opaque:
            return f"{name} may be set by {self.opaque[0].described}: {self.opaque[0].unknown}"
        return None

    def values(self) -> dict[str, str]:
        """The variables whose value is known."""
        return {k: v.value for k, v in self.vars.items() if v.value is not None}


def container_env(snapshot: Snapshot, pod: Obj, container: Obj) -> Environment:
    """The container's environment, in the order the kubelet sets it."""
    namespace = str(meta(pod).get("namespace") or "")
    out: dict[str, EnvVar] = {}
    opaque: list[EnvVar] = []
    for i, source in enumerate(container.get("envFrom") or []):
        if not isinstance(source, dict):
            continue
        prefix = str(source.get("prefix") or "")
        cm_ref = source.get("configMapRef")
        if not (isinstance(cm_ref, dict) and cm_ref.get("name")):
            continue  # a Secret's keys: credentials, never read (a credential is not a path)
        name = str(cm_ref["name"])
        cm, why = _config_map(snapshot, namespace, name)
        if cm is None:
            if not cm_ref.get("optional"):
                opaque.append(EnvVar(f"(the keys of ConfigMap {name})", None, "configMap",
                                     f"envFrom[{i}] ConfigMap {name}", ("envFrom", i),
                                     unknown=why))
            continue
        for key, value in _data(cm).items():
            out[prefix + key] = EnvVar(prefix + key, value, "configMap",
                                       f"envFrom[{i}] ConfigMap {name} key {key}",
                                       ("envFrom", i), cm, key)
    for i, entry in enumerate(container.get("env") or []):
        if not isinstance(entry, dict) or not entry.get("name"):
            continue
        name = str(entry["name"])
        ref = entry.get("valueFrom")
        if "value" in entry or not isinstance(ref, dict):
            written = entry.get("value")
            text = expand(str(written), out) if written is not None else ""
            out[name] = EnvVar(name, text, "literal", f"env[{i}].value", ("env", i))
            continue
        cm_key, secret_key = ref.get("configMapKeyRef"), ref.get("secretKeyRef")
        if isinstance(cm_key, dict):
            cm_name, key = str(cm_key.get("name") or ""), str(cm_key.get("key") or "")
            cm, why = _config_map(snapshot, namespace, cm_name)
            described = f"env[{i}] valueFrom configMapKeyRef {cm_name}/{key}"
            if cm is not None and key in _data(cm):
                out[name] = EnvVar(name, _data(cm)[key], "configMap", described, ("env", i),
                                   cm, key)
            else:
                out[name] = EnvVar(name, None, "configMap", described, ("env", i), cm, key,
                                   why or f"ConfigMap {cm_name} has no key {key}")
        elif isinstance(secret_key, dict):
            described = (f"env[{i}] valueFrom secretKeyRef {secret_key.get('name')}/"
                         f"{secret_key.get('key')}")
            out[name] = EnvVar(name, None, "secret", described, ("env", i),
                               key=str(secret_key.get("key") or ""),
                               unknown=f"Secret {secret_key.get('name')} is never read")
        else:
            what = "field" if "fieldRef" in ref else "resource"
            out[name] = EnvVar(name, None, what, f"env[{i}] valueFrom {what}Ref", ("env", i),
                               unknown=f"{name} is set from the running pod's {what}")
    return Environment(out, tuple(opaque))
