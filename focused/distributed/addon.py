"""``FOCUSED_FRONTIER`` -> ``SCHEDULER``: the switch to the shared frontier, as a Scrapy add-on.

The project's ``settings.py`` lists :class:`FrontierAddon` in ``ADDONS``; Scrapy calls
its :meth:`~FrontierAddon.update_settings` when a crawler is set up (after ``-s``,
scrapyd's ``setting=`` and the spider's ``custom_settings`` are in), so
``-s FOCUSED_FRONTIER=redis`` works for ``scrapy crawl``, scrapyd jobs and
``CrawlerProcess`` alike. No import of redis-py here: the scheduler is named, not loaded.
"""

from __future__ import annotations

from typing import Any

from scrapy.utils.misc import load_object

from focused.defaults import get

__all__ = ["MEMORY_SCHEDULER", "REDIS_SCHEDULER", "FrontierAddon", "scheduler_for"]

MEMORY_SCHEDULER = "focused.scheduler.FocusedScheduler"
REDIS_SCHEDULER = "focused.distributed.scheduler.RedisScheduler"


def scheduler_for(settings: Any) -> str | None:
    """The ``SCHEDULER`` that ``FOCUSED_FRONTIER`` asks for, or ``None`` to leave it.

    Only the project's in-memory scheduler is replaced: a ``SCHEDULER`` of the user's own
    (Scrapy's, say) is kept as it is.
    """
    if str(get(settings, "FOCUSED_FRONTIER")).strip() != "redis":
        return None
    current = settings.get("SCHEDULER")
    if current != MEMORY_SCHEDULER and load_object(current) is not load_object(MEMORY_SCHEDULER):
        return None
    return REDIS_SCHEDULER


class FrontierAddon:
    """Sets ``SCHEDULER`` to :class:`~focused.distributed.scheduler.RedisScheduler` when
    ``FOCUSED_FRONTIER = "redis"`` (and ``SCHEDULER`` is the project's
    :class:`~focused.scheduler.FocusedScheduler`), at the priority of whichever of the
    two was set higher, so that ``-s FOCUSED_FRONTIER=redis`` beats ``settings.py``."""

    def update_settings(self, settings: Any) -> None:
        scheduler = scheduler_for(settings)
        if scheduler is None:
            return
        priority = max(
            settings.getpriority("FOCUSED_FRONTIER") or 0, settings.getpriority("SCHEDULER") or 0
        )
        settings.set("SCHEDULER", scheduler, priority=priority)
