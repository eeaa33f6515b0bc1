"""Topic files: loading, and one-line errors for every kind of bad file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from focused.ranking.relevance import TopicVector
from focused.web.topics import Topic, TopicError, load_topic

HEAD = 'name = "tiny"\n'
SEEDS = 'seeds = ["http://127.0.0.1:1/start"]\n'
KEYWORDS = "[keywords]\nchemistry = 3\nacid = 4\n"

MakeTopic = Callable[..., Path]


def error_of(path: Path | str, directory: Path | None = None) -> str:
    with pytest.raises(TopicError) as info:
        load_topic(str(path), directory)
    message = str(info.value)
    assert "\n" not in message, message
    assert isinstance(info.value, ValueError)
    return message


# --- good topics ---------------------------------------------------------------------


def test_loads_the_chemistry_topic() -> None:
    topic = load_topic("chemistry")
    assert isinstance(topic, Topic)
    assert topic.name == "chemistry"
    assert topic.category == "subject.Science.Chemistry"
    # bilingual: the paper's query word 化学 and its English name (weights are tunable)
    assert topic.keywords["化学"] > 0 and topic.keywords["chemistry"] > 0
    assert all(w > 0 and isinstance(w, float) for w in topic.keywords.values())
    assert topic.seeds and all(s.startswith(("http://", "https://")) for s in topic.seeds)
    assert all(t.startswith(("http://", "https://")) for t in topic.targets)
    assert set(topic.thresholds) <= {"page", "anchor"}
    assert 0 <= topic.thresholds.get("anchor", 0) < 1 and 0 <= topic.thresholds.get("page", 0) < 5
    assert topic.source.endswith("chemistry.toml")
    # its keywords make a usable topic vector
    assert TopicVector(topic.keywords).cosine("化学 chemistry acid") > 0.1


def test_a_path_to_a_toml_file_works(tmp_topic: MakeTopic) -> None:
    path = tmp_topic()
    topic = load_topic(str(path))
    assert topic.name == "tiny"
    assert topic.keywords == {"chemistry": 3.0, "acid": 4.0}
    assert topic.seeds == ["http://127.0.0.1:1/start"]
    assert topic.targets == [] and topic.thresholds == {}
    assert topic.source == str(path)


def test_name_defaults_to_the_file_stem(tmp_topic: MakeTopic) -> None:
    path = tmp_topic(SEEDS + KEYWORDS, name="acids")
    assert load_topic(str(path)).name == "acids"


def test_topics_dir_is_searched_by_name(tmp_topic: MakeTopic, tmp_path: Path) -> None:
    tmp_topic(SEEDS + KEYWORDS, name="acids")
    assert load_topic("acids", tmp_path).keywords["acid"] == 4.0


def test_keyword_with_spaces_is_stripped(tmp_topic: MakeTopic) -> None:
    path = tmp_topic(HEAD + SEEDS + '[keywords]\n"  acid " = 2\n')
    assert load_topic(str(path)).keywords == {"acid": 2.0}


# --- unknown topics ------------------------------------------------------------------


def test_unknown_topic_lists_the_available_ones_in_one_line() -> None:
    message = error_of("no-such-topic")
    assert "no-such-topic" in message
    assert "available topics" in message
    assert "chemistry" in message
    assert "did you mean" not in message


@pytest.mark.parametrize("typed", ["Chemistry", "CHEMISTRY", "chemstry", "chemistry "])
def test_a_near_miss_topic_name_gets_a_hint(typed: str) -> None:
    message = error_of(typed)
    assert f"unknown topic {typed!r}; did you mean chemistry?" in message
    assert "\n" not in message


def test_unknown_topic_in_a_topics_dir(tmp_topic: MakeTopic, tmp_path: Path) -> None:
    tmp_topic(name="beta")
    tmp_topic(name="alpha")
    message = error_of("gamma", tmp_path)
    assert message.endswith("available topics: alpha, beta")


@pytest.mark.parametrize(
    ("kind", "says"), [("missing", "does not exist"), ("file", "is not a folder")]
)
def test_a_topics_dir_that_is_not_a_folder(tmp_path: Path, kind: str, says: str) -> None:
    """It was "unknown topic 'chemistry'; available topics: none"."""
    folder = tmp_path / "topics"
    if kind == "file":
        folder.write_text("not a folder")
    assert error_of("chemistry", folder) == f"topics folder {folder} {says}"


def test_missing_toml_path_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "x.toml"
    message = error_of(missing)
    assert str(missing) in message and "does not exist" in message


def test_empty_name_is_refused() -> None:
    assert "topic" in error_of("")


# --- bad files -----------------------------------------------------------------------


def test_syntax_error_names_the_file(tmp_topic: MakeTopic) -> None:
    path = tmp_topic(HEAD + SEEDS + "[keywords\nchemistry = 3\n")
    message = error_of(path)
    assert str(path) in message
    assert "syntax" in message.lower()
    assert "line 3" in message  # tomllib's position of the broken table header


def test_undecodable_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "latin.toml"
    path.write_bytes(b'name = "\xe9"\n')
    assert str(path) in error_of(path)


@pytest.mark.parametrize("keywords", ["", "[keywords]\n"], ids=["missing", "empty"])
def test_no_keywords(tmp_topic: MakeTopic, keywords: str) -> None:
    path = tmp_topic(HEAD + SEEDS + keywords)
    message = error_of(path)
    assert str(path) in message and "keywords" in message


@pytest.mark.parametrize(
    "weight", ["-1", "0", "0.0", "-0.5", '"high"', "true", "nan", "inf", "[1, 2]"]
)
def test_bad_weight(tmp_topic: MakeTopic, weight: str) -> None:
    path = tmp_topic(HEAD + SEEDS + f"[keywords]\nacid = 4\nbase = {weight}\n")
    message = error_of(path)
    assert "'base'" in message  # the keyword at fault is named
    assert str(path) in message


def test_empty_keyword_is_refused(tmp_topic: MakeTopic) -> None:
    path = tmp_topic(HEAD + SEEDS + '[keywords]\nacid = 4\n"  " = 1\n')
    assert "keyword" in error_of(path)


@pytest.mark.parametrize("seeds", ["", "seeds = []\n", 'seeds = "http://h/"\n'])
def test_no_seeds(tmp_topic: MakeTopic, seeds: str) -> None:
    path = tmp_topic(HEAD + seeds + KEYWORDS)
    assert "seeds" in error_of(path)


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.org/pub",
        "javascript:alert(1)",
        "/relative/path.html",
        "example.org/page",
        "http://",
        "mailto:a@example.org",
    ],
)
def test_non_http_seed(tmp_topic: MakeTopic, url: str) -> None:
    path = tmp_topic(HEAD + f'seeds = ["http://ok.example/", "{url}"]\n' + KEYWORDS)
    message = error_of(path)
    assert url in message and "http" in message


@pytest.mark.parametrize(
    ("url", "said"),
    [("http://[::1", "not a valid URL"), ("http://127.0.0.1:99999/", "not a valid URL")],
)
def test_malformed_seed_is_one_error(tmp_topic: MakeTopic, url: str, said: str) -> None:
    """An unclosed IPv6 address or a port out of range: a TopicError, not a traceback."""
    path = tmp_topic(HEAD + f'seeds = ["{url}"]\n' + KEYWORDS)
    message = error_of(path)
    assert url in message and said in message


def test_non_string_seed(tmp_topic: MakeTopic) -> None:
    path = tmp_topic(HEAD + "seeds = [42]\n" + KEYWORDS)
    assert "42" in error_of(path)


@pytest.mark.parametrize(
    ("line", "got"),
    [
        ("targets = 5", "got 5"),  # a TypeError traceback
        ("targets = 1979-05-27", "got datetime.date(1979, 5, 27)"),
        ('targets = "http://h/t"', "got 'http://h/t'"),  # was "'h' is not an http(s) URL"
        ("targets = {a = 1}", "got {'a': 1}"),
    ],
    ids=["number", "date", "string", "table"],
)
def test_targets_that_are_not_a_list(tmp_topic: MakeTopic, line: str, got: str) -> None:
    path = tmp_topic(HEAD + SEEDS + line + "\n" + KEYWORDS)
    message = error_of(path)
    assert message == (
        f'topic file {path}: targets must be a list of URLs (targets = ["https://...", ...]), {got}'
    )


def test_non_http_target(tmp_topic: MakeTopic) -> None:
    path = tmp_topic(HEAD + SEEDS + 'targets = ["file:///etc/passwd"]\n' + KEYWORDS)
    message = error_of(path)
    assert "targets" in message and "file:///etc/passwd" in message


def test_unknown_key_is_named(tmp_topic: MakeTopic) -> None:
    # a typo: "seed" for "seeds"
    path = tmp_topic(HEAD + SEEDS + 'seed = ["http://h/"]\n' + KEYWORDS)
    message = error_of(path)
    assert "unknown key" in message and "seed" in message and "seeds" in message


@pytest.mark.parametrize(
    "line",
    [
        "anchor = 1.0",  # anchor in [0, 1)
        "anchor = 1.5",
        "anchor = -0.1",
        "page = 5.0",  # page in [0, 5)
        "page = -1",
        'page = "high"',
        "page = true",
        "speed = 0.5",  # unknown threshold
    ],
)
def test_threshold_out_of_range_or_unknown(tmp_topic: MakeTopic, line: str) -> None:
    path = tmp_topic(HEAD + SEEDS + KEYWORDS + f"[thresholds]\n{line}\n")
    message = error_of(path)
    assert line.split(" = ")[0] in message and str(path) in message


def test_thresholds_at_the_edges_are_accepted(tmp_topic: MakeTopic) -> None:
    path = tmp_topic(HEAD + SEEDS + KEYWORDS + "[thresholds]\nanchor = 0\npage = 4.99\n")
    assert load_topic(str(path)).thresholds == {"anchor": 0.0, "page": 4.99}


def test_thresholds_must_be_a_table(tmp_topic: MakeTopic) -> None:
    path = tmp_topic(HEAD + SEEDS + "thresholds = 0.3\n" + KEYWORDS)
    assert "thresholds" in error_of(path)


def test_a_topic_file_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    """A topic file saved with a UTF-8 byte-order mark (Windows Notepad) was refused as
    a TOML syntax error at line 1, column 1."""
    plain = tmp_path / "plain.toml"
    plain.write_text(HEAD + SEEDS + KEYWORDS, encoding="utf-8")
    marked = tmp_path / "marked.toml"
    marked.write_text(HEAD + SEEDS + KEYWORDS, encoding="utf-8-sig")
    assert marked.read_bytes().startswith(b"\xef\xbb\xbf")
    topic = load_topic(str(marked))
    assert topic.keywords == load_topic(str(plain)).keywords
    assert topic.name == "tiny" and topic.seeds == ["http://127.0.0.1:1/start"]
