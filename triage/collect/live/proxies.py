"""Which proxy a request to the API server goes through, as kubectl (client-go) decides.

- The kubeconfig cluster's ``proxy-url`` wins: it is used for that cluster
  whatever ``NO_PROXY`` says (client-go sets ``http.ProxyURL`` for it).
- Otherwise Go's ``http.ProxyFromEnvironment``: ``HTTPS_PROXY`` for an https
  server, ``HTTP_PROXY`` for an http one (upper case first, then lower case),
  unless ``NO_PROXY`` matches the host; ``localhost`` and loopback addresses
  are never proxied (kind, minikube, k3d, an ssh tunnel).

``NO_PROXY`` as Go reads it: comma-separated entries, each an IP address, a
CIDR range, a domain name (matching itself and its subdomains; with a
leading dot, subdomains only), optionally with a port, or ``*`` for all.
"""

from __future__ import annotations

import ipaddress
import os
from urllib.parse import urlsplit


def _env(*names: str) -> str:
    return next((os.environ[n] for n in names if os.environ.get(n)), "")


def proxy_for(server: str, proxy_url: str | None) -> str | None:
    """The proxy for requests to ``server``; ``proxy_url``: the kubeconfig's."""
    if proxy_url:
        return proxy_url
    parts = urlsplit(server)
    host = (parts.hostname or "").lower()
    if not host or host == "localhost" or host.endswith(".localhost") or _loopback(host):
        return None
    env = _env("HTTPS_PROXY", "https_proxy") if parts.scheme == "https" else \
        _env("HTTP_PROXY", "http_proxy")
    if not env:
        return None
    port = parts.port or (443 if parts.scheme == "https" else 80)
    if no_proxy_matches(host, port, _env("NO_PROXY", "no_proxy")):
        return None
    return env if "://" in env else f"http://{env}"


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def no_proxy_matches(host: str, port: int, no_proxy: str) -> bool:
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        ip = None
    for raw in (e.strip().lower() for e in no_proxy.split(",")):
        if not raw:
            continue
        if raw == "*":
            return True
        if ip is not None:
            try:
                if ip in ipaddress.ip_network(raw, strict=False):
                    return True
            except ValueError:
                pass
        entry, want_port = raw, None
        if ":" in raw and not raw.startswith("[") and raw.count(":") == 1:
            entry, _, p = raw.partition(":")
            want_port = int(p) if p.isdigit() else None
        if want_port is not None and want_port != port:
            continue
        if ip is not None:
            try:
                if ip == ipaddress.ip_address(entry.strip("[]")):
                    return True
            except ValueError:
                pass
            continue
        if entry.startswith("."):
            if host.endswith(entry):
                return True
        elif host == entry or host.endswith("." + entry.lstrip("*.")):
            return True
    return False
