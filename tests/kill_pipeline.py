"""A page store that kills its own process (``kill -9``) right after its n-th commit,
before it tells the scheduler (``pages_stored``): the worst moment for a worker of a
shared frontier to die, a page durably stored whose "done" never reached Redis.

``tests.kill_pipeline.KillAfterCommitPipeline`` in ``ITEM_PIPELINES`` in place of
:class:`focused.pipelines.PageStorePipeline`; ``TEST_KILL_AFTER_COMMITS`` (n) says when.
"""

from __future__ import annotations

import os
import signal
from typing import Any

from focused.pipelines import PageStorePipeline


class KillAfterCommitPipeline(PageStorePipeline):
    kill_after = 0
    commits = 0

    @classmethod
    def from_crawler(cls, crawler: Any) -> KillAfterCommitPipeline:
        pipeline = super().from_crawler(crawler)
        assert isinstance(pipeline, KillAfterCommitPipeline)
        pipeline.kill_after = crawler.settings.getint("TEST_KILL_AFTER_COMMITS")
        return pipeline

    def _committed(self, urls: list[str]) -> None:
        self.commits += 1
        if self.kill_after and self.commits >= self.kill_after:
            os.kill(os.getpid(), signal.SIGKILL)
        super()._committed(urls)
