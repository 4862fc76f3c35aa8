"""The built-in retry policy: the innermost default of the ``request_error`` waterfall (SPEC §5.5)."""

from __future__ import annotations

import random
from dataclasses import dataclass

RETRYABLE = frozenset({"RATE_LIMIT", "SERVER", "TIMEOUT", "TRANSPORT"})


@dataclass(frozen=True)
class RetryPolicy:
    """Retry transient failures at most ``max_retries`` times with capped exponential backoff.

    The n-th retry waits ``base_delay_ms * 2**(n-1)`` ±``jitter``, capped at ``cap_ms``; a
    provider's ``retry_after_ms`` within the cap replaces that delay.
    """

    max_retries: int = 2
    base_delay_ms: float = 500.0
    cap_ms: float = 10_000.0
    jitter: float = 0.1
    retryable: frozenset[str] = RETRYABLE

    def delay_ms(self, retry: int, retry_after_ms: int | None = None) -> int:
        """How long to wait before the ``retry``-th retry (1-based)."""
        if retry_after_ms is not None and 0 <= retry_after_ms <= self.cap_ms:
            return int(retry_after_ms)
        delay = self.base_delay_ms * 2 ** (retry - 1)
        delay *= 1 + random.uniform(-self.jitter, self.jitter)
        return int(min(delay, self.cap_ms))

    def should_retry(self, code: str, retry: int) -> bool:
        return code in self.retryable and retry <= self.max_retries
