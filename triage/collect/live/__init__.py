"""Read a live cluster through the Kubernetes API, GET requests only.

Uses the official ``kubernetes`` client for configuration (kubeconfig,
``KUBECONFIG``, in-cluster service account), authentication and TLS, and its
ApiClient for the requests, asking for raw JSON so the snapshot keeps the
API's own shape. Objects get the structural redaction pass as they are read;
log and metrics text is redacted where it leaves the tool (report, bundle).
Lists are paged as kubectl pages them (``limit`` 500 and the ``continue``
token, one list per kind and namespace, never a read per pod), and each
page is filtered as it arrives: pods that are not triaged, events about
other pods and objects in namespaces with no triaged pod are dropped before
the next page is read, so memory follows the pods analysed, not the
cluster. Everything after the pod list runs concurrently in a bounded pool.
A read that fails is recorded and the scan goes on.

The modules:

- ``kubeconfig``: ``connect`` and the ``Connection``, contexts, a kubeconfig's problems
  in words, the proxy, an exec credential plugin bounded by --request-timeout (the only
  module here that imports the kubernetes client);
- ``processes``: stopping a credential plugin that hangs, with its children;
- ``errors``: ``ReadError`` and the words for TLS, network and HTTP failures;
- ``reader``: one bounded GET (``Reader``) and a list read page by page;
- ``collector``: ``LiveCollector``, every read of a scan in a bounded pool;
- ``transport`` (deadlines, bounded bodies), ``proxies`` (kubectl's proxy rules),
  ``podwatch`` (the pod watch of ``watch``).

This face re-exports the public names.
"""

from __future__ import annotations

from triage.collect.live.collector import EVENT_NAMESPACES_MAX, LiveCollector, Options
from triage.collect.live.errors import ReadError
from triage.collect.live.kubeconfig import Connection, cluster_access, connect, list_contexts
from triage.collect.live.reader import PAGE_SIZE, Reader

__all__ = [
    "EVENT_NAMESPACES_MAX",
    "PAGE_SIZE",
    "Connection",
    "LiveCollector",
    "Options",
    "ReadError",
    "Reader",
    "cluster_access",
    "connect",
    "list_contexts",
]
