"""The garbage census of ``bench.garbage``: what it counts and the cycles it names."""

from __future__ import annotations

import gc

from bench.garbage import census, cycle_through, cycles


class Node:
    def __init__(self) -> None:
        self.other: object = None


NODE = f"{Node.__module__}.Node"


def test_cycle_through_names_the_edges_of_a_two_object_cycle() -> None:
    a, b = Node(), Node()
    a.other, b.other = b, a
    pool = {id(o): o for o in (a, b, a.__dict__, b.__dict__)}
    steps = cycle_through(a, pool)
    assert steps[0].endswith("Node")
    assert steps[-1].endswith(f"-> {NODE}")
    assert any("other" in s for s in steps[1:])
    assert len(steps) in (3, 5)  # a -> b -> a, or through each one's __dict__


def test_an_object_only_held_by_a_cycle_is_in_none() -> None:
    a, b = Node(), Node()
    a.other, b.other = b, a
    leaf = Node()
    a.leaf = leaf  # type: ignore[attr-defined]
    pool = {id(o): o for o in (a, b, leaf)}
    assert cycle_through(leaf, pool) == []


def test_census_counts_what_the_collector_found_unreachable() -> None:
    was = gc.get_debug()
    gc.collect()
    gc.garbage.clear()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for _ in range(5):
            a, b = Node(), Node()
            a.other, b.other = b, a
        del a, b
        gc.collect()
        found = census(gc.garbage)
        by_type = {name: count for name, count, _ in found["types"]}
        assert by_type[NODE] == 10
        named = cycles(gc.garbage)
        assert any(c for c in named[NODE])
    finally:
        gc.set_debug(was)
        gc.garbage.clear()
