"""An item pipeline that makes one of the crawl's drawing children slow
(``tests.slow_child.SlowChildPipeline``): the child of ``TEST_SLOW_CHILD`` (``curve`` or
``report``) starts the atomic write of its file, writes its pid to
``TEST_CHILD_PIDFILE``, then sleeps 60 s: a child still drawing when a second Ctrl-C
comes. It passes items on unchanged."""

from __future__ import annotations

from typing import Any

import focused.extensions
import focused.pipelines

# the child's target file: argv[1] is the report's folder, argv[3] the curve's PNG
_TARGETS = {
    "report": "os.path.join(sys.argv[1], 'report.html')",
    "curve": "sys.argv[3]",
}
_SLOW = """
import os, sys, time
from focused.output.atomic import write_with

def slow(tmp):
    with open(tmp, 'w') as fh:
        fh.write('half a file')
    with open({pidfile!r} + '.part', 'w') as fh:
        fh.write(str(os.getpid()))
    os.replace({pidfile!r} + '.part', {pidfile!r})
    time.sleep(60)

write_with({target}, slow)
"""


class SlowChildPipeline:
    @classmethod
    def from_crawler(cls, crawler: Any) -> SlowChildPipeline:
        which = crawler.settings.get("TEST_SLOW_CHILD")
        code = _SLOW.format(
            pidfile=crawler.settings.get("TEST_CHILD_PIDFILE"), target=_TARGETS[which]
        )
        if which == "report":
            focused.extensions._REPORT_CODE = code
        else:
            focused.pipelines._PLOT_CODE = code
        return cls()

    def process_item(self, item: Any) -> Any:
        return item
