"""The one ``scrapy crawl focused`` command line (:mod:`bench.command`): what Scrapy reads
back from it is what the caller meant."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from scrapy.settings import Settings
from scrapy.utils.conf import arglist_to_dict

from bench.command import crawl_command, setting_value, settings_from_strings


def _read_back(cmd: list[str]) -> tuple[dict[str, str], Settings]:
    """The ``-a`` arguments and the ``-s`` settings as ``scrapy crawl`` parses them."""
    args = [cmd[i + 1] for i, part in enumerate(cmd) if part == "-a"]
    sets = [cmd[i + 1] for i, part in enumerate(cmd) if part == "-s"]
    settings = Settings()
    settings.setdict(arglist_to_dict(sets), priority="cmdline")
    return arglist_to_dict(args), settings


def test_the_command_line_scrapy_reads_back(tmp_path: Path) -> None:
    cmd = crawl_command(
        "chemistry",
        output_dir=tmp_path / "out",
        settings={
            "FOCUSED_STRATEGY": "bfs",
            "AUTOTHROTTLE_ENABLED": False,
            "CLOSESPIDER_ITEMCOUNT": 60,
            "FOCUSED_SEEDS": ["http://h/a", "http://h/b"],
            "EXTENSIONS": {"bench.speed.Probe": 0},
            "FOCUSED_LABELS": tmp_path / "labels.tsv",
        },
    )
    assert cmd[:7] == [sys.executable, "-m", "scrapy", "crawl", "focused", "-a", "topic=chemistry"]
    assert cmd[7:9] == ["-s", f"FOCUSED_OUTPUT_DIR={tmp_path / 'out'}"]
    spider_args, settings = _read_back(cmd)
    assert spider_args == {"topic": "chemistry"}
    assert settings["FOCUSED_OUTPUT_DIR"] == str(tmp_path / "out")
    assert settings["FOCUSED_STRATEGY"] == "bfs"
    assert settings.getbool("AUTOTHROTTLE_ENABLED", True) is False
    assert settings.getint("CLOSESPIDER_ITEMCOUNT") == 60
    assert settings.getlist("FOCUSED_SEEDS") == ["http://h/a", "http://h/b"]
    assert settings.getdict("EXTENSIONS") == {"bench.speed.Probe": 0}
    assert settings["FOCUSED_LABELS"] == str(tmp_path / "labels.tsv")
    names = [cmd[i + 1].split("=", 1)[0] for i, part in enumerate(cmd) if part == "-s"]
    assert names[1:] == [  # the mapping's order, one -s each
        "FOCUSED_STRATEGY",
        "AUTOTHROTTLE_ENABLED",
        "CLOSESPIDER_ITEMCOUNT",
        "FOCUSED_SEEDS",
        "EXTENSIONS",
        "FOCUSED_LABELS",
    ]


def test_no_topic_and_extra_arguments_verbatim_last(tmp_path: Path) -> None:
    prefix = ["/some/scrapy"]
    cmd = crawl_command(
        None, output_dir=tmp_path, scrapy=prefix, extra_args=("-a", "topic=x", "-s", "A=1")
    )
    assert cmd == [
        "/some/scrapy",
        "crawl",
        "focused",
        "-s",
        f"FOCUSED_OUTPUT_DIR={tmp_path}",
        "-a",
        "topic=x",
        "-s",
        "A=1",
    ]


def test_the_output_folder_is_given_once(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="output_dir"):
        crawl_command("chemistry", output_dir=tmp_path, settings={"FOCUSED_OUTPUT_DIR": "x"})


def test_setting_strings_a_later_one_wins_like_the_command_line() -> None:
    parsed = settings_from_strings(["A=1", "B=x=y", "A=2", "C="])
    assert parsed == {"B": "x=y", "A": "2", "C": ""}
    assert list(parsed) == ["B", "A", "C"]
    with pytest.raises(ValueError, match="NAME=VALUE"):
        settings_from_strings(["NOVALUE"])
    assert setting_value(True) == "True" and setting_value(("a", "b")) == "a,b"
