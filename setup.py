"""Packaging for ``scrapyd-deploy`` (``make deploy``): an egg of the ``focused`` package.

scrapyd-deploy writes a minimal ``setup.py`` when there is none; that egg would leave the
topic files out (they live in ``topics/`` next to the package, not inside it). This one
copies ``topics/*.toml`` into the built package as ``focused/topics/*.toml`` at build
time, where :func:`focused.web.topics.topics_dir` finds them through
``importlib.resources`` when the project's ``topics/`` folder is missing (an egg on
scrapyd is a zip file). The ``scrapy`` entry point tells scrapyd the settings module.

scrapyd 1.6 imports ``pkg_resources``: ``setuptools < 81`` is pinned in
``requirements.txt``.
"""

from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


class BuildWithTopics(build_py):
    """``build_py`` that also copies the project's ``topics/*.toml`` into the package."""

    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "focused" / "topics"
        self.mkpath(str(target))
        for toml in sorted((HERE / "topics").glob("*.toml")):
            self.copy_file(str(toml), str(target / toml.name))


setup(
    name="focused",
    version="0.1.0",
    description="A topical (focused) web crawler on Scrapy",
    packages=find_packages(include=["focused", "focused.*"]),
    python_requires=">=3.11",
    # the shared frontier's Lua script, read with importlib.resources (also from the egg)
    package_data={"focused.distributed": ["*.lua"]},
    cmdclass={"build_py": BuildWithTopics},
    entry_points={"scrapy": ["settings = focused.settings"]},
    zip_safe=True,
)
