"""HTTP/1.1 messages as bytes, for :mod:`~agentworld.providers.plain_http`: the request head it
sends and the response heads and framings it reads (RFC 9112), pure functions with no I/O.
Every reading fails closed: anything it cannot read with certainty is ``RemoteProtocolError``,
and a request header that could smuggle another is ``LocalProtocolError``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import httpx2

MAX_HEAD_BYTES = 64 * 1024
"""The longest status line plus headers (and the longest chunk-size line) a response may send."""
MAX_RESPONSE_BYTES = 64 * 1024 * 1024
"""The longest response body accepted: a model's answer is kilobytes; a server sending without
end would otherwise grow the process until it dies (the SDK keeps every byte it is given)."""

BodyFraming = Literal["none", "length", "chunked", "close"]
Headers = list[tuple[bytes, bytes]]
_NO_BODY_STATUSES = frozenset({204, 304})
_FORBIDDEN_IN_HEADERS = (b"\r", b"\n", b"\0")


@dataclass(frozen=True, slots=True)
class ResponseHead:
    status: int
    reason: bytes
    version: bytes
    headers: Headers


def request_head(request: httpx2.Request) -> bytes:
    target = request.url.raw_path or b"/"
    raw = request.headers.raw
    names = b"".join(name for name, _ in raw)
    written = b"".join(name + value for name, value in raw) + target
    if b":" in names or b" " in names + target or any(c in written for c in _FORBIDDEN_IN_HEADERS):
        bad = next(
            name
            for name, value in [*raw, (b"request target", target)]
            if b":" in name or b" " in name or any(c in name + value for c in _FORBIDDEN_IN_HEADERS)
        )
        raise httpx2.LocalProtocolError(
            f"refusing to send {bad[:40]!r}: it holds a line break, a NUL or a misplaced colon"
        )
    lines = [b"%s %s HTTP/1.1\r\n" % (request.method.encode("ascii"), target)]
    lines.extend(b"%s: %s\r\n" % (name, value) for name, value in raw)
    lines.append(b"\r\n")
    return b"".join(lines)


def parse_head(head: bytes) -> ResponseHead:
    """A response head, ``head`` ending in its blank line: status line, then header lines."""
    lines = head[:-4].split(b"\r\n")
    parts = lines[0].split(b" ", 2)
    bare_break = b"\n" in lines[0] or b"\r" in lines[0] or b"\0" in lines[0]
    if len(parts) < 2 or parts[0] not in (b"HTTP/1.1", b"HTTP/1.0") or bare_break:
        raise httpx2.RemoteProtocolError(f"malformed status line {lines[0][:80]!r}")
    if len(parts[1]) != 3 or not parts[1].isdigit() or parts[1] < b"100":
        raise httpx2.RemoteProtocolError(f"malformed status code {parts[1][:10]!r}")
    status = int(parts[1])
    headers = [_header_line(line) for line in lines[1:]]
    if status == 101:
        raise httpx2.RemoteProtocolError("the server switched protocols, which was not asked for")
    return ResponseHead(status, parts[2] if len(parts) == 3 else b"", parts[0], headers)


def _header_line(line: bytes) -> tuple[bytes, bytes]:
    name, colon, value = line.partition(b":")
    if not colon or not name or name != name.strip() or b" " in name or b"\t" in name:
        raise httpx2.RemoteProtocolError(f"malformed response header {line[:80]!r}")
    if b"\0" in value or b"\r" in value or b"\n" in value:
        raise httpx2.RemoteProtocolError(
            f"a NUL or a bare line break in response header {name[:40]!r}"
        )
    return name, value.strip(b" \t")


def header_values(headers: list[tuple[bytes, bytes]], name: bytes) -> list[bytes]:
    return [value for key, value in headers if key.lower() == name]


def has_token(headers: list[tuple[bytes, bytes]], name: bytes, token: bytes) -> bool:
    return any(
        part.strip().lower() == token
        for value in header_values(headers, name)
        for part in value.split(b",")
    )


def body_framing(
    method: str, status: int, headers: list[tuple[bytes, bytes]]
) -> tuple[BodyFraming, int]:
    """How the body is delimited (RFC 9112 §6.3), or ``RemoteProtocolError`` when unsure."""
    if method == "HEAD" or status in _NO_BODY_STATUSES:
        return "none", 0
    codings = [
        c.strip().lower()
        for v in header_values(headers, b"transfer-encoding")
        for c in v.split(b",")
    ]
    if codings:
        if codings != [b"chunked"]:
            raise httpx2.RemoteProtocolError(f"unsupported transfer coding {b', '.join(codings)!r}")
        return "chunked", 0
    lengths = {
        part.strip()
        for value in header_values(headers, b"content-length")
        for part in value.split(b",")
    }
    if not lengths:
        return "close", 0
    if len(lengths) > 1 or not all(v.isdigit() and len(v) < 19 for v in lengths):
        raise httpx2.RemoteProtocolError(
            f"conflicting or malformed content-length {sorted(lengths)!r}"
        )
    length = int(lengths.pop())
    if length > MAX_RESPONSE_BYTES:
        raise httpx2.RemoteProtocolError(
            f"the response is longer than {MAX_RESPONSE_BYTES // (1024 * 1024)} MiB ({length} bytes)"
        )
    return ("length", length) if length else ("none", 0)
