"""Output folders and ``JOBDIR`` whose names hold URI characters (``?``, ``#``, ``%``).

The crawl's start-up check opened ``pages.sqlite3`` and ``frontier.sqlite3`` through an
unquoted ``file:`` URI: a folder ``q?x`` opened (and so created, as an empty file) the
file ``q`` beside it, and a crawl adding to ``p%41/out`` was refused in one line ("not a
usable SQLite database"), SQLite having looked for ``pA/out/pages.sqlite3``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from focused import config
from focused.frontier.journal import Journal
from focused.output.store import PageStore
from tests.test_config import make_settings


@pytest.mark.parametrize("name", ["q?x", "p%41", "h#x", "s p%zz"])
def test_a_folder_named_with_uri_characters_is_checked_as_itself(tmp_path: Path, name: str) -> None:
    folder = tmp_path / name
    out, job = folder / "out", folder / "job"
    with PageStore(out):
        pass
    job.mkdir()
    Journal(job / "frontier.sqlite3").close()
    before = sorted(p.name for p in tmp_path.iterdir())
    settings = make_settings(tmp_path, FOCUSED_OUTPUT_DIR=str(out), JOBDIR=str(job))
    config.validate(settings)  # no "not a usable SQLite database"
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no file made beside it
    (out / "pages.sqlite3").write_bytes(b"not a database" * 100)
    with pytest.raises(config.ConfigError, match="is not a usable SQLite database"):
        config.validate(settings)
