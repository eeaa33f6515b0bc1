"""The six link strategies (ALGORITHMS.md sections 2, 3, 4, 5) on hand-worked examples."""

from __future__ import annotations

import pytest
from w3lib.url import canonicalize_url

from focused.meta import PageFacts
from focused.ranking import mvalue
from focused.strategies import STRATEGIES, UnknownStrategy, build, strategy_class
from focused.strategies.base import Link, LinkScore, Parent, Strategy, StrategyParams
from focused.strategies.gao import url_levels

NAMES = ["annealing", "best_first", "bfs", "bsbs", "gao", "genetic"]


def parent(**fields: object) -> Parent:
    values: dict[str, object] = {
        "url": "http://h/p",
        "page_relevance": 2.5,
        "relevant": True,
        "body_relevance": 0.5,
        "m": 100.0,
        "hops": 0,
        "depth": 0,
        "link_count": 10,
    }
    values.update(fields)
    return Parent(**values)  # type: ignore[arg-type]


# --- registry ------------------------------------------------------------------------


def test_registry_has_the_six_strategies_with_matching_names() -> None:
    # the papers' six and the learning strategy
    assert set(NAMES) <= set(STRATEGIES)
    for name in STRATEGIES:
        strategy = build(name)
        assert strategy.name == name
        assert isinstance(strategy.seed(), LinkScore)


def test_build_unknown_name_lists_the_valid_ones() -> None:
    with pytest.raises(UnknownStrategy) as info:
        build("dfs")
    message = str(info.value)
    assert "dfs" in message
    assert "\n" not in message
    for name in STRATEGIES:
        assert name in message
    assert isinstance(info.value, ValueError)


def test_build_passes_parameters() -> None:
    assert build("bsbs", bsbs_depth=5).depth == 5
    g = build("genetic", m0=10.0, ratio=0.5, anchor_threshold=0.3, max_hops=7)
    assert (g.m0, g.ratio, g.anchor_threshold, g.max_hops) == (10.0, 0.5, 0.3, 7)
    assert build("annealing", widening=0.25).widening == 0.25
    assert build("best_first", title_weight=2.0).title_weight == 2.0


def test_only_annealing_asks_for_annealing_selection() -> None:
    assert [n for n in sorted(STRATEGIES) if build(n).anneal] == ["annealing"]
    assert [n for n in sorted(STRATEGIES) if strategy_class(n).anneal] == ["annealing"]


def test_only_learning_asks_for_link_evidence_and_page_terms() -> None:
    assert [n for n in sorted(STRATEGIES) if strategy_class(n).link_evidence] == ["learning"]
    assert [n for n in sorted(STRATEGIES) if strategy_class(n).learns] == ["learning"]


PLUGIN = "tests.strategy_plugin.TargetsFirstStrategy"


def test_a_dotted_path_names_a_strategy_outside_the_registry() -> None:
    cls = strategy_class(f"  {PLUGIN} ")
    assert cls.__name__ == "TargetsFirstStrategy" and issubclass(cls, Strategy)
    targets = frozenset({"http://h/wiki/T%26U.html"})
    s = cls.from_params(StrategyParams(targets=targets))
    assert s.targets == {canonicalize_url(t) for t in targets}  # type: ignore[attr-defined]
    top = parent(depth=3)
    assert s.score(top, Link("http://h/wiki/T%26U.html#x", 0.0)).priority == 1000  # canonical
    assert s.score(top, Link("http://h/wiki/B.html", 0.9)).priority == -4
    assert build(PLUGIN, targets=targets).seed() == LinkScore(priority=1_000_000, value=1.0)


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("tests.strategy_plugin.Missing", "has no 'Missing'"),
        ("tests.no_such_module.X", "cannot import 'tests.no_such_module'"),
        ("tests.strategy_plugin.NotAStrategy", "is not a focused.strategies.base.Strategy"),
        (".X", "cannot import"),
    ],
)
def test_a_bad_dotted_path_is_one_clear_line(name: str, said: str) -> None:
    with pytest.raises(UnknownStrategy) as info:
        strategy_class(name)
    assert said in str(info.value) and "\n" not in str(info.value)


def test_a_strategy_must_score() -> None:
    with pytest.raises(TypeError, match="must define score"):

        class Silent(Strategy):  # noqa: F841 - the class statement itself fails
            pass


def test_the_default_hooks() -> None:
    class Depth(Strategy):
        def score(self, parent: Parent, link: Link) -> LinkScore | None:
            return None if link.anchor_relevance < 0 else LinkScore(parent.depth, 0.5)

    s = Depth.from_params(StrategyParams())
    links = [Link("http://h/a", 0.5), Link("http://h/b", -1.0)]
    assert s.score_links(parent(depth=2), links) == [LinkScore(2, 0.5), None]
    assert s.seed() == LinkScore(priority=1_000_000, value=1.0)
    s.observe("http://h/a", PageFacts(page_relevance=3.0, relevant=True), {})  # no-op
    assert s.stats() == {}
    assert s.rescore([]) == ([], [])
    with pytest.raises(NotImplementedError):
        s.rescore([b"evidence"])
    assert not (s.anneal or s.link_evidence or s.learns or s.rescores)

    class Batch(Strategy):  # batch only: score() is one link of a batch
        def score_links(self, parent: Parent, links: object) -> list[LinkScore | None]:
            return [LinkScore(i, 0.1) for i, _ in enumerate(links)]  # type: ignore[arg-type]

    assert Batch().score(parent(), Link("http://h/a", 0.0)) == LinkScore(0, 0.1)


# --- bfs -----------------------------------------------------------------------------


def test_bfs_shallower_first_whatever_the_relevance() -> None:
    bfs = build("bfs")
    assert bfs.seed() == LinkScore(priority=0, value=1.0)
    # parent at depth 0 -> child depth 1: priority -1, value 1/(1+1)
    shallow = bfs.score(
        parent(depth=0, page_relevance=0.0, relevant=False), Link("http://h/a", 0.0)
    )
    # parent at depth 2 -> child depth 3: priority -3, value 1/(1+3)
    deep = bfs.score(parent(depth=2, page_relevance=5.0), Link("http://h/b", 1.0))
    assert shallow == LinkScore(priority=-1, value=0.5)
    assert deep == LinkScore(priority=-3, value=0.25)
    assert shallow.priority > deep.priority


# --- best_first ----------------------------------------------------------------------


def test_best_first_uses_parent_page_relevance_scaled() -> None:
    best = build("best_first")
    assert best.seed().priority == 1_000_000 and best.seed().value == 1.0
    # A = 2.5, title weight 4: value 2.5 / (4 + 1) = 0.5, priority 0.5 * 1e6
    score = best.score(parent(page_relevance=2.5), Link("http://h/a", 0.0))
    assert score == LinkScore(priority=500_000, value=pytest.approx(0.5))
    # The anchor does not matter: same parent, same score.
    assert best.score(parent(page_relevance=2.5), Link("http://h/b", 0.9)) == score
    # A = 1.0 -> 0.2: links of a better page come first
    low = best.score(parent(page_relevance=1.0, relevant=False), Link("http://h/c", 0.9))
    assert low.priority == 200_000
    assert score.priority > low.priority
    # title weight 2: 2.5 / 3
    assert build("best_first", title_weight=2.0).score(
        parent(page_relevance=2.5), Link("http://h/a", 0.0)
    ).value == pytest.approx(2.5 / 3)


# --- genetic -------------------------------------------------------------------------


def test_genetic_seed_gets_m0_and_top_relevance() -> None:
    seed = build("genetic").seed()
    assert seed.m == 100.0 and seed.hops == 0
    assert seed.priority == mvalue.priority(100.0, 1.0) == 100_000_999
    assert seed.value == pytest.approx(1.0)  # 0.9 * 100/100 + 0.1 * 1


def test_genetic_three_cases_of_the_m_rule() -> None:
    g = build("genetic")  # M0 100, b 0.8, f 0.2
    keep = g.score(parent(m=100.0), Link("http://h/a", 0.5))
    restore = g.score(parent(m=64.0, relevant=False), Link("http://h/b", 0.5))
    decay = g.score(parent(m=100.0), Link("http://h/c", 0.1))
    boundary = g.score(parent(m=100.0), Link("http://h/d", 0.2))
    assert (keep.m, keep.hops) == (100.0, 0)
    assert keep.priority == 100_000_499  # 100*1e6 + int(0.5*999)
    assert keep.value == pytest.approx(0.95)  # 0.9 * 1 + 0.1 * 0.5
    assert (restore.m, restore.hops) == (100.0, 0)
    assert decay.m == pytest.approx(80.0) and decay.hops == 1
    assert decay.value == pytest.approx(0.73)  # 0.9 * 0.8 + 0.1 * 0.1
    assert boundary.m == pytest.approx(80.0)  # r == f is irrelevant
    # m first: the decayed link loses to the kept one even with a high r elsewhere
    assert keep.priority > decay.priority


def test_genetic_orders_by_m_then_r() -> None:
    g = build("genetic")
    main_r0 = g.score(parent(m=100.0), Link("http://h/a", 0.21))  # m 100, r 0.21
    side_r1 = g.score(parent(m=100.0), Link("http://h/b", 0.2))  # m 80, r 0.2
    assert main_r0.priority > side_r1.priority
    hi = g.score(parent(m=100.0), Link("http://h/c", 0.9))
    lo = g.score(parent(m=100.0), Link("http://h/d", 0.3))
    assert hi.m == lo.m == 100.0 and hi.priority > lo.priority


def test_genetic_drops_links_past_max_hops() -> None:
    g = build("genetic", max_hops=4)
    m3 = 100.0 * 0.8**3  # 51.2, three irrelevant hops
    m4 = 100.0 * 0.8**4  # 40.96
    kept = g.score(parent(m=m3, relevant=False), Link("http://h/a", 0.0))  # -> 40.96, hops 4
    assert kept is not None and kept.hops == 4 and kept.m == pytest.approx(m4)
    assert g.score(parent(m=m4, relevant=False), Link("http://h/b", 0.0)) is None  # hops 5
    # a relevant anchor behind the same parent still restores M0
    assert g.score(parent(m=m4, relevant=False), Link("http://h/c", 0.5)).m == 100.0


# --- annealing (tunneling widens the scope on irrelevant pages) ----------------------


def test_annealing_widens_the_anchor_threshold_on_irrelevant_parents() -> None:
    ann = build("annealing", widening=0.5)  # f 0.2 -> 0.1 below the page threshold
    gen = build("genetic")
    weak = 0.15  # 0.1 < 0.15 <= 0.2
    irrelevant = parent(m=80.0, relevant=False, page_relevance=0.5)
    assert ann.score(irrelevant, Link("http://h/a", weak)).m == 100.0  # widened: restores M0
    assert gen.score(irrelevant, Link("http://h/a", weak)).m == pytest.approx(64.0)  # 80 * 0.8
    # on a relevant parent the threshold stays f = 0.2: 0.15 decays, 80 -> 64
    relevant = parent(m=80.0, relevant=True)
    assert ann.score(relevant, Link("http://h/a", weak)).m == pytest.approx(64.0)
    # boundary of the widened threshold: r == 0.1 is still irrelevant
    assert ann.score(irrelevant, Link("http://h/a", 0.1)).m == pytest.approx(64.0)
    assert ann.threshold_for(irrelevant) == pytest.approx(0.1)
    assert ann.threshold_for(relevant) == pytest.approx(0.2)


# --- bsbs ----------------------------------------------------------------------------


def test_bsbs_counts_hops_and_drops_past_depth() -> None:
    bsbs = build("bsbs", bsbs_depth=2)
    # relevant parent, A = 3.0: hops 0, value 3 / 5 = 0.6
    first = bsbs.score(parent(relevant=True, page_relevance=3.0, hops=0), Link("http://h/a", 0.0))
    assert first == LinkScore(priority=600_000, value=pytest.approx(0.6), hops=0)
    # irrelevant parent at hop 0, A = 1.0: hops 1, value (1/5) / (1+1) = 0.1
    one = bsbs.score(parent(relevant=False, page_relevance=1.0, hops=0), Link("http://h/b", 0.0))
    assert one == LinkScore(priority=100_000, value=pytest.approx(0.1), hops=1)
    # irrelevant parent at hop 1: hops 2 (= D, still kept), value (1/5) / 3 = 0.0666..7
    two = bsbs.score(parent(relevant=False, page_relevance=1.0, hops=1), Link("http://h/c", 0.0))
    assert two.hops == 2 and two.priority == 66_667
    # irrelevant parent at hop 2: hops 3 > D -> discarded
    assert (
        bsbs.score(parent(relevant=False, page_relevance=1.0, hops=2), Link("http://h/d", 0.9))
        is None
    )


def test_bsbs_relevant_page_in_a_tunnel_resets_the_hops() -> None:
    bsbs = build("bsbs", bsbs_depth=2)
    found = bsbs.score(parent(relevant=True, page_relevance=2.5, hops=2), Link("http://h/a", 0.0))
    assert found is not None and found.hops == 0
    assert found.value == pytest.approx(0.5)  # 2.5 / 5, no tunnel discount


def test_bsbs_depth_zero_is_plain_best_first() -> None:
    bsbs = build("bsbs", bsbs_depth=0)
    assert (
        bsbs.score(parent(relevant=False, page_relevance=1.9, hops=0), Link("http://h/a", 1))
        is None
    )
    assert bsbs.score(parent(relevant=True), Link("http://h/a", 0.0)) is not None


# --- gao -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "levels"),
    [
        ("http://h", 1),  # empty path: at least 1
        ("http://h/", 1),
        ("http://h/a.html", 1),
        ("http://h/a/b/c.html", 3),
        ("http://h/a/b/", 3),
        ("http://h/a?next=/x/y/z#/q/r", 1),  # query and fragment do not count
    ],
)
def test_gao_url_levels(url: str, levels: int) -> None:
    assert url_levels(url) == levels


def test_gao_weight_is_v_over_t_times_l() -> None:
    gao = build("gao")
    assert gao.seed() == LinkScore(priority=10**9, value=1.0)
    page = parent(relevant=True, body_relevance=0.6, link_count=3)
    # v 0.6, t 3, l 3: 0.6 / 9 = 0.0666..7 -> priority round(0.0666..7 * 1e9)
    deep = gao.score(page, Link("http://h/a/b/c.html", 0.0))
    assert deep.value == pytest.approx(0.6 / 9)
    assert deep.priority == 66_666_667
    # l 1: 0.6 / 3 = 0.2 -> shallower URL first
    top = gao.score(page, Link("http://h/c.html", 0.0))
    assert top.value == pytest.approx(0.2) and top.priority == 200_000_000
    assert top.priority > deep.priority
    # more links on the page -> each weighs less: t 6 -> 0.6 / 6 = 0.1
    assert gao.score(parent(body_relevance=0.6, link_count=6), Link("http://h/x", 0)).value == (
        pytest.approx(0.1)
    )
    # t 0 counts as 1 (no division by zero)
    assert gao.score(parent(body_relevance=0.6, link_count=0), Link("http://h/x", 0)).value == (
        pytest.approx(0.6)
    )


def test_gao_irrelevant_page_drops_its_links() -> None:
    gao = build("gao")
    page = parent(relevant=False, body_relevance=0.9, link_count=2)
    assert gao.score(page, Link("http://h/a", 1.0)) is None
