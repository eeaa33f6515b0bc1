"""An item pipeline that holds items and lets them go in threes
(``tests.holding_pipeline.HoldInThrees``): what a pipeline that writes in batches looks
like to the scheduler (its items leave only when a batch is full)."""

from __future__ import annotations

from typing import Any

from twisted.internet.defer import Deferred


class HoldInThrees:
    def __init__(self) -> None:
        self.held: list[tuple[Deferred[Any], Any]] = []

    def process_item(self, item: Any) -> Deferred[Any]:
        waiting: Deferred[Any] = Deferred()
        self.held.append((waiting, item))
        if len(self.held) == 3:
            held, self.held = self.held, []
            for each, kept in held:
                each.callback(kept)
        return waiting
