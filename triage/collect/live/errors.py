"""A failed read (``ReadError``) and the words for why it failed: TLS causes, network
errors without library class names or errno numbers, an HTTP error answer's status and
message."""

from __future__ import annotations

import json
import socket
import ssl

import regex
import urllib3

from triage.logs import decode


class ReadError(Exception):
    """A read that failed; ``kind`` says how: status (an HTTP error answer),
    timeout, tls, network, protocol (an answer that is not what was asked
    for) or size (an answer over its cap)."""

    def __init__(self, status: int | None, reason: str, kind: str = "status") -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.kind = kind


def _one_line(text: str) -> str:
    return " ".join(text.split())[:400]


_TLS_CAUSES = (
    ("certificate has expired", "the API server's certificate has expired"),
    ("certificate is not yet valid", "the API server's certificate is not valid yet"),
    ("unable to get local issuer certificate",
     "the API server's certificate is signed by an unknown authority"),
    ("self-signed certificate", "the API server's certificate is signed by an unknown authority"),
    ("self signed certificate", "the API server's certificate is signed by an unknown authority"),
    ("unable to verify the first certificate",
     "the API server's certificate is signed by an unknown authority"),
    ("hostname mismatch", "the API server's certificate is not valid for this server's name"),
    ("ip address mismatch", "the API server's certificate is not valid for this server's address"),
    ("alert certificate expired", "the API server refused the client certificate: it has expired"),
    ("alert bad certificate", "the API server refused the client certificate"),
    ("alert unknown ca", "the API server refused the client certificate (unknown authority)"),
    ("certificate required", "the API server requires a client certificate and got none"),
    ("wrong version number", "the server does not speak TLS (an http:// address?)"),
)


def _tls_reason(exc: BaseException) -> str | None:
    """One line naming the TLS cause, or None when this was not a TLS failure."""
    chain: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and len(chain) < 6:
        chain.append(cur)
        reason = getattr(cur, "reason", None)
        cur = reason if isinstance(reason, BaseException) else (cur.__cause__ or cur.__context__)
    if not any(isinstance(e, (ssl.SSLError, urllib3.exceptions.SSLError)) for e in chain):
        return None
    text = " ".join(str(e) for e in chain).lower()
    for needle, cause in _TLS_CAUSES:
        if needle in text:
            return f"TLS: {cause}"
    verify = next((e for e in chain if isinstance(e, ssl.SSLCertVerificationError)), None)
    detail = verify.verify_message if verify is not None else _one_line(str(chain[-1]))
    return f"TLS: {_one_line(str(detail))[:200]}"


def _network_reason(exc: Exception, timeout: float | None = None) -> str:
    inner = getattr(exc, "reason", None) or exc
    text = _one_line(str(inner))
    if "timed out" in text.lower() or isinstance(inner, (TimeoutError, socket.timeout)):
        if timeout is not None:
            return f"timed out: no answer within --request-timeout {timeout:g}s"
        return f"timed out ({_plain(text)})"
    return _plain(text)


# urllib3 names its connection class and repr in front of the OS error:
# "DeadlineHTTPSConnection(host='127.0.0.1', port=1): Failed to establish a new
# connection: [Errno 111] Connection refused". People need the last part.
_LIBRARY_PREFIX = regex.compile(r"^(?:<?[A-Za-z_.]*(?:Connection|Pool)[A-Za-z]*(?:\([^)]*\)|"
                                r" object at 0x[0-9a-f]+>)?: )+")
_ERRNO = regex.compile(r"^(?:Failed to establish a new connection: )?\[Errno -?\d+\] ")


def _plain(text: str) -> str:
    """A network error in words: no library class names, no errno numbers."""
    out = _ERRNO.sub("", _LIBRARY_PREFIX.sub("", text))
    return (out[:1].lower() + out[1:]) if out else text


def _status_reason(status: int, body: bytes) -> str:
    names = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
             429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway",
             503: "Service Unavailable", 504: "Gateway Timeout"}
    message = ""
    try:
        data = json.loads(body)
        if isinstance(data, dict):
            message = str(data.get("message") or "")
    except (ValueError, RecursionError):
        message = decode(body[:300]).strip()
    label = f"{status} {names.get(status, '')}".strip()
    return f"{label}: {_one_line(message)}" if message else label
