"""The exceptions of the kbserve client.

Every failure the server answers with an HTTP status carries that status,
the server's one-line reason (the ``{"error": ...}`` body) and the parsed
body; a refusal that outlasted the client's retries (429 queue full, 503
draining or an infrastructure fault) is :class:`RetryExhausted`.
"""

from __future__ import annotations

from typing import Any, Optional


class KbserveError(Exception):
    """Any error of this package."""


class ServerError(KbserveError):
    """The server answered with an error status."""

    def __init__(self, status: int, message: str, body: Any = None, method: str = "", url: str = ""):
        self.status = status
        self.message = message
        self.body = body
        self.method = method
        self.url = url
        where = f" ({method} {url})" if method else ""
        super().__init__(f"kbserve {status}: {message}{where}")


class BadRequest(ServerError):
    """400: a malformed request."""


class Unauthorized(ServerError):
    """401/403: a missing or wrong bearer token."""


class NotFound(ServerError):
    """404: no such task, evaluation or session."""


class Conflict(ServerError):
    """409: an idempotency key reused with another request, or a session already done."""


class PayloadTooLarge(ServerError):
    """413: over the server's size limits."""


class Unprocessable(ServerError):
    """422: a value the server refuses (unknown device, reward scheme, file name...)."""


class RetryExhausted(ServerError):
    """429 or 503 still answered after the client's last retry."""

    def __init__(self, status: int, message: str, body: Any = None, method: str = "", url: str = "",
                 retry_after: Optional[float] = None, attempts: int = 0):
        super().__init__(status, message, body, method, url)
        self.retry_after = retry_after
        self.attempts = attempts


class WaitTimeout(KbserveError):
    """An evaluation did not finish within the time the caller allowed."""

    def __init__(self, evaluation: dict, timeout: float):
        self.evaluation = evaluation
        self.timeout = timeout
        super().__init__(f"evaluation {evaluation.get('id')} still {evaluation.get('state')} after {timeout:g} s")


class ServerExited(KbserveError):
    """A kbserve process started by this package ended or never said where it listens."""


_BY_STATUS = {400: BadRequest, 401: Unauthorized, 403: Unauthorized, 404: NotFound, 409: Conflict,
              413: PayloadTooLarge, 422: Unprocessable}


def error_for(status: int, message: str, body: Any, method: str, url: str) -> ServerError:
    return _BY_STATUS.get(status, ServerError)(status, message, body, method, url)
