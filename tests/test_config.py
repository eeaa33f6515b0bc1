"""``focused.config``: every bad FOCUSED_* setting is refused in one line; threshold precedence."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from scrapy.settings import Settings

from focused import config
from focused.addressfilter import AddressFilterMiddleware
from focused.config import ConfigError
from focused.defaults import CHECKS, DEFAULTS
from focused.strategies import strategy_class
from focused.web.sandbox.generator import MIN_PAGES, MODES, generate_site
from focused.web.topics import Topic


def make_settings(tmp_path: Path, **values: Any) -> Settings:
    """The project's settings.py (priority "project") plus ``values`` as ``-s`` would set them."""
    settings = Settings()
    settings.setmodule("focused.settings", priority="project")
    settings.set("FOCUSED_OUTPUT_DIR", str(tmp_path / "out"), priority="cmdline")
    for name, value in values.items():
        settings.set(name, value, priority="cmdline")
    return settings


def refused(settings: Settings, topic: Topic | None = None) -> str:
    with pytest.raises(ConfigError) as info:
        config.validate(settings, topic)
    message = str(info.value)
    assert "\n" not in message, message
    return message


def topic_with(**thresholds: float) -> Topic:
    return Topic(name="t", keywords={"acid": 1.0}, seeds=["http://h/"], thresholds=dict(thresholds))


def test_defaults_are_accepted_and_the_output_dir_is_made(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    config.validate(settings)
    config.validate(settings, topic_with(page=0.3, anchor=0.2))
    assert (tmp_path / "out").is_dir()


def test_bare_settings_use_the_defaults(tmp_path: Path) -> None:
    settings = Settings()  # no settings.py at all: every value from focused.defaults
    settings.set("FOCUSED_OUTPUT_DIR", str(tmp_path / "o"))
    config.validate(settings)
    assert config.strategy(settings).name == "annealing"


@pytest.mark.parametrize("ratio", [0, 1, 1.5, -0.1, "abc", "0", "1.0", "nan"])
def test_genetic_ratio_must_lie_strictly_between_0_and_1(tmp_path: Path, ratio: object) -> None:
    message = refused(make_settings(tmp_path, FOCUSED_GENETIC_RATIO=ratio))
    assert "FOCUSED_GENETIC_RATIO" in message


@pytest.mark.parametrize("ratio", [0.5, "0.8", 0.999])
def test_genetic_ratio_inside_is_accepted(tmp_path: Path, ratio: object) -> None:
    config.validate(make_settings(tmp_path, FOCUSED_GENETIC_RATIO=ratio))


@pytest.mark.parametrize("value", [1.5, 1.0, -0.2, "x"])
def test_anchor_threshold_out_of_range(tmp_path: Path, value: object) -> None:
    message = refused(make_settings(tmp_path, FOCUSED_ANCHOR_THRESHOLD=value))
    assert "FOCUSED_ANCHOR_THRESHOLD" in message


def test_page_threshold_above_the_largest_score(tmp_path: Path) -> None:
    # A = 4B + C <= 4 + 1 = 5: a threshold of 5 can never be passed
    message = refused(make_settings(tmp_path, FOCUSED_PAGE_THRESHOLD=5.0))
    assert "FOCUSED_PAGE_THRESHOLD" in message
    config.validate(make_settings(tmp_path, FOCUSED_PAGE_THRESHOLD=4.9))


def test_unknown_strategy_lists_the_valid_ones(tmp_path: Path) -> None:
    message = refused(make_settings(tmp_path, FOCUSED_STRATEGY="dfs"))
    assert "'dfs'" in message
    for name in ("annealing", "best_first", "bfs", "bsbs", "gao", "genetic"):
        assert name in message


def test_a_strategy_by_dotted_path(tmp_path: Path) -> None:
    settings = make_settings(
        tmp_path, FOCUSED_STRATEGY="tests.strategy_plugin.TargetsFirstStrategy"
    )
    config.validate(settings)
    strategy = config.strategy(settings, targets=frozenset({"http://h/t"}))
    assert strategy.name == "targets_first" and strategy.targets == {"http://h/t"}  # type: ignore[attr-defined]
    message = refused(make_settings(tmp_path, FOCUSED_STRATEGY="tests.strategy_plugin.Nope"))
    assert "has no 'Nope'" in message


def test_learning_settings_are_checked_by_the_learning_strategy(tmp_path: Path) -> None:
    message = refused(
        make_settings(tmp_path, FOCUSED_STRATEGY="learning", FOCUSED_LEARNING_CLASSIFIER="maybe")
    )
    assert message == "FOCUSED_LEARNING_CLASSIFIER must be true or false, got 'maybe'"
    settings = make_settings(tmp_path, FOCUSED_STRATEGY="learning", FOCUSED_FRONTIER="redis")
    _, params = config.strategy_params(settings)
    assert params.options["rescore_links"] is True  # the Redis frontier rescores too
    # the page model is per process, not shared by the workers: off on the Redis frontier
    assert params.options["page_model"] == 0.0
    memory = make_settings(tmp_path, FOCUSED_STRATEGY="learning")
    assert config.strategy_params(memory)[1].options["page_model"] > 0
    settings = make_settings(tmp_path, FOCUSED_STRATEGY="learning", FOCUSED_RESCORE_EVERY=0)
    assert config.strategy_params(settings)[1].options["rescore_links"] is False
    # a strategy that reads no setting of its own is not refused for a bad learning one
    config.strategy_params(make_settings(tmp_path, FOCUSED_LEARNING_SHRINKAGE=-1))


@pytest.mark.parametrize("name", ["bfs", "best_first", "genetic", "annealing", "bsbs", "gao"])
def test_every_strategy_name_is_accepted(tmp_path: Path, name: str) -> None:
    settings = make_settings(tmp_path, FOCUSED_STRATEGY=name)
    config.validate(settings)
    assert config.strategy(settings).name == name


def test_unknown_web(tmp_path: Path) -> None:
    message = refused(make_settings(tmp_path, FOCUSED_WEB="internet"))
    assert "FOCUSED_WEB" in message and "'internet'" in message and "sandbox" in message


def test_unknown_frontier(tmp_path: Path) -> None:
    assert "FOCUSED_FRONTIER" in refused(make_settings(tmp_path, FOCUSED_FRONTIER="disk"))


@pytest.mark.parametrize(
    "seeds",
    [
        "http://ok.example/, ftp://example.org/pub",  # -s gives a comma-separated string
        ["http://ok.example/", "javascript:void(0)"],
        ["/relative.html"],
    ],
)
def test_non_http_seed_setting(tmp_path: Path, seeds: object) -> None:
    message = refused(make_settings(tmp_path, FOCUSED_SEEDS=seeds))
    assert "FOCUSED_SEEDS" in message


def test_http_seed_setting_is_accepted(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, FOCUSED_SEEDS="http://a.example/, https://b.example/x")
    config.validate(settings)
    assert config.seeds_setting(settings) == ["http://a.example/", "https://b.example/x"]


def test_output_dir_under_a_regular_file(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    out = blocker / "crawl"
    message = refused(make_settings(tmp_path, FOCUSED_OUTPUT_DIR=str(out)))
    assert "FOCUSED_OUTPUT_DIR" in message and str(out) in message
    # the output dir check itself, on an existing regular file
    with pytest.raises(ConfigError):
        config.check_output_dir(str(blocker))


def test_jobdir_under_a_regular_file(tmp_path: Path) -> None:
    """A path root cannot make a folder of either (a file in the way)."""
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    job = blocker / "job"
    message = refused(make_settings(tmp_path, JOBDIR=str(job)))
    assert message.startswith(f"JOBDIR {str(job)!r} cannot be created: [Errno 20] Not a directory")
    assert not (tmp_path / "out").exists()  # checked before the output folder is made


@pytest.fixture
def read_only(tmp_path: Path):
    """A read-only tmpfs (it refuses root too); skipped where mounting is not permitted."""
    path = tmp_path / "ro"
    path.mkdir()
    try:
        proc = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(path)],
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError as exc:
        pytest.skip(f"cannot mount a tmpfs: {exc}")
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {proc.stderr.strip()}")
    yield path
    subprocess.run(["umount", "-l", str(path)], check=False)


def test_a_jobdir_on_a_read_only_file_system(tmp_path: Path, read_only: Path) -> None:
    message = refused(make_settings(tmp_path, JOBDIR=str(read_only)))
    assert message == f"JOBDIR {str(read_only)!r} is not writable"
    message = refused(make_settings(tmp_path, JOBDIR=str(read_only / "job")))
    assert message.startswith(f"JOBDIR {str(read_only / 'job')!r} cannot be created: [Errno 30]")


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("FOCUSED_M_INITIAL", 0),
        ("FOCUSED_TUNNEL_WIDENING", 0),  # (0, 1]
        ("FOCUSED_TUNNEL_WIDENING", 1.5),
        ("FOCUSED_SA_ALPHA", 1.5),
        ("FOCUSED_SA_K", 0),
        ("FOCUSED_BSBS_DEPTH", -1),
        ("FOCUSED_MAX_TUNNEL_HOPS", "many"),
        ("FOCUSED_TITLE_WEIGHT", "inf"),
    ],
)
def test_other_numbers_out_of_range(tmp_path: Path, name: str, value: object) -> None:
    assert name in refused(make_settings(tmp_path, **{name: value}))


# --- threshold precedence: -s beats the topic, the topic beats settings.py -------------


def test_topic_threshold_beats_the_default_and_settings_py(tmp_path: Path) -> None:
    topic = topic_with(anchor=0.3, page=1.5)
    settings = make_settings(tmp_path)
    assert settings.getpriority("FOCUSED_ANCHOR_THRESHOLD") == 20  # from settings.py
    assert config.threshold(settings, topic, "anchor") == 0.3
    assert config.threshold(settings, topic, "page") == 1.5  # not in settings.py: default
    settings.set("FOCUSED_PAGE_THRESHOLD", 2.5, priority="project")
    assert config.threshold(settings, topic, "page") == 1.5


def test_command_line_threshold_beats_the_topic(tmp_path: Path) -> None:
    topic = topic_with(anchor=0.3, page=1.5)
    settings = make_settings(tmp_path, FOCUSED_ANCHOR_THRESHOLD=0.05, FOCUSED_PAGE_THRESHOLD=3.0)
    assert config.threshold(settings, topic, "anchor") == 0.05
    assert config.threshold(settings, topic, "page") == 3.0
    # the strategy is built with the winning value
    settings.set("FOCUSED_STRATEGY", "genetic", priority="cmdline")
    assert config.strategy(settings, topic).anchor_threshold == 0.05


def test_spider_or_job_threshold_beats_the_topic(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    settings.set("FOCUSED_ANCHOR_THRESHOLD", 0.15, priority="spider")
    assert config.threshold(settings, topic_with(anchor=0.3), "anchor") == 0.15


def test_without_topic_override_the_settings_value_counts(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    settings.set("FOCUSED_ANCHOR_THRESHOLD", 0.25, priority="project")
    assert config.threshold(settings, topic_with(page=1.0), "anchor") == 0.25
    assert config.threshold(settings, None, "anchor") == 0.25
    assert config.threshold(Settings(), None, "page") == 2.0  # focused.defaults
    # the topic's anchor threshold reaches the strategy
    settings.set("FOCUSED_STRATEGY", "annealing", priority="cmdline")
    assert config.strategy(settings, topic_with(anchor=0.3)).anchor_threshold == 0.3


@pytest.mark.parametrize("level", [-1, 10, "fast"])
def test_store_gzip_level_must_be_0_to_9(tmp_path: Path, level: object) -> None:
    message = refused(make_settings(tmp_path, FOCUSED_STORE_GZIP_LEVEL=level))
    assert "FOCUSED_STORE_GZIP_LEVEL" in message
    for ok in (0, "9"):
        config.validate(make_settings(tmp_path, FOCUSED_STORE_GZIP_LEVEL=ok))


# --- the table of checks (focused.defaults.CHECKS) ---------------------------------------
KIND_OF = {bool: "bool", int: "int", float: "float", str: "str", list: "list", dict: "dict"}


def test_every_default_has_a_check_of_its_type() -> None:
    assert list(CHECKS) == list(DEFAULTS)  # same keys, same order
    for name, default in DEFAULTS.items():
        assert CHECKS[name].kind == KIND_OF[type(default)], name


def test_every_default_passes_its_own_check(tmp_path: Path) -> None:
    config.validate(make_settings(tmp_path))  # settings.py's values
    for name, check in CHECKS.items():
        default = DEFAULTS[name]
        if check.choices:
            assert default in check.choices, name
        if check.kind in ("int", "float"):
            assert check.low <= default <= check.high, name


def test_every_special_check_exists() -> None:
    specials = {check.special for check in CHECKS.values() if check.special}
    assert specials == set(config._SPECIAL)


def test_sandbox_modes_are_the_generators() -> None:
    assert CHECKS["FOCUSED_SANDBOX_MODE"].choices == MODES


def test_sandbox_pages_accepted_are_the_pages_the_generator_makes(tmp_path: Path) -> None:
    """The check's least value is the generator's: one less is refused in one line (it
    passed the check and raised in the generator), the least one makes a site."""
    low = CHECKS["FOCUSED_SANDBOX_PAGES"].low
    assert low == MIN_PAGES
    message = refused(make_settings(tmp_path, FOCUSED_SANDBOX_PAGES=MIN_PAGES - 1))
    assert message == (
        f"FOCUSED_SANDBOX_PAGES must be in [{MIN_PAGES}, 10000000), got {MIN_PAGES - 1}"
    )
    config.validate(make_settings(tmp_path, FOCUSED_SANDBOX_PAGES=MIN_PAGES))
    assert generate_site(seed=1, pages=MIN_PAGES).pages


class _Recorder:
    """A SettingsReader that notes the range each setting is read with."""

    def __init__(self) -> None:
        self.ranges: dict[str, tuple[float, float, bool, bool]] = {}
        self.flags: list[str] = []

    def number(self, name: str) -> float:
        return float(DEFAULTS[name])

    def in_range(
        self, name: str, low: float, high: float, *, open_low: bool = True, open_high: bool = True
    ) -> float:
        self.ranges[name] = (low, high, open_low, open_high)
        return float(DEFAULTS[name])

    def flag(self, name: str) -> bool:
        self.flags.append(name)
        return bool(DEFAULTS[name])

    def text(self, name: str) -> str:
        return str(DEFAULTS[name])


@pytest.mark.parametrize("name", ["learning", "annealing", "genetic", "gao", "bsbs", "bfs"])
def test_the_table_has_the_strategy_classes_ranges(name: str) -> None:
    """A strategy's class checks its own settings; the table checks them the same way."""
    read = _Recorder()
    strategy_class(name).params_from_settings(read)
    for setting, (low, high, open_low, open_high) in read.ranges.items():
        check = CHECKS[setting]
        assert (check.low, check.high, check.open_low, check.open_high) == (
            low,
            high,
            open_low,
            open_high,
        ), setting
    assert all(CHECKS[setting].kind == "bool" for setting in read.flags)


def wrong_value(name: str) -> object:
    """A value of the wrong type for ``name`` (as ``-s`` gives it, where it can)."""
    check = CHECKS[name]
    return {
        "bool": "maybe",
        "int": "abc",
        "float": "abc",
        "str": "no-such-choice" if check.choices else ["a", "list"],
        "list": 5,
        "dict": "{not json",
    }[check.kind]


@pytest.mark.parametrize("name", list(DEFAULTS))
def test_every_setting_refuses_a_wrong_type_in_one_line(tmp_path: Path, name: str) -> None:
    value = wrong_value(name)
    message = refused(make_settings(tmp_path, **{name: value}))
    assert message.startswith(f"{name} must be "), message
    assert repr(value) in message
    assert not (tmp_path / "out").exists()  # refused before the output folder is made


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("FOCUSED_STORE_COMMIT_EVERY", "abc", "must be an integer, got 'abc'"),
        ("FOCUSED_STORE_COMMIT_EVERY", 0, "must be >= 1, got 0"),
        ("FOCUSED_METRICS_LOG_EVERY", "ten", "must be an integer, got 'ten'"),
        ("FOCUSED_METRICS_LOG_EVERY", 2.5, "must be an integer, got 2.5"),
        ("FOCUSED_STORE_FSYNC", "maybe", "must be true or false, got 'maybe'"),
        # Scrapy's getbool takes 1/0, True/False, true/false only; so do we
        ("FOCUSED_STORE_THREAD", "yes", "must be true or false, got 'yes'"),
        ("FOCUSED_SANDBOX_SEED", "abc", "must be an integer, got 'abc'"),
        ("FOCUSED_SANDBOX_MODE", "evil", "must be one of normal, hostile, got 'evil'"),
        ("FOCUSED_SANDBOX_PORT", 70000, "must be in [0, 65535], got 70000"),
        ("FOCUSED_MAX_CRAWL_DELAY", -1, "must be >= 0.0, got -1.0"),
        ("FOCUSED_REDIS_LEASE", 0, "must be > 0.0, got 0.0"),
        ("FOCUSED_MAX_LINKS_PER_PAGE", -5, "must be >= 0, got -5"),
        ("FOCUSED_MAX_TEXT_CHARS", "lots", "must be an integer, got 'lots'"),
        ("FOCUSED_SEEDS", "http://[::1", "'http://[::1' is not a valid URL (Invalid IPv6 URL)"),
        ("FOCUSED_SEEDS", "http://127.0.0.1:99999/", "is not a valid URL (Port out of range"),
        ("FOCUSED_SEEDS", "http://:80/", "has no host"),
        ("FOCUSED_ALLOWED_DOMAINS", "127.0.0.1:8000", "got '127.0.0.1:8000' (say '127.0.0.1')"),
        ("FOCUSED_ALLOWED_DOMAINS", "https://example.org/", "(say 'example.org')"),
        ("FOCUSED_ALLOWED_NETWORKS", "127.0.0.0/33", "or addresses, got '127.0.0.0/33'"),
        ("FOCUSED_HOSTS", '{"a.example": "not-an-ip"}', "got 'a.example': 'not-an-ip'"),
        ("FOCUSED_HOSTS", "[1, 2]", "must be a mapping or a JSON object"),
    ],
)
def test_bad_values_are_named_in_one_line(
    tmp_path: Path, name: str, value: object, says: str
) -> None:
    message = refused(make_settings(tmp_path, **{name: value}))
    assert message.startswith(name) and says in message, message


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("FOCUSED_STORE_THREAD", "1"),
        ("FOCUSED_STORE_THREAD", "true"),
        ("FOCUSED_STORE_FSYNC", "False"),
        ("FOCUSED_SANDBOX_SEED", "-3"),
        ("FOCUSED_METRICS_LOG_EVERY", "0"),
        ("FOCUSED_ALLOWED_DOMAINS", "127.0.0.1, example.org,.example.net"),
        ("FOCUSED_ALLOWED_NETWORKS", "127.0.0.0/8,::1/128, 127.0.0.7"),
        ("FOCUSED_HOSTS", '{"a.example": "127.0.0.1", "b.example": "::1"}'),
        ("FOCUSED_HOSTS", {"a.example": "127.0.0.3"}),
        ("FOCUSED_SEEDS", "http://[::1]:8080/, https://example.org:443/x"),
    ],
)
def test_good_values_are_accepted(tmp_path: Path, name: str, value: object) -> None:
    config.validate(make_settings(tmp_path, **{name: value}))


def test_a_topic_whose_keywords_leave_no_term(tmp_path: Path) -> None:
    topic = Topic(name="bang", keywords={"!!!": 1.0, "the": 2.0}, seeds=["http://h/"])
    message = refused(make_settings(tmp_path), topic)
    assert "'bang'" in message and "'!!!'" in message and "tokenised" in message
    config.validate(make_settings(tmp_path), Topic(name="zh", keywords={"化学": 1}, seeds=[]))


def test_a_topic_seed_with_a_port_out_of_range(tmp_path: Path) -> None:
    topic = Topic(name="t", keywords={"acid": 1.0}, seeds=["http://127.0.0.1:99999/"])
    message = refused(make_settings(tmp_path), topic)
    assert message.startswith("topic 't' seeds: 'http://127.0.0.1:99999/' is not a valid URL")


# --- Scrapy's own settings: by their type, with Scrapy's getters' rules ---------------


def scrapy_wrong_value(name: str) -> object:
    """A value Scrapy's getter for ``name`` raises on (as ``-s`` gives it)."""
    return {"bool": "maybe", "int": "1.5", "float": "abc", "level": "nope"}[
        config.SCRAPY_CHECKS[name].kind
    ]


@pytest.mark.parametrize("name", list(config.SCRAPY_CHECKS))
def test_every_checked_scrapy_setting_refuses_a_wrong_type(tmp_path: Path, name: str) -> None:
    value = scrapy_wrong_value(name)
    settings = make_settings(tmp_path, **{name: value})
    getter = {"bool": settings.getbool, "int": settings.getint, "float": settings.getfloat}
    if config.SCRAPY_CHECKS[name].kind in getter:  # Scrapy itself raises on it
        with pytest.raises(ValueError):
            getter[config.SCRAPY_CHECKS[name].kind](name)
    message = refused(settings)
    assert message.startswith(f"{name} must be "), message
    assert repr(value) in message
    assert not (tmp_path / "out").exists()  # refused before the output folder is made


@pytest.mark.parametrize("name", config.CLASS_PATHS + config.SCHEDULER_CLASS_PATHS)
def test_every_class_path_setting_must_import(tmp_path: Path, name: str) -> None:
    """``-s SCHEDULER=scrapy.core.scheduler.Schedular`` (one import path, not a dict of
    components) was a traceback when Scrapy loaded it, exit 1, the output folder made;
    so was a queue class or ``DUPEFILTER_CLASS`` under Scrapy's scheduler (the focused
    scheduler ignores them, with a WARNING: they are not checked then)."""
    if name in config.SCHEDULER_CLASS_PATHS:
        config.validate(make_settings(tmp_path / "focused", **{name: "nope.Missing"}))
        settings = make_settings(
            tmp_path, **{name: "nope.Missing", "SCHEDULER": "scrapy.core.scheduler.Scheduler"}
        )
    else:
        settings = make_settings(tmp_path, **{name: "nope.Missing"})
    message = refused(settings)
    assert message == f"{name}: 'nope.Missing' cannot be imported (No module named 'nope')"
    assert not (tmp_path / "out").exists()
    assert name in Settings()  # a setting Scrapy has


def test_every_checked_scrapy_setting_is_scrapys_and_its_value_passes(tmp_path: Path) -> None:
    defaults = Settings()  # Scrapy's default_settings (2.19 deprecates PER_IP; still read)
    assert [n for n in config.SCRAPY_CHECKS if n not in defaults] == ["CONCURRENT_REQUESTS_PER_IP"]
    config.validate(make_settings(tmp_path))  # the project's settings.py passes


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("DOWNLOAD_DELAY", "abc", "must be a number, got 'abc'"),
        ("DOWNLOAD_DELAY", -1, "must be >= 0.0, got -1.0"),
        ("DOWNLOAD_DELAY", "nan", "must be finite, got nan"),
        ("DOWNLOAD_TIMEOUT", 0, "must be > 0.0, got 0.0"),
        ("CONCURRENT_REQUESTS", "abc", "must be an integer, got 'abc'"),
        ("CONCURRENT_REQUESTS", "-1", "must be >= 1, got -1"),
        ("CONCURRENT_REQUESTS", 0, "must be >= 1, got 0"),
        ("CONCURRENT_REQUESTS_PER_DOMAIN", 0, "must be >= 1, got 0"),
        ("CONCURRENT_REQUESTS_PER_IP", -2, "must be >= 0, got -2"),
        ("DOWNLOAD_MAXSIZE", "8MB", "must be an integer, got '8MB'"),
        ("DEPTH_LIMIT", -1, "must be >= 0, got -1"),
        ("RETRY_TIMES", "two", "must be an integer, got 'two'"),
        ("CLOSESPIDER_PAGECOUNT", "10.5", "must be an integer, got '10.5'"),
        ("CLOSESPIDER_TIMEOUT", -3, "must be >= 0.0, got -3.0"),
        ("AUTOTHROTTLE_TARGET_CONCURRENCY", 0, "must be > 0.0, got 0.0"),
        ("DOWNLOAD_DELAY_JITTER", 2, "must be in [0.0, 1.0], got 2.0"),
        ("ROBOTSTXT_OBEY", "yes", "must be true or false (True/False, 1/0), got 'yes'"),
        ("AUTOTHROTTLE_ENABLED", "on", "got 'on'"),
        ("RANDOMIZE_DOWNLOAD_DELAY", "maybe", "got 'maybe'"),
        ("LOG_LEVEL", "info", "got 'info' (say 'INFO')"),
        ("LOG_LEVEL", "LOUD", "must be a logging level (CRITICAL, ERROR, WARNING, INFO"),
    ],
)
def test_bad_scrapy_settings_are_named_in_one_line(
    tmp_path: Path, name: str, value: object, says: str
) -> None:
    message = refused(make_settings(tmp_path, **{name: value}))
    assert message.startswith(name) and says in message, message


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("DOWNLOAD_DELAY", "0.25"),
        ("DOWNLOAD_DELAY", 0),
        ("CONCURRENT_REQUESTS", "4"),
        ("CONCURRENT_REQUESTS", 2.0),  # Scrapy's getint: int(2.0)
        ("CONCURRENT_REQUESTS_PER_IP", "0"),
        ("DEPTH_LIMIT", "0"),
        ("CLOSESPIDER_PAGECOUNT", "10"),
        ("ROBOTSTXT_OBEY", "false"),
        ("ROBOTSTXT_OBEY", "0"),
        ("AUTOTHROTTLE_ENABLED", "True"),
        ("DNSCACHE_ENABLED", 1),
        ("LOG_LEVEL", "WARNING"),
        ("LOG_LEVEL", 10),
    ],
)
def test_good_scrapy_settings_are_accepted(tmp_path: Path, name: str, value: object) -> None:
    config.validate(make_settings(tmp_path, **{name: value}))


# --- a FOCUSED_ name that is no setting ------------------------------------------------


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("FOCUSED_STRATEGIE", "unknown setting FOCUSED_STRATEGIE; did you mean FOCUSED_STRATEGY?"),
        ("FOCUSED_SANDBOX_PAGE", "did you mean FOCUSED_SANDBOX_PAGES?"),
        ("FOCUSED_OUTPUTDIR", "did you mean FOCUSED_OUTPUT_DIR?"),
        ("FOCUSED_XYZZY_QUUX_PLUGH", "unknown setting FOCUSED_XYZZY_QUUX_PLUGH; see the README"),
    ],
)
def test_an_unknown_focused_setting_names_the_closest(tmp_path: Path, name: str, says: str) -> None:
    message = refused(make_settings(tmp_path, **{name: "1"}))
    assert message == says or (message.startswith(f"unknown setting {name};") and says in message)
    assert not (tmp_path / "out").exists()


def test_every_known_focused_setting_and_other_names_pass(tmp_path: Path) -> None:
    config.validate(make_settings(tmp_path, **DEFAULTS, MY_OWN_SETTING="x"))


# --- list settings on the command line: comma-separated, not a literal --------------------

LIST_SETTINGS = [name for name, check in CHECKS.items() if check.kind == "list"]


@pytest.mark.parametrize("name", LIST_SETTINGS)
@pytest.mark.parametrize(
    "value", ['["a", "b"]', "['a']", "  [a,b]", '{"a": 1}', "('a', 'b')", "[]"]
)
def test_a_list_setting_given_as_a_literal_is_refused(
    tmp_path: Path, name: str, value: str
) -> None:
    """``-s FOCUSED_SEEDS='["http://a/"]'`` was split at its commas: a seed '["http://a/"]'
    refused as not http(s), a session parameter '["sid"' that never matched."""
    message = refused(make_settings(tmp_path, **{name: value}))
    assert message.startswith(f"{name} must be comma-separated values (-s {name}="), message
    assert message.endswith(f"), not a JSON or Python literal, got {value!r}"), message
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("name", "form"),
    [
        ("FOCUSED_SEEDS", "https://a.example/,https://b.example/"),
        ("FOCUSED_ALLOWED_DOMAINS", "example.org,example.net"),
        ("FOCUSED_ALLOWED_NETWORKS", "10.0.0.0/8,fd00::/8"),
        ("FOCUSED_SESSION_PARAMS", "sid,phpsessid"),
    ],
)
def test_a_list_literal_is_told_the_settings_form(tmp_path: Path, name: str, form: str) -> None:
    message = refused(make_settings(tmp_path, **{name: '["x"]'}))
    assert f"(-s {name}={form})" in message, message
    config.validate(make_settings(tmp_path, **{name: form}))  # the form given is good


def test_list_settings_as_lists_or_comma_separated_are_accepted(tmp_path: Path) -> None:
    config.validate(make_settings(tmp_path, FOCUSED_SEEDS=["http://a.example/"]))
    config.validate(make_settings(tmp_path, FOCUSED_ALLOWED_NETWORKS="::1/128, 10.0.0.0/8"))
    config.validate(make_settings(tmp_path, FOCUSED_SESSION_PARAMS=""))


# --- FOCUSED_SESSION_PARAMS: query parameter names ---------------------------------------


@pytest.mark.parametrize(
    ("value", "bad", "hint"),
    [
        ("sid=", "sid=", " (say 'sid')"),
        ("jsessionid, ?token=x", "?token=x", " (say 'token')"),
        ("sid,session id", "session id", ""),
        ("a&b", "a&b", " (say 'a')"),
        ('"sid"', '"sid"', ""),
    ],
)
def test_session_params_must_be_parameter_names(
    tmp_path: Path, value: str, bad: str, hint: str
) -> None:
    """Each was taken as it was, and matched no link's parameter."""
    message = refused(make_settings(tmp_path, FOCUSED_SESSION_PARAMS=value))
    assert message == (
        "FOCUSED_SESSION_PARAMS must be query parameter names"
        f" (-s FOCUSED_SESSION_PARAMS=sid,phpsessid), got {bad!r}{hint}"
    )


@pytest.mark.parametrize("value", ["*", "sid,*x", "utm_**"])
def test_a_session_param_prefix_is_a_name_then_one_star(tmp_path: Path, value: str) -> None:
    """A bare ``*`` would strip every query parameter of every link."""
    message = refused(make_settings(tmp_path, FOCUSED_SESSION_PARAMS=value))
    assert "a prefix ending in * (utm_*)" in message, message
    config.validate(make_settings(tmp_path, FOCUSED_SESSION_PARAMS="utm_*,sid"))


def test_session_params_are_stripped_of_whitespace(tmp_path: Path) -> None:
    """``-s FOCUSED_SESSION_PARAMS="sid, token"`` stripped ``sid`` and not ``token`` (the
    name was " token")."""
    from focused.web.sanitize import strip_session_ids

    settings = make_settings(tmp_path, FOCUSED_SESSION_PARAMS=" sid , token,, ")
    config.validate(settings)
    assert config.session_params(settings) == ["sid", "token"]
    spider = spider_with(tmp_path, FOCUSED_SESSION_PARAMS=" sid , token,, ")
    assert spider.session_params == ["sid", "token"]
    url = "http://h/p?a=1&token=x&sid=y"
    assert strip_session_ids(url, spider.session_params) == "http://h/p?a=1"


@pytest.mark.parametrize(
    ("params", "url", "kept"),
    [
        # the default names, as before: ;jsessionid= and ;sid= are session ids
        (None, "http://h/a;jsessionid=A1;sid=B2?x=1", "http://h/a?x=1"),
        # a list without jsessionid keeps it (it was stripped whatever the setting)
        ("phpsessid", "http://h/a;jsessionid=A1?x=1", None),
        ("phpsessid", "http://h/a;JSESSIONID=A1;phpsessid=B", "http://h/a;JSESSIONID=A1"),
        # a name of the user's own is stripped from the path too (it was kept)
        ("sid", "http://h/a;sid=B2;jsessionid=A1", "http://h/a;jsessionid=A1"),
        ("sid,token", "http://h/shop/;Token=xyz/cart?q=1", "http://h/shop//cart?q=1"),
        # only the whole name: ;sidx= and ;xsid= are not session ids
        ("sid", "http://h/a;sidx=1;xsid=2", None),
        ("aspsessionid", "http://h/a;ASPSESSIONIDQA=z", "http://h/a"),
    ],
)
def test_path_parameters_follow_the_session_params_setting(
    tmp_path: Path, params: str | None, url: str, kept: str | None
) -> None:
    """``;name=`` path parameters are stripped for the names of
    ``FOCUSED_SESSION_PARAMS``, as query parameters are: the path's names were fixed
    (``jsessionid``, ``phpsessid``, ``sessionid``, ``sid``) whatever the setting."""
    settings = {} if params is None else {"FOCUSED_SESSION_PARAMS": params}
    spider = spider_with(tmp_path, **settings)
    request = spider._request(url, 1.0, "")
    assert request is not None
    assert request.url == (kept or url)
    stripped = spider.crawler.stats.get_value("focused/links/session_ids_stripped", 0)
    assert stripped == (0 if kept is None else 1)


@pytest.mark.parametrize(
    ("seeds", "targets", "says"),
    [
        (1, 1, "1 seed, 1 known target, strategy"),
        (2, 0, "2 seeds, 0 known targets, strategy"),
        (1, 3, "1 seed, 3 known targets, strategy"),
    ],
)
def test_the_spiders_start_line_counts_in_good_english(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, seeds: int, targets: int, says: str
) -> None:
    """It said "1 seeds, 1 known targets"."""
    with caplog.at_level("INFO", logger="focused"):
        spider_with(tmp_path, seeds=seeds, targets=targets)
    [line] = [r.getMessage() for r in caplog.records if "known target" in r.getMessage()]
    assert line == f"focused: topic t on the real web, {says} annealing", line


def spider_with(tmp_path: Path, seeds: int = 1, targets: int = 1, **settings: Any) -> Any:
    """The focused spider as a crawl makes it (its settings checked, its web opened): on
    the real web, with ``seeds`` seeds and a topic of ``targets`` known targets, on a
    port where nothing answers (nothing is fetched)."""
    from scrapy.utils.test import get_crawler

    from focused.spiders.focused import FocusedSpider

    urls = [f"http://127.0.0.1:9/s{i}" for i in range(seeds)]
    known = ", ".join(f'"http://127.0.0.1:9/t{i}"' for i in range(targets))
    topic = tmp_path / "t.toml"
    topic.write_text(
        f'seeds = ["http://127.0.0.1:9/"]\ntargets = [{known}]\n[keywords]\nacid = 1\n',
        encoding="utf-8",
    )
    values = {
        "FOCUSED_OUTPUT_DIR": str(tmp_path / "out"),
        "FOCUSED_WEB": "real",
        "FOCUSED_SEEDS": ",".join(urls),  # given: the real web is not probed
        **settings,
    }
    crawler = get_crawler(FocusedSpider, values)
    spider = FocusedSpider.from_crawler(crawler, topic=str(topic))
    spider.web.close()
    return spider


# --- FOCUSED_LABELS: a file that can be read --------------------------------------------


def test_a_labels_file_that_does_not_exist(tmp_path: Path) -> None:
    missing = tmp_path / "nonexistent.tsv"
    message = refused(make_settings(tmp_path, FOCUSED_LABELS=str(missing)))
    assert message == f"FOCUSED_LABELS: {str(missing)!r} does not exist"
    assert not (tmp_path / "out").exists()


def test_a_labels_file_that_cannot_be_read(tmp_path: Path) -> None:
    message = refused(make_settings(tmp_path, FOCUSED_LABELS=str(tmp_path)))  # a folder
    assert message.startswith(f"FOCUSED_LABELS: {str(tmp_path)!r} cannot be read ("), message
    binary = tmp_path / "labels.tsv.gz"
    binary.write_bytes(b"\x1f\x8b\x08\x00\xff\xfe")
    message = refused(make_settings(tmp_path, FOCUSED_LABELS=str(binary)))
    assert message == f"FOCUSED_LABELS: {str(binary)!r} is not UTF-8 text (a labels TSV)"


def test_a_labels_file_a_path_object_or_a_url_is_accepted(tmp_path: Path) -> None:
    labels = tmp_path / "labels.tsv"
    labels.write_text("/wiki/Acid\tsubject.Science.Chemistry\n", encoding="utf-8")
    config.validate(make_settings(tmp_path, FOCUSED_LABELS=labels))  # a PathLike, too
    config.validate(make_settings(tmp_path, FOCUSED_LABELS=str(labels)))
    # fetched when the crawl opens its web (a benchmark's sandbox serves it)
    config.validate(make_settings(tmp_path, FOCUSED_LABELS="http://127.0.0.1:9/labels.tsv"))
    config.validate(make_settings(tmp_path, FOCUSED_LABELS=""))


# --- FOCUSED_TOPICS_DIR: a folder that exists ---------------------------------------------


def test_a_topics_dir_that_does_not_exist(tmp_path: Path) -> None:
    """It was "unknown topic 'chemistry'; available topics: none"."""
    missing = tmp_path / "no-topics"
    settings = make_settings(tmp_path, FOCUSED_TOPICS_DIR=str(missing))
    says = (
        f"FOCUSED_TOPICS_DIR: {str(missing)!r} does not exist; name a folder of topic files"
        " (or leave it empty for the project's topics/)"
    )
    with pytest.raises(ConfigError) as info:
        config.topics_dir(settings)
    assert str(info.value) == says
    assert refused(settings) == says
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", ["topics.txt", "chemistry.toml"])
def test_a_topics_dir_that_is_a_file(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text('name = "x"\n', encoding="utf-8")
    settings = make_settings(tmp_path, FOCUSED_TOPICS_DIR=str(path))
    with pytest.raises(ConfigError) as info:
        config.topics_dir(settings)
    message = str(info.value)
    assert message.startswith(
        f"FOCUSED_TOPICS_DIR: {str(path)!r} is a file, not a folder of topic files"
    ), message
    # a topic file given as the folder: the way to crawl it
    assert message.endswith(f"; to crawl that topic file, give -a topic={path}") == (
        name == "chemistry.toml"
    ), message
    assert refused(settings) == message


def test_a_topics_dir_that_is_a_folder_or_empty(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, FOCUSED_TOPICS_DIR=str(tmp_path))
    assert config.topics_dir(settings) == str(tmp_path)
    config.validate(settings)
    assert config.topics_dir(make_settings(tmp_path)) is None  # the project's topics/
    assert config.topics_dir(make_settings(tmp_path, FOCUSED_TOPICS_DIR="")) is None


# --- spider arguments (-a NAME=VALUE) ---------------------------------------------------


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ({"strategy": "bfs"}, "; use -s FOCUSED_STRATEGY=bfs"),
        ({"FOCUSED_SEEDS": "http://h/"}, "; use -s FOCUSED_SEEDS=http://h/"),
        ({"download_delay": "1"}, "; use -s DOWNLOAD_DELAY=1"),
        # Scrapy's habit (-a start_urls=... sets the spider's attribute): the seeds
        ({"start_urls": "http://127.0.0.2/"}, "; use -s FOCUSED_SEEDS=http://127.0.0.2/"),
        ({"allowed_domains": "127.0.0.2"}, "; use -s FOCUSED_ALLOWED_DOMAINS=127.0.0.2"),
        ({"topc": "chemistry"}, "; did you mean -a topic=chemistry?"),
        ({"topic": "chemistry", "colour": "red"}, "-a colour=red (the focused spider takes"),
    ],
)
def test_an_unknown_spider_argument(args: dict[str, str], says: str) -> None:
    with pytest.raises(ConfigError) as info:
        config.check_spider_args(args)
    message = str(info.value)
    assert message.startswith("unknown spider argument -a ") and "\n" not in message
    assert "takes -a topic=..." in message and says in message, message


def test_the_spiders_arguments_and_scrapyds_are_accepted() -> None:
    config.check_spider_args({"topic": "chemistry"})
    config.check_spider_args({})
    # scrapyd's schedule.json passes its job id (and the egg's version) as -a _job=...
    config.check_spider_args({"topic": "chemistry", "_job": "6487ec7", "_version": "r42"})


def test_the_spider_refuses_an_unknown_argument() -> None:
    from focused.spiders.focused import FocusedSpider

    with pytest.raises(ConfigError, match="use -s FOCUSED_STRATEGY=bfs"):
        FocusedSpider(topic="chemistry", strategy="bfs")
    spider = FocusedSpider(topic="chemistry", _job="6487ec7")
    assert spider.topic_arg == "chemistry" and spider._job == "6487ec7"


# --- FOCUSED_WEB=sandbox with FOCUSED_SEEDS -----------------------------------------------


@pytest.mark.parametrize(
    ("seeds", "port", "where"),
    [
        ("http://example.org/", 0, "(a free port: FOCUSED_SANDBOX_PORT=0)"),
        ("http://127.0.0.1:8123/wiki/A", 0, "(a free port: FOCUSED_SANDBOX_PORT=0)"),
        ("http://127.0.0.1:8123/, http://127.0.0.1:8124/", 8123, "(http://127.0.0.1:8123/)"),
        ("http://localhost:8123/", 8123, "(http://127.0.0.1:8123/)"),
        ("https://127.0.0.1:8123/", 8123, "(http://127.0.0.1:8123/)"),
    ],
)
def test_sandbox_seeds_off_the_sandbox_are_refused(
    tmp_path: Path, seeds: str, port: int, where: str
) -> None:
    """Its targets are the sandbox's own pages: seeds on another site found none (recall
    0, silently)."""
    settings = make_settings(
        tmp_path, FOCUSED_WEB="sandbox", FOCUSED_SEEDS=seeds, FOCUSED_SANDBOX_PORT=port
    )
    message = refused(settings)
    assert message.startswith("FOCUSED_SEEDS: '") and "is not on the embedded sandbox" in message
    assert where in message and "-s FOCUSED_WEB=real" in message, message
    assert not (tmp_path / "out").exists()


def test_sandbox_seeds_on_the_sandbox_are_accepted(tmp_path: Path) -> None:
    seeds = "http://127.0.0.1:8123/wiki/A,http://127.0.0.1:8123/sports/p0001.html"
    config.validate(
        make_settings(
            tmp_path, FOCUSED_WEB="sandbox", FOCUSED_SEEDS=seeds, FOCUSED_SANDBOX_PORT=8123
        )
    )
    for web in ("real", "auto"):  # another site's seeds: the real web
        config.validate(make_settings(tmp_path, FOCUSED_WEB=web, FOCUSED_SEEDS="http://h.example/"))


def test_sandbox_seeds_on_the_port_a_jobdir_kept(tmp_path: Path) -> None:
    job = tmp_path / "job"
    job.mkdir()
    (job / "sandbox.port").write_text("8125")
    seeds = "http://127.0.0.1:8125/"
    config.validate(
        make_settings(tmp_path, FOCUSED_WEB="sandbox", FOCUSED_SEEDS=seeds, JOBDIR=str(job))
    )


# --- the address filter middleware the project's resolver needs ----------------------------

ROBOTS_ONLY = {"focused.robots.FocusedRobotsTxtMiddleware": 100}


@pytest.mark.parametrize(
    "middlewares",
    [
        ROBOTS_ONLY,  # a dict of one's own replaces the project's
        '{"focused.robots.FocusedRobotsTxtMiddleware": 100}',  # as -s gives it
        {"focused.addressfilter.AddressFilterMiddleware": None},  # switched off
    ],
)
def test_the_resolver_without_the_address_filter_middleware(
    tmp_path: Path, middlewares: object
) -> None:
    message = refused(make_settings(tmp_path, DOWNLOADER_MIDDLEWARES=middlewares))
    assert message.startswith(
        "DOWNLOADER_MIDDLEWARES does not enable focused.addressfilter.AddressFilterMiddleware,"
        " which TWISTED_DNS_RESOLVER focused.addressfilter.FocusedResolver needs"
    ), message
    assert "keep 'focused.addressfilter.AddressFilterMiddleware': 50" in message
    assert not (tmp_path / "out").exists()


def test_the_deprecated_dns_resolver_setting_counts_too(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, DOWNLOADER_MIDDLEWARES=ROBOTS_ONLY)
    settings.set("TWISTED_DNS_RESOLVER", "scrapy.resolver.CachingThreadedResolver", "project")
    settings.set("DNS_RESOLVER", "focused.addressfilter.FocusedResolver", "cmdline")
    assert "which DNS_RESOLVER focused.addressfilter.FocusedResolver" in refused(settings)


class OwnAddressFilter(AddressFilterMiddleware):
    """A subclass of the filter: it does the filter's work."""


def test_the_address_filter_middleware_or_a_subclass_is_enough(tmp_path: Path) -> None:
    for middlewares in (
        {"focused.addressfilter.AddressFilterMiddleware": 50, **ROBOTS_ONLY},
        {f"{__name__}.OwnAddressFilter": 50},
    ):
        config.validate(make_settings(tmp_path, DOWNLOADER_MIDDLEWARES=middlewares))
    # another resolver is the user's own business: nothing to pair it with
    other = make_settings(tmp_path, DOWNLOADER_MIDDLEWARES=ROBOTS_ONLY)
    other.set("TWISTED_DNS_RESOLVER", "scrapy.resolver.CachingThreadedResolver", "cmdline")
    config.validate(other)


@pytest.mark.parametrize(
    "feeds",
    [
        {"items.jl": {}},  # the format from the extension, as Scrapy reads it
        {"out/items.json": {"overwrite": True}},
        {"stdout:": {"format": "jsonlines"}},
        {"file:///tmp/x/items.csv": {"format": "csv"}},
        {"items-%(batch_id)d.jl": {"format": "jsonlines", "batch_item_count": 5}},
    ],
)
def test_feeds_scrapy_can_write_are_accepted(feeds: dict) -> None:
    from pathlib import Path as _Path

    from scrapy.settings import Settings

    settings = Settings()
    settings.set("FEEDS", feeds, priority="cmdline")
    config.check_scrapy_settings(settings)
    settings.set("FEEDS", {_Path(k): v for k, v in feeds.items()}, priority="cmdline")
    config.check_scrapy_settings(settings)
