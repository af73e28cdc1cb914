"""Refusals of a client registration, as RFC 7591 section 3.2.2 names them: each carries the error
code, the HTTP status and a description that is safe to show the registering client."""

from __future__ import annotations

from cairn.domain.errors import CairnError


class RegistrationRefused(CairnError):
    code = "invalid_client_metadata"
    status = 400
    retry_after_s: int | None = None


class InvalidRedirect(RegistrationRefused):
    code = "invalid_redirect_uri"


class InvalidMetadata(RegistrationRefused):
    code = "invalid_client_metadata"


class TooManyRegistrations(RegistrationRefused):
    """Past the per-address rate, or past the number of clients the server will hold."""

    code = "too_many_registrations"
    status = 429

    def __init__(self, message: str, *, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s
