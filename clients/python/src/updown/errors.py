"""Exceptions: one type per SPEC 7 code family, each carrying the error's
code, message, details, HTTP status and the request id (X-Request-Id)."""

from __future__ import annotations

from typing import Any, Dict, Optional


class UpdownError(Exception):
    """An error answer of the API (or a failure to reach it)."""

    def __init__(
        self,
        message: str,
        *,
        code: str = "",
        status: int = 0,
        details: Optional[Dict[str, Any]] = None,
        request_id: Optional[str] = None,
        retry_after: Optional[float] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status
        self.details: Dict[str, Any] = details or {}
        self.request_id = request_id
        # The answer's Retry-After in seconds, if it had one (a 429's, a
        # proxy's 503).
        self.retry_after = retry_after

    def __str__(self) -> str:
        s = f"{self.status} {self.code}: {self.message}" if self.code else self.message
        return f"{s} (request id {self.request_id})" if self.request_id else s


class ValidationError(UpdownError):
    """400: invalid parameters or body (VALIDATION_ERROR and the replay
    codes INVALID_SIDE, INVALID_FIELD, INVALID_OPERATOR, INVALID_ORDER_TYPE,
    MARKET_NOT_RESOLVED)."""


class AuthenticationError(UpdownError):
    """401 UNAUTHORIZED: a missing or invalid API key or bearer token."""


class PermissionDeniedError(UpdownError):
    """403: the plan does not include this (TIER_ACCESS_DENIED,
    TIER_REQUIRED, BACKTEST_AI_REQUIRED). details carries required_tier,
    current_tier and upgrade_url where the server gives them."""


class NotFoundError(UpdownError):
    """404: RESOURCE_NOT_FOUND, MARKET_NOT_FOUND, NO_DATA,
    NO_BACKTEST_MARKETS."""


class RateLimitError(UpdownError):
    """429: RATE_LIMIT_EXCEEDED or BACKTEST_AI_QUOTA_EXCEEDED, after the
    client's retries (or at once when Retry-After is longer than it waits).
    retry_after is the server's Retry-After in seconds, if any."""


class ServerError(UpdownError):
    """5xx: INTERNAL_ERROR, SERVICE_UNAVAILABLE, AI_STRATEGY_GENERATION_FAILED
    and other server-side failures, after the client's retries.
    retry_after is the answer's Retry-After in seconds, if any (a proxy's
    503, say)."""


class JobTimeoutError(ServerError):
    """A wait that ended before its work did, which goes on: a 504
    JOB_TIMEOUT whose job did not finish within the client's job_wait
    (job_id, to fetch later with Client.job()), or a sweep still running
    when Client.sweep()'s timeout passed (sweep_id, to wait on with
    Client.wait_sweep() or read with Client.get_sweep())."""

    @property
    def job_id(self) -> Optional[str]:
        return self.details.get("job_id")

    @property
    def sweep_id(self) -> Optional[str]:
        return self.details.get("sweep_id")


class ConnectionError(UpdownError):  # noqa: A001 - the package's own, by design
    """The server could not be reached (after the client's retries)."""


class SweepError(UpdownError):
    """A sweep without trials to give: one that ended FAILED or CANCELLED
    while Client.sweep() waited for it (message says why, sweep holds it),
    trials_frame() of a sweep not DONE, or listed by sweeps() without its
    results (Client.get_sweep() reads them), or the API's 409
    SWEEP_NOT_DONE for the trials of a sweep not DONE (sweep is None)."""

    def __init__(self, message: str, *, sweep: Any = None, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.sweep = sweep


class DataWindowWarning(UserWarning):
    """A list the plan's data window cut (DESIGN 4): the walk holds what the
    window allows, and the message, the API's own, says what it left out.
    A page's warning is its .warning; a walk (iter_markets, all_markets,
    series, iter_depth, iter_depth_parquet) warns with this once."""


_BY_CODE = {
    "VALIDATION_ERROR": ValidationError,
    "INVALID_SIDE": ValidationError,
    "INVALID_FIELD": ValidationError,
    "INVALID_OPERATOR": ValidationError,
    "INVALID_ORDER_TYPE": ValidationError,
    "MARKET_NOT_RESOLVED": ValidationError,
    "UNAUTHORIZED": AuthenticationError,
    "TIER_ACCESS_DENIED": PermissionDeniedError,
    "TIER_REQUIRED": PermissionDeniedError,
    "BACKTEST_AI_REQUIRED": PermissionDeniedError,
    "RESOURCE_NOT_FOUND": NotFoundError,
    "MARKET_NOT_FOUND": NotFoundError,
    "NO_DATA": NotFoundError,
    "NO_BACKTEST_MARKETS": NotFoundError,
    "RATE_LIMIT_EXCEEDED": RateLimitError,
    "BACKTEST_AI_QUOTA_EXCEEDED": RateLimitError,
    "JOB_TIMEOUT": JobTimeoutError,
    "SWEEP_NOT_DONE": SweepError,
}


def error_class(status: int, code: str) -> type:
    """The exception type of an answer: by its code, else by its status."""
    if code in _BY_CODE:
        return _BY_CODE[code]
    if status == 401:
        return AuthenticationError
    if status == 403:
        return PermissionDeniedError
    if status == 404:
        return NotFoundError
    if status == 429:
        return RateLimitError
    if status >= 500:
        return ServerError
    if status >= 400:
        return ValidationError
    return UpdownError
