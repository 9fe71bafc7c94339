"""`anima mcp --http`: the same server over the MCP Streamable HTTP transport, for hosts that
connect to a URL instead of starting a process.

Everything MCP is the official SDK's: its Streamable HTTP session manager and ASGI app
(`Server.streamable_http_app`), its bearer-token middleware (a `TokenVerifier` that knows one
token), its Host/Origin checks against DNS rebinding; uvicorn, which the SDK depends on, serves
it. anima adds only what a local tool needs: the socket is bound here, before anything else
starts, so that a port in use is one line and a documented status rather than a log record,
and a non-loopback address is refused unless asked for.
"""

import errno
import hmac
import ipaddress
import logging
import signal
import socket

from anima.infra.errors import UNAVAILABLE, AnimaError, Busy, UsageError

PATH = "/mcp"
# Once SIGTERM or ^C arrives, the request being answered is finished (a tool call runs to its
# end without yielding), then open streams get this long before they are cut.
GRACE_SECONDS = 3


def parse_address(text: str) -> tuple[str, int]:
    """`HOST:PORT` (`[::1]:PORT` for IPv6) as (host, port); port 0 means any free port."""
    host, sep, port = text.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise UsageError(f"mcp: --http {text!r}: give HOST:PORT, e.g. 127.0.0.1:8765 ([::1]:8765 for IPv6)")
    return host, int(port)


def listen(host: str, port: int, allow_remote: bool) -> socket.socket:
    """A listening socket on host:port; loopback only unless allow_remote."""
    shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        raise UsageError(f"mcp: --http {shown}: {e.strerror}") from None
    # a name with both (localhost): IPv4, the address clients given the name try first
    family, kind, proto, _, address = min(found, key=lambda f: f[0] != socket.AF_INET)
    if not allow_remote and not ipaddress.ip_address(address[0].split("%")[0]).is_loopback:
        raise UsageError(f"mcp: --http {shown} is not a loopback address: whoever can reach it and holds "
                         f"the token could act as her; give --allow-remote to listen there anyway")
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a restart need not wait out TIME_WAIT
        sock.bind(address)
        sock.listen(128)
    except OSError as e:
        sock.close()
        if e.errno == errno.EADDRINUSE:
            raise Busy(f"mcp: --http {shown}: address already in use (another server listens there; "
                       f"give another port, or port 0 for any free one)") from None
        raise AnimaError(f"mcp: --http {shown}: {e.strerror}", UNAVAILABLE) from None
    return sock


def url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}{PATH}" if ":" in host else f"http://{host}:{port}{PATH}"


class OneToken:
    """The SDK's TokenVerifier protocol for a single shared secret."""

    def __init__(self, token: str):
        self.token = token.encode()

    async def verify_token(self, token: str):
        from mcp.server.auth.provider import AccessToken

        if hmac.compare_digest(token.encode(), self.token):  # no timing hint of how much matched
            return AccessToken(token=token, client_id="anima-mcp", scopes=[])
        return None


def app(home, cwd: str, warn, sock: socket.socket, token: str, remote: bool):
    """The SDK's Streamable HTTP app for anima's server, behind the bearer token."""
    from mcp.server.auth.settings import AuthSettings
    from mcp.server.transport_security import TransportSecuritySettings

    from anima.host import mcp

    host = sock.getsockname()[0]
    named = f"[{host}]" if ":" in host else host
    if remote:  # any name may reach it; the token is the guard
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    else:  # a web page's script cannot reach a loopback server under another name (DNS rebinding)
        hosts = sorted({"127.0.0.1", "localhost", "[::1]", named})
        security = TransportSecuritySettings(allowed_hosts=[f"{h}:*" for h in hosts],
                                             allowed_origins=[f"http://{h}:*" for h in hosts])
    # AuthSettings wants an issuer, but with no resource_server_url and no provider the SDK adds
    # no OAuth route and advertises none: the token is checked, nothing else
    auth = AuthSettings(issuer_url=url(sock).removesuffix(PATH), resource_server_url=None)
    return mcp.build_server(home, cwd, warn).streamable_http_app(
        streamable_http_path=PATH, transport_security=security, auth=auth, token_verifier=OneToken(token))


def serve(home, cwd: str, warn, sock: socket.socket, token: str, remote: bool) -> None:
    """Answer MCP clients on sock until SIGTERM or SIGINT, then return (status 0)."""
    import uvicorn

    config = uvicorn.Config(app(home, cwd, warn, sock, token, remote), lifespan="on", access_log=False,
                            log_level="warning", timeout_graceful_shutdown=GRACE_SECONDS)
    # uvicorn stops on SIGTERM/SIGINT and then raises the signal again for the handler found
    # before it: a quiet one here, so that a stop asked for is an ending, not a death by signal
    quiet = {sig: signal.signal(sig, lambda *_: None) for sig in (signal.SIGTERM, signal.SIGINT)}
    server = uvicorn.Server(config)
    # a client's open event stream, cut when the grace ends, is how a stop goes, not an error
    cut = logging.getLogger("uvicorn.error")
    stop_noise = _StopNoise(server)
    cut.addFilter(stop_noise)
    try:
        warn(f"mcp: serving {url(sock)} (each request needs Authorization: Bearer TOKEN)")
        server.run(sockets=[sock])
    finally:
        cut.removeFilter(stop_noise)
        for sig, handler in quiet.items():
            signal.signal(sig, handler)
        sock.close()


class _StopNoise(logging.Filter):
    def __init__(self, server):
        super().__init__()
        self.server = server

    def filter(self, record) -> bool:
        return not (self.server.should_exit and
                    record.getMessage().startswith("ASGI callable returned without completing response"))
