"""The README's settings table documents every FOCUSED_* default, with its value."""

from __future__ import annotations

import re
from pathlib import Path

from focused.defaults import DEFAULTS

README = Path(__file__).resolve().parent.parent / "README.md"


def _table() -> dict[str, str]:
    text = README.read_text(encoding="utf-8")
    block = text.split("<!-- settings-table:start -->")[1].split("<!-- settings-table:end -->")[0]
    rows = re.findall(r"^\| `(FOCUSED_\w+)` \| `([^`]*)` \|", block, flags=re.M)
    return dict(rows)


def _literal(value: object) -> str:
    return f'"{value}"' if isinstance(value, str) else repr(value)


def test_every_default_is_documented_with_its_value():
    table = _table()
    assert sorted(table) == sorted(DEFAULTS)
    for name, value in DEFAULTS.items():
        assert table[name] == _literal(value), name


def test_every_setting_used_in_the_code_has_a_default():
    used: set[str] = set()
    for path in (README.parent / "focused").rglob("*.py"):
        used |= set(re.findall(r"\"(FOCUSED_[A-Z0-9_]+)\"", path.read_text(encoding="utf-8")))
    assert used <= set(DEFAULTS), used - set(DEFAULTS)
