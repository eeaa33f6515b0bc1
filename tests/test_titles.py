"""A page's title is scored without its site's name (focused.web.titles).

"Acid - Lab Notes" is the page "Acid" on the site "Lab Notes": scored whole, the site's
words dilute the title's cosine with the topic, so an article scores lower on a real
site than the same article on a clean one.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from focused.ranking.relevance import TopicVector
from focused.web.titles import SiteTitles
from focused.web.topics import load_topic
from tests.crawling import crawl_one_host
from tests.loopback import Answer


def test_a_part_that_ends_two_earlier_titles_of_the_host_is_the_sites_name() -> None:
    titles = SiteTitles(2)
    assert titles.own("127.0.0.2:80", "Acid - Lab Notes") == "Acid - Lab Notes"
    assert titles.own("127.0.0.2:80", "Base - Lab Notes") == "Base - Lab Notes"
    assert titles.own("127.0.0.2:80", "Salt | Ion - Lab Notes") == "Salt | Ion"
    # another host has not learnt it
    assert titles.own("127.0.0.3:80", "Salt - Lab Notes") == "Salt - Lab Notes"
    # the same rest twice is one title seen twice, not a template
    again = SiteTitles(2)
    for _ in range(3):
        assert again.own("127.0.0.2:80", "Acid - Lab Notes") == "Acid - Lab Notes"


def test_a_leading_site_name_is_learnt_too_and_one_part_always_stays() -> None:
    titles = SiteTitles(2)
    for name in ("Acid", "Base"):
        titles.own("h.test", f"Lab Notes :: {name}")
    assert titles.own("h.test", "Lab Notes :: Salt") == "Salt"
    assert titles.own("h.test", "Lab Notes") == "Lab Notes"  # no separator: whole
    only = SiteTitles(1)
    only.own("h.test", "A - B")
    assert only.own("h.test", "A - B") in ("A", "B")  # never empty


def test_a_last_part_that_names_the_host_is_left_out_from_the_first_page() -> None:
    titles = SiteTitles(2)
    assert titles.own("en.wikipedia.org", "Acid - Wikipedia") == "Acid"
    assert titles.own("n03.news.test:8000", "Acid – News 03") == "Acid"
    assert titles.own("www.physicsforums.com", "Acid | Physics Forums") == "Acid"
    # the first part is the page's, whatever the host is called
    assert titles.own("science.org", "Science - Some Journal") == "Science - Some Journal"
    assert titles.own("phys.org", "Neutrinos - Phys.org") == "Neutrinos"
    # an IP address names nothing: "127" is no site name
    assert titles.own("127.0.0.1:8000", "Apollo 127 - Moon") == "Apollo 127 - Moon"


@pytest.mark.parametrize(
    ("host", "title"),
    [
        ("physicsworld.com", "Physics World | Neutrino physics at the South Pole"),
        ("www.lemonde.fr", "Climat : le monde se réchauffe"),
        ("www.sciencenews.org", "Quantum computing – the new frontier"),
        ("www.mathematics.com", "Topology - The basics"),
        ("www.abc.net.au", "Acid rain - Net ionic equations"),
        ("web2024.example.org", "Acid rain - 2024 report"),
        ("chemistry.stackexchange.com", "Acid - Chemistry of salts"),
    ],
)
def test_a_word_inside_a_host_label_does_not_make_a_part_the_site_name(
    host: str, title: str
) -> None:
    assert SiteTitles(2).own(host, title) == title


def test_full_width_separators_split_cjk_titles() -> None:
    titles = SiteTitles(2)
    for name in ("化学", "物理学"):
        titles.own("a.cn", f"{name}｜科学网")
        titles.own("b.cn", f"{name}_百度百科")
    assert titles.own("a.cn", "元素｜科学网") == "元素"
    assert titles.own("b.cn", "元素_百度百科") == "元素"


@pytest.mark.parametrize(
    "title",
    ["Star Trek: Deep Space Nine", "AC/DC", "Jean-Paul Sartre", "Talk:Iron", "3:2 pulldown", ""],
)
def test_titles_without_a_spaced_separator_are_kept_whole(title: str) -> None:
    titles = SiteTitles(1)
    for _ in range(3):
        assert titles.own("h.test", title) == title


def test_memory_is_bounded_by_hosts_and_parts() -> None:
    titles = SiteTitles(2, max_hosts=3, max_parts=4)
    for i in range(10):
        titles.own(f"h{i}.test", f"A{i} - B")
        for j in range(10):
            titles.own("busy.test", f"P{j} - Q{j}")
    assert len(titles._hosts) == 3
    assert all(len(parts) <= 4 for parts in titles._hosts.values())
    with pytest.raises(ValueError):
        SiteTitles(0)


def _page(title: str, link: str = "") -> bytes:
    anchor = f'<p><a href="{link}">acid next</a></p>' if link else ""
    text = "<p>chemistry acid molecule reaction salt</p>" * 40
    return f"<html><head><title>{title}</title></head><body>{text}{anchor}</body></html>".encode()


def _title_relevance(
    project_root: Path, venv_scrapy: list[str], out: Path, *settings: str
) -> dict[str, tuple[str, float]]:
    chain = ["/", "/a.html", "/b.html", "/c.html"]
    names = ["Chemistry", "Molecule", "Reaction", "Acid"]

    def answer(path: str) -> Answer:
        if path in chain:
            i = chain.index(path)
            nxt = chain[i + 1] if i + 1 < len(chain) else ""
            return (200, {}, _page(f"{names[i]} - Lab Notes Online", nxt))
        return (404, {}, b"")

    crawl_one_host(project_root, venv_scrapy, out, answer, "CONCURRENT_REQUESTS=1", *settings)
    con = sqlite3.connect(out / "pages.sqlite3")
    try:
        rows = con.execute("SELECT url, title, title_relevance FROM pages").fetchall()
    finally:
        con.close()
    return {url.rsplit("/", 1)[-1] or "/": (title, rel) for url, title, rel in rows}


def test_a_crawl_scores_a_title_without_the_site_name_its_host_repeats(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path
) -> None:
    learnt = _title_relevance(project_root, venv_scrapy, tmp_path / "learnt")
    whole = _title_relevance(
        project_root, venv_scrapy, tmp_path / "whole", "FOCUSED_TITLE_SITE_PAGES=0"
    )
    assert set(learnt) == set(whole) == {"/", "a.html", "b.html", "c.html"}
    # stored as written, in both crawls
    assert learnt["c.html"][0] == whole["c.html"][0] == "Acid - Lab Notes Online"
    # the first two pages taught the crawl the site's name: the third is scored as "Acid"
    vector = TopicVector(load_topic("chemistry", project_root / "topics").keywords)
    assert learnt["c.html"][1] == pytest.approx(vector.cosine("Acid"))
    assert whole["c.html"][1] == pytest.approx(vector.cosine("Acid - Lab Notes Online"))
    assert learnt["c.html"][1] > whole["c.html"][1]
    assert learnt["/"][1] == pytest.approx(whole["/"][1])  # before two titles: whole


def test_a_repeated_part_with_the_topics_words_still_scores(
    project_root: Path, venv_scrapy: list[str], tmp_path: Path
) -> None:
    """A section name a host repeats ("Neutrons | Chemistry") is learnt as template
    too; the page is then scored by its whole title, which scores higher."""
    chain = ["/", "/a.html", "/b.html", "/c.html"]
    names = ["Lab", "Desk", "Bench", "Neutrons"]

    def answer(path: str) -> Answer:
        if path in chain:
            i = chain.index(path)
            nxt = chain[i + 1] if i + 1 < len(chain) else ""
            return (200, {}, _page(f"{names[i]} | Chemistry", nxt))
        return (404, {}, b"")

    out = tmp_path / "out"
    crawl_one_host(project_root, venv_scrapy, out, answer, "CONCURRENT_REQUESTS=1")
    con = sqlite3.connect(out / "pages.sqlite3")
    try:
        (rel,) = con.execute(
            "SELECT title_relevance FROM pages WHERE url LIKE '%/c.html'"
        ).fetchone()
    finally:
        con.close()
    vector = TopicVector(load_topic("chemistry", project_root / "topics").keywords)
    assert vector.cosine("Neutrons | Chemistry") > vector.cosine("Neutrons")
    assert rel == pytest.approx(vector.cosine("Neutrons | Chemistry"))
