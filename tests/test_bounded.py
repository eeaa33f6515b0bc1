"""The bounded maps of focused/bounded.py against plain models of their rules, and the
bounds of the per-host and per-shape state that uses them."""

from __future__ import annotations

from collections import OrderedDict

from hypothesis import given, settings
from hypothesis import strategies as st

from focused.bounded import recent, remember
from focused.web.template import HostTemplates, Page
from focused.web.urlshape import ShapeStats

keys = st.lists(st.integers(min_value=0, max_value=12), max_size=200)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(keys, st.integers(min_value=1, max_value=6))
def test_remember_empties_a_full_cache_and_keeps_the_rest(seq: list[int], size: int) -> None:
    cache: dict[int, str] = {}
    model: dict[int, str] = {}
    for k in seq:
        if k in cache:
            continue
        if len(model) >= size:
            model = {}
        model[k] = str(k)
        assert remember(cache, k, str(k), size) == str(k)
        assert cache == model and len(cache) <= size


@settings(max_examples=300, deadline=None, derandomize=True)
@given(keys, st.integers(min_value=0, max_value=6))
def test_recent_drops_the_least_recently_used_first(seq: list[int], size: int) -> None:
    entries: OrderedDict[int, list[int]] = OrderedDict()
    order: list[int] = []  # the model: keys from least to most recently used
    for k in seq:
        got = recent(entries, k, list, size)
        got.append(k)
        if k in order:
            order.remove(k)
        order.append(k)
        del order[: max(0, len(order) - size)]
        assert list(entries) == order
    for k in entries:  # a kept entry holds every use since it was last made
        assert entries[k] and set(entries[k]) == {k}


def test_a_new_entry_over_a_size_of_zero_is_returned_and_not_kept() -> None:
    entries: OrderedDict[str, list[int]] = OrderedDict()
    got = recent(entries, "a", list, 0)
    assert got == [] and not entries


def test_shape_stats_forget_the_least_recently_seen_host_first() -> None:
    stats = ShapeStats(max_shapes=2)
    for host in ("a", "b", "a", "c"):  # b is the least recently seen when c comes
        stats.observe(f"http://{host}.test/x", waste=False)
    assert list(stats._hosts) == ["a.test", "c.test"]
    assert stats._hosts["a.test"] == [2, 2]


def test_host_templates_forget_the_least_recently_learnt_host_first() -> None:
    templates = HostTemplates(max_hosts=2)
    page = Page([], [])
    for host in ("a", "b", "a", "c"):
        templates.learn(host, page)
    assert list(templates._hosts) == ["a", "c"] and templates.hosts() == 2
