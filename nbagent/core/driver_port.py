"""The driver's side of :class:`~nbagent.core.loop_port.LoopPort` that reaches into its parts (the
journal, the projections, the meter, the notices), kept here so the loop never does."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from nbagent.core.estimate import Estimate, context_window
from nbagent.core.projections import record_message
from nbagent.models.base import ModelRequest, model_provider

if TYPE_CHECKING:
    from nbagent.core.driver_state import DriverConfig
    from nbagent.core.estimate import Meter
    from nbagent.core.journal import Journal
    from nbagent.core.notices import NoticeName, Notices
    from nbagent.core.projections import Projections
    from nbagent.log.messages import UserMessage
    from nbagent.models.base import Model


class DriverPort:
    """The :class:`~nbagent.core.driver.Driver`'s loop-port members that delegate to its parts."""

    if TYPE_CHECKING:
        config: DriverConfig
        model: Model
        system: str | None
        journal: Journal
        projections: Projections
        meter: Meter
        notices: Notices

        @property
        def tool_schemas(self) -> tuple[Any, ...]: ...

    @property
    def next_step_pending(self) -> bool:
        return bool(self.journal.staged_inbox.next_step)

    def wants(self, kind: NoticeName) -> bool:
        return self.notices.wants(kind)

    def estimate(self, entered: Sequence[UserMessage]) -> Estimate:
        model = self.model
        provider = model_provider(model)
        name = getattr(model, "model", None) or model.name
        window = context_window(model, provider, self.config.window_lookup)

        def read(records: list[Any]) -> Estimate:
            staged = [m for r in records if (m := record_message(r)) is not None]
            return self.meter.estimate(
                provider=provider,
                model=name,
                history=self.projections.history_since,
                extra=[*staged, *entered],
                system=self.system,
                tools=self.tool_schemas,
                window=window,
            )

        estimate: Estimate = self.journal.with_uncommitted(read)
        return estimate

    def request(self, turn: int, step: int, attempt: int) -> ModelRequest:
        return ModelRequest(
            messages=self.projections.history(),
            tools=self.tool_schemas,
            system=self.system,
            turn=turn,
            step=step,
            attempt=attempt,
            log_length=self.journal.committed,
        )
