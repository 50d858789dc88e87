"""Who may open a dashboard: one bound off loopback needs a token on every request.

``seedsweep dashboard --host`` beyond this machine refuses to start without a
token (:mod:`seedsweep.cli`); with one, :func:`require_token` checks it before
Dash sees a request.
"""

from __future__ import annotations

__all__ = ["TOKEN_COOKIE", "is_loopback", "require_token"]

TOKEN_COOKIE = "seedsweep_dashboard_token"


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the dashboard on this machine.

    >>> [is_loopback(h) for h in ("127.0.0.1", "localhost", "::1", "127.0.1.1", "0.0.0.0", "10.0.0.5", "::")]
    [True, True, True, True, False, False, False]
    """
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False                    # a host name: whatever it resolves to, treat it as the network


def require_token(server, token: str) -> None:
    """Refuse every request to ``server`` (the Flask app under Dash) that does
    not carry ``token``: in the query (``?token=``, the URL the dashboard
    prints; answered with a redirect that sets a cookie and drops the token
    from the address bar), in that cookie, or as ``Authorization: Bearer``.
    Compared in constant time."""
    import hmac

    from flask import redirect, request

    expected = token.encode()

    def carried() -> str:
        header = request.headers.get("Authorization", "")
        bearer = header[7:] if header.startswith("Bearer ") else ""
        return request.args.get("token") or request.cookies.get(TOKEN_COOKIE) or bearer

    @server.before_request
    def _check():
        given = carried()
        if not given or not hmac.compare_digest(given.encode(), expected):
            return ("seedsweep dashboard: this page needs the dashboard's token. Open the address the "
                    "'seedsweep dashboard' command printed (it ends in ?token=...).\n", 401,
                    {"Content-Type": "text/plain; charset=utf-8", "WWW-Authenticate": "Bearer"})
        if request.args.get("token"):          # first visit: keep it in a cookie, out of the address bar
            response = redirect(request.path, code=303)
            response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="Strict")
            return response
        return None
