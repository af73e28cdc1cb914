"""Why a caller could not be authenticated; surfaces map `code` onto 401 / 403 / 503."""

from __future__ import annotations

from cairn.domain.errors import CairnError

INVALID_TOKEN = "invalid_token"  # RFC 6750: bad signature, expired, wrong audience or issuer, malformed
FORBIDDEN = "forbidden"  # authenticated by AWS (SigV4) but mapped to no tenant by configuration
UNAVAILABLE = "auth_unavailable"  # the issuer's JWKS could not be fetched and no keys are cached


class AuthError(CairnError):
    """`reason` is safe to show the caller and to log: it never holds the token or a URL's secrets."""

    def __init__(self, reason: str, code: str = INVALID_TOKEN, *, authentic: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.code = code
        self.authentic = authentic
        """The credential was shown to be issued (a JWT whose signature holds: expired, say, or for
        another audience), so refusing it is no refused guess (auth/rate_limit.py FailedSignIns)."""

    def __repr__(self) -> str:
        return f"AuthError({self.reason!r}, code={self.code!r})"
