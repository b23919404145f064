"""Item content features: title letter-trigrams plus genre bits."""

from __future__ import annotations

import numpy as np
import pytest

from fedrec.data import RatingDataset
from fedrec.data.content import item_content_features, title_trigrams, trigram_matrix
from fedrec.data.side_info import ItemInfo, item_info
from fedrec.errors import ConfigError


def test_trigrams_are_per_word_lower_cased_with_boundaries() -> None:
    assert title_trigrams("Toy Story") == ["#to", "toy", "oy#", "#st", "sto", "tor", "ory", "ry#"]
    # punctuation separates words, accented letters stay in theirs, a one-letter word is "#a#"
    assert title_trigrams("Misérables, A") == ["#mi", "mis", "isé", "sér", "éra", "rab", "abl",
                                               "ble", "les", "es#", "#a#"]


def test_counts_vocabulary_and_genres() -> None:
    vocabulary, counts = trigram_matrix(["Go Go", "Ago"])
    assert vocabulary == ("#ag", "#go", "ago", "go#")
    assert counts.toarray().tolist() == [[0, 2, 0, 2], [1, 0, 1, 1]]
    info = ItemInfo(titles=("Go Go", "Ago"), years=np.zeros(2, np.int16),
                    genres=np.array([[1, 0], [0, 1]], np.float32), genre_names=("A", "B"))
    features, names = item_content_features(info)
    assert features.dtype == np.float32 and features.shape == (2, 6)
    assert features[:, 4:].tolist() == [[1, 0], [0, 1]]
    assert names == ("tri:#ag", "tri:#go", "tri:ago", "tri:go#", "genre:A", "genre:B")


@pytest.mark.parametrize("title", ["", "  ", "?!"])
def test_a_title_without_letters_is_one_line_error(title: str) -> None:
    with pytest.raises(ConfigError, match=r"^item 1: title .* has no letter or digit"):
        trigram_matrix(["Heat", title])


def test_ml100k_item_features(ml100k: RatingDataset) -> None:
    info = item_info(ml100k)
    features, names = item_content_features(info)
    assert features.shape == (1682, 3169 + 19) and len(names) == 3188
    assert np.array_equal(features[:, 3169:], ml100k.item_features)  # the genre bits
    toy_story = features[0, :3169]
    assert toy_story.sum() == 8 and features[0, names.index("tri:toy")] == 1
    assert (features[:, :3169].sum(1) > 0).all()
