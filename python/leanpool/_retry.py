"""Back-off for ``OVERLOADED`` answers (the request never started)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Backoff:
    """Exponential back-off: ``initial * factor**attempt`` seconds, capped.

    ``max_retries`` bounds how often one request is resent (then its
    :class:`~leanpool.errors.Overloaded` is its answer); the defaults give
    up after about a minute of a full queue.
    """

    initial: float = 0.05
    factor: float = 2.0
    max_delay: float = 2.0
    max_retries: int = 40

    def delay(self, attempt: int) -> float:
        """Seconds to wait before resend number ``attempt + 1``."""
        return min(self.max_delay, self.initial * self.factor ** attempt)
