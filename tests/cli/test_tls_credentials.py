"""TLS and credential failures are exit 3 and one line naming the cause.

An unknown or missing certificate authority, an expired server or client
certificate, a failing exec credential plugin (its stderr never printed raw), and
insecure-skip-tls-verify warned about once.
"""

from __future__ import annotations

import base64
import stat
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.cli.test_bad_input import clean, one_line_error
from tests.conftest import FIXTURES, Run, run_cli
from tests.support.kubeapi import TOKEN, KubeAPIServer, TLSFiles, write_kubeconfig


def serve(tmp_path: Path, **kw: Any) -> KubeAPIServer:
    return KubeAPIServer(FIXTURES / "cuda-oom", request_log=tmp_path / "requests.log",
                         **kw).start()


def edit(kc: Path, cluster: dict[str, Any] | None = None,
         user: dict[str, Any] | None = None) -> Path:
    config = yaml.safe_load(kc.read_text())
    if cluster is not None:
        config["clusters"][0]["cluster"] = cluster
    if user is not None:
        config["users"][0]["user"] = user
    kc.write_text(yaml.safe_dump(config))
    return kc


def scan(kc: Path) -> Run:
    return run_cli("scan", "--kubeconfig", str(kc), "-o", "json", timeout=60)


def other_ca_pem() -> bytes:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "someone-else")])
    import datetime as dt

    now = dt.datetime.now(dt.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(hours=1))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.PEM)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_an_unknown_certificate_authority_is_exit_3(tmp_path: Path) -> None:
    server = serve(tmp_path)
    try:
        kc = write_kubeconfig(tmp_path / "kc", server.url)
        edit(kc, cluster={"server": server.url, "certificate-authority-data": b64(other_ca_pem())})
        run = scan(kc)
    finally:
        server.stop()
    clean(run, 3)
    one_line_error(run, "unknown authority", server.url)


def test_no_certificate_authority_at_all_is_exit_3_naming_it(tmp_path: Path) -> None:
    server = serve(tmp_path)
    try:
        kc = edit(write_kubeconfig(tmp_path / "kc", server.url), cluster={"server": server.url})
        run = scan(kc)
    finally:
        server.stop()
    clean(run, 3)
    one_line_error(run, "unknown authority")


def test_an_expired_server_certificate_is_exit_3_naming_it(tmp_path: Path) -> None:
    server = serve(tmp_path, expired_cert=True)
    try:
        run = scan(write_kubeconfig(tmp_path / "kc", server.url))
    finally:
        server.stop()
    clean(run, 3)
    one_line_error(run, "certificate has expired")


def test_an_expired_client_certificate_is_exit_3_naming_it(tmp_path: Path) -> None:
    server = serve(tmp_path, client_certs=True)
    cert, key = TLSFiles.get().issue("triage", server=False, expired=True)
    try:
        kc = edit(write_kubeconfig(tmp_path / "kc", server.url), user={
            "client-certificate-data": b64(cert), "client-key-data": b64(key)})
        run = scan(kc)
    finally:
        server.stop()
    clean(run, 3)
    line = one_line_error(run, "client certificate")
    assert "expired" in line


def test_valid_client_certificate_still_works(tmp_path: Path) -> None:
    server = serve(tmp_path, client_certs=True)
    cert, key = TLSFiles.get().issue("triage", server=False)
    try:
        kc = edit(write_kubeconfig(tmp_path / "kc", server.url), user={
            "client-certificate-data": b64(cert), "client-key-data": b64(key), "token": TOKEN})
        run = scan(kc)
    finally:
        server.stop()
    clean(run, 1)


def exec_plugin(tmp_path: Path, script: str) -> dict[str, Any]:
    plugin = tmp_path / "credential-plugin"
    plugin.write_text("#!/bin/sh\n" + script)
    plugin.chmod(plugin.stat().st_mode | stat.S_IEXEC)
    return {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1",
                     "command": str(plugin), "interactiveMode": "Never"}}


def test_an_exec_plugin_that_fails_is_exit_3(tmp_path: Path) -> None:
    server = serve(tmp_path)
    try:
        kc = edit(write_kubeconfig(tmp_path / "kc", server.url), user=exec_plugin(
            tmp_path, "echo 'token refresh failed: refresh_token=PlantedRefreshTok3n "
                      "invalid_grant' >&2\nexit 1\n"))
        run = scan(kc)
        requests = list(server.requests)
    finally:
        server.stop()
    clean(run, 3)
    line = one_line_error(run, "exec credential plugin", "failed")
    assert "401" not in line
    assert "PlantedRefreshTok3n" not in run.stderr + run.stdout
    assert not requests  # it never went on without credentials


def test_an_exec_plugin_that_works_gives_the_scan(tmp_path: Path) -> None:
    server = serve(tmp_path)
    answer = ('{"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential", '
              f'"status": {{"token": "{TOKEN}"}}}}')
    try:
        kc = edit(write_kubeconfig(tmp_path / "kc", server.url),
                  user=exec_plugin(tmp_path, f"echo '{answer}'\n"))
        run = scan(kc)
    finally:
        server.stop()
    clean(run, 1)
    assert run.stderr == ""


def test_insecure_skip_tls_verify_warns_once(tmp_path: Path) -> None:
    server = serve(tmp_path)
    try:
        kc = edit(write_kubeconfig(tmp_path / "kc", server.url),
                  cluster={"server": server.url, "insecure-skip-tls-verify": True})
        run = scan(kc)
    finally:
        server.stop()
    clean(run, 1)
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, run.stderr
    assert "not verified" in lines[0] and "insecure-skip-tls-verify" in lines[0]
