"""Which proxy a request goes through, as client-go picks it: NO_PROXY read as Go reads
it, a kubeconfig's proxy-url first, HTTPS_PROXY for https, none for loopback."""

from __future__ import annotations

import pytest

from triage.collect.live.proxies import no_proxy_matches, proxy_for


@pytest.mark.parametrize(("host", "port", "rule", "matches"), [
    ("api.corp.example", 443, "corp.example", True),
    ("api.corp.example", 443, ".corp.example", True),
    ("corp.example", 443, ".corp.example", False),
    ("10.1.2.3", 6443, "10.0.0.0/8", True),
    ("10.1.2.3", 6443, "10.1.2.3:443", False),
    ("10.1.2.3", 6443, "10.1.2.3:6443", True),
    ("api.other.example", 443, "corp.example", False),
    ("anything", 443, "*", True),
])
def test_no_proxy_as_go_reads_it(host: str, port: int, rule: str, matches: bool) -> None:
    assert no_proxy_matches(host, port, rule) is matches


def test_proxy_for_as_client_go(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY",
                 "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", "proxy.corp:3128")
    monkeypatch.setenv("NO_PROXY", ".internal")
    assert proxy_for("https://api.corp.example", None) == "http://proxy.corp:3128"
    assert proxy_for("https://localhost:6443", None) is None
    assert proxy_for("https://[::1]:6443", None) is None
    assert proxy_for("https://k8s.internal", None) is None
    assert proxy_for("http://api.corp.example", None) is None  # HTTP_PROXY is not set
    assert proxy_for("https://127.0.0.1", "http://jump:8080") == "http://jump:8080"
