"""The driver's side of :class:`~nbagent.core.loop_port.LoopPort` that reaches into its parts (the
journal, the projections, the meter, the header state), kept here so the loop never does."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from nbagent.core.estimate import Estimate, context_window
from nbagent.core.projections import record_message
from nbagent.models.base import ModelRequest, model_provider

if TYPE_CHECKING:
    from nbagent.core.driver_state import DriverConfig
    from nbagent.core.estimate import Meter
    from nbagent.core.header_state import HeaderState
    from nbagent.core.journal import Journal
    from nbagent.core.offer import Offer
    from nbagent.core.projections import Projections
    from nbagent.log.events import RequestHeader
    from nbagent.log.messages import UserMessage


class DriverPort:
    """The :class:`~nbagent.core.driver.Driver`'s loop-port members that delegate to its parts."""

    if TYPE_CHECKING:
        config: DriverConfig
        offer: Offer
        journal: Journal
        projections: Projections
        meter: Meter
        header_state: HeaderState

    @property
    def next_step_pending(self) -> bool:
        return bool(self.journal.staged_inbox.next_step)

    def request(self, turn: int, step: int) -> StepRequest:
        return StepRequest(self, turn, step)


class StepRequest:
    """One step's request (:class:`~nbagent.core.loop_port.StepRequest`), read from its driver's
    offer, log and meter when each part is asked for."""

    __slots__ = ("_driver", "step", "turn")

    def __init__(self, driver: DriverPort, turn: int, step: int) -> None:
        self._driver = driver
        self.turn = turn
        self.step = step

    def estimate(self, entered: Sequence[UserMessage]) -> Estimate:
        driver = self._driver
        offer = driver.offer
        model = offer.model
        provider = model_provider(model)
        name = getattr(model, "model", None) or model.name
        window = context_window(model, provider, driver.config.window_lookup)

        def read(records: list[Any]) -> Estimate:
            staged = [m for r in records if (m := record_message(r)) is not None]
            return driver.meter.estimate(
                provider=provider,
                model=name,
                history=driver.projections.history_since,
                extra=[*staged, *entered],
                system=offer.system,
                tools=offer.tool_schemas,
                window=window,
            )

        estimate: Estimate = driver.journal.with_uncommitted(read)
        return estimate

    def header(self) -> RequestHeader | None:
        offer = self._driver.offer
        return self._driver.header_state.draft(offer.model.name, offer.system, offer.tool_schemas)

    def body(self, attempt: int) -> ModelRequest:
        driver = self._driver
        offer = driver.offer
        return ModelRequest(
            messages=driver.projections.history(),
            tools=offer.tool_schemas,
            system=offer.system,
            turn=self.turn,
            step=self.step,
            attempt=attempt,
            log_length=driver.journal.committed,
        )
