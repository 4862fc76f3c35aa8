"""A comm target of this kernel that the front end opens comms on (the proposals' inserts, the
session tab's What if…): registered once, unregistered on close, each opened comm handed to
``_opened``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar


def comm_manager() -> Any:
    """This kernel's comm manager, or ``None`` (a plain shell)."""
    try:
        from IPython import get_ipython

        kernel = getattr(get_ipython(), "kernel", None)
        manager = getattr(kernel, "comm_manager", None)
        if manager is not None:
            return manager
        from comm import get_comm_manager

        return get_comm_manager() if kernel is not None else None
    except Exception:
        return None


class CommTarget:
    """Listens on :attr:`target`; a subclass answers each comm the front end opens in ``_opened``."""

    target: ClassVar[str]

    def __init__(self, manager: Any = None) -> None:
        self._manager = manager

    def listen(self) -> bool:
        """Register the comm target; ``False`` when this kernel has no comm manager (a plain shell)."""
        manager = self._manager or comm_manager()
        if manager is None:
            return False
        self._manager = manager
        manager.register_target(self.target, self._opened)
        return True

    def close(self) -> None:
        if self._manager is not None:
            try:
                self._manager.unregister_target(self.target, self._opened)
            except Exception:
                pass

    def _opened(self, comm: Any, msg: Mapping[str, Any]) -> None:
        raise NotImplementedError
