"""A progress bar that is tqdm when available and asked for, else silent."""

from __future__ import annotations

from typing import Any, Optional


class _Silent:
    def update(self, n: int = 1) -> None:
        pass

    def set_postfix_str(self, s: str, refresh: bool = True) -> None:
        pass

    def close(self) -> None:
        pass


def progress_bar(total: int, enabled: bool, desc: Optional[str]) -> Any:
    """``tqdm(total=..., desc=...)`` when ``enabled`` and tqdm imports, else a no-op."""
    if not enabled:
        return _Silent()
    try:
        from tqdm.auto import tqdm
    except ImportError:  # tqdm is a dependency; a stripped install still works
        return _Silent()
    return tqdm(total=total, desc=desc, unit="req", dynamic_ncols=True)
