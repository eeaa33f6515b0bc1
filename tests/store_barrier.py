"""An item pipeline that makes crawls meet twice, so that a test can start them "at the
same instant" whatever the load of the machine (the operating system may otherwise run
one crawl to its end before the other has started).

``tests.store_barrier.StoreBarrierPipeline`` in ``ITEM_PIPELINES``, after the page store
(:class:`focused.pipelines.PageStorePipeline`); ``TEST_BARRIER_DIR`` names a folder the
crawls share and ``TEST_BARRIER_PARTIES`` how many crawls meet there. Each crawl waits:

1. when it is made (after the ``crawl`` command's checks, before any page store opens)
   until every crawl has got there: all of them passed the command's checks;
2. when its spider opens (right after its page store opened, or failed to open) until
   every crawl has got there: no crawl fetches a page, let alone ends and closes its
   store, before every other one has tried to open that store.

A crawl that does not get there within ``TEST_BARRIER_TIMEOUT`` seconds (default 120)
makes the waiting ones raise, so a test fails instead of hanging.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any


class BarrierTimeout(RuntimeError):
    pass


def meet(folder: Path, stage: str, parties: int, timeout: float) -> None:
    """Say that this process reached ``stage``, then wait until ``parties`` have."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{stage}.{os.getpid()}").touch()
    deadline = time.monotonic() + timeout
    while len(list(folder.glob(f"{stage}.*"))) < parties:
        if time.monotonic() > deadline:
            raise BarrierTimeout(f"only some of {parties} crawls reached {stage} in {timeout} s")
        time.sleep(0.02)


class StoreBarrierPipeline:
    def __init__(self, folder: Path, parties: int, timeout: float) -> None:
        self.folder = folder
        self.parties = parties
        self.timeout = timeout

    @classmethod
    def from_crawler(cls, crawler: Any) -> StoreBarrierPipeline:
        s = crawler.settings
        pipeline = cls(
            Path(s["TEST_BARRIER_DIR"]),
            s.getint("TEST_BARRIER_PARTIES", 2),
            s.getfloat("TEST_BARRIER_TIMEOUT", 120.0),
        )
        meet(pipeline.folder, "checked", pipeline.parties, pipeline.timeout)
        return pipeline

    def open_spider(self) -> None:
        # blocks the reactor on purpose: this crawl does nothing until the others opened
        meet(self.folder, "opened", self.parties, self.timeout)

    def process_item(self, item: Any) -> Any:
        return item
