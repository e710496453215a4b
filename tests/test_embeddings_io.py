"""Embedding file readers (word2vec text/binary, GloVe, fastText .vec) and the text writer."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from featurestore.errors import DataError, NotFoundError
from pipeline.embeddings.io import (detect_format, read_embeddings, write_word2vec_binary,
                                    write_word2vec_text)

WORDS = ["the", "Cat", "naïve", "dog"]
VECS = np.array([[0.5, -1.0, 2.0], [1e-3, 0.0, -3.25], [1.0, 1.0, 1.0], [0.1, 0.2, 0.3]],
                dtype=np.float32)


def test_embeddings_io_word2vec_text_round_trip(tmp_path: Path) -> None:
    path = write_word2vec_text(tmp_path / "v.txt", WORDS, VECS)
    assert path.read_text(encoding="utf-8").splitlines()[0] == "4 3"
    assert detect_format(path) == "word2vec"
    emb = read_embeddings(path)
    assert emb.words == WORDS and emb.fmt == "word2vec" and emb.dim == 3
    np.testing.assert_allclose(emb.vectors, VECS, rtol=1e-6)


def test_embeddings_io_word2vec_binary(tmp_path: Path) -> None:
    path = write_word2vec_binary(tmp_path / "v.bin", WORDS, VECS)
    emb = read_embeddings(path)
    assert emb.fmt == "word2vec-binary" and emb.words == WORDS
    np.testing.assert_array_equal(emb.vectors, VECS)
    # A binary file without the .bin suffix is still recognised from its body.
    other = tmp_path / "vectors.dat"
    other.write_bytes(path.read_bytes())
    assert detect_format(other) == "word2vec-binary"
    np.testing.assert_array_equal(read_embeddings(other).vectors, VECS)


def test_embeddings_io_glove_without_header_and_with_spaces(tmp_path: Path) -> None:
    path = tmp_path / "glove.6B.3d.txt"
    path.write_text("the 0.5 -1 2\nat & t 1 2 3\ncat 0 0 1\n", encoding="utf-8")
    emb = read_embeddings(path)
    assert emb.fmt == "glove" and emb.words == ["the", "at & t", "cat"]
    np.testing.assert_array_equal(emb.vectors[1], [1, 2, 3])


def test_embeddings_io_fasttext_vec_and_gzip(tmp_path: Path) -> None:
    # fastText .vec: word2vec text, often with a trailing space on each line.
    text = "2 2\nhello 0.1 0.2 \nworld 0.3 0.4 \n"
    (tmp_path / "wiki.vec").write_text(text, encoding="utf-8")
    with gzip.open(tmp_path / "wiki.vec.gz", "wt", encoding="utf-8") as fh:
        fh.write(text)
    for name in ("wiki.vec", "wiki.vec.gz"):
        emb = read_embeddings(tmp_path / name)
        assert emb.words == ["hello", "world"]
        np.testing.assert_allclose(emb.vectors, [[0.1, 0.2], [0.3, 0.4]], rtol=1e-6)


def test_embeddings_io_duplicates_and_limit(tmp_path: Path) -> None:
    path = tmp_path / "dup.txt"
    path.write_text("a 1 1\nb 2 2\na 3 3\nc 4 4\n", encoding="utf-8")
    emb = read_embeddings(path)
    assert emb.words == ["a", "b", "c"] and emb.duplicates == 1
    np.testing.assert_array_equal(emb.vector("a"), [1, 1])  # the first copy wins
    assert read_embeddings(path, limit=2).words == ["a", "b"]


def test_embeddings_io_errors_name_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("2 3\na 1 2 3\nb 1 x 3\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"bad.txt, row 3: not a number"):
        read_embeddings(bad)
    short = tmp_path / "short.txt"
    short.write_text("a 1 2 3\nb 1 2\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"row 2: expected a word and 3 numbers"):
        read_embeddings(short)
    with pytest.raises(NotFoundError):
        read_embeddings(tmp_path / "missing.txt")
    with pytest.raises(DataError, match="whitespace"):
        write_word2vec_text(tmp_path / "o.txt", ["a b"], np.zeros((1, 2)))


def test_embeddings_io_nearest(tmp_path: Path) -> None:
    emb = read_embeddings(write_word2vec_text(tmp_path / "v.txt", WORDS, VECS))
    assert emb.nearest("the", 1)[0][0] == "dog"  # cos 0.52 vs naïve 0.38, Cat -0.84
