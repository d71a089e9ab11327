"""Errors that become HTTP 4xx responses (or failed futures) with a message the SDK shows."""

from __future__ import annotations


class UserError(Exception):
    """A request mint-local cannot serve as sent. `status` is the HTTP code it maps to.

    Never 409 or 5xx for these: tinker 0.22.0 retries 408/409/429/5xx for minutes, so a bad
    request must come back as 400/404 to reach the user at once.
    """

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


class NotFound(UserError):
    def __init__(self, message: str) -> None:
        super().__init__(message, status=404)
