"""Embedding file readers (word2vec text/binary, GloVe, fastText .vec) and the text writer."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from prior.errors import DataError, NotFoundError
from prior.pipeline.embeddings.io import detect_format, read_embeddings, write_word2vec_binary, write_word2vec_text

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


BAD_FILES = [  # (file name, content, what the error must say: file, row/line, field)
    ("nonnum.txt", "2 3\na 1 2 3\nb 1 x 3\n", r"nonnum.txt, row 3, field 'value 2 of 3': not a number: 'x'"),
    ("short.txt", "2 3\na 1 2 3\nb 1 2\n", r"short.txt, row 3, field 'vector': expected a word and 3 numbers"),
    ("long.txt", "2 3\na 1 2 3 4\nb 1 2 3\n", r"long.txt, row 2, field 'vector': expected a word and 3 numbers, found 5 fields"),
    ("glove-short.txt", "a 1 2 3\nb 1 2\n", r"glove-short.txt, row 2, field 'vector': expected a word and 3 numbers"),
    ("glove-long.txt", "a 1 2 3\nb 1 2 3 4\n", r"glove-long.txt, row 2, field 'vector': expected 3 numbers \(the dimension of line 1\), found 4"),
    ("glove-first.txt", "a 1 x 3\nb 1 2 3\n", r"glove-first.txt, row 1, field 'value 2 of 3': not a number: 'x'"),
    ("nan.txt", "a 1 2 3\nb 1 nan 3\n", r"nan.txt, row 2, field 'value 2 of 3': 'nan' is not a finite number"),
    ("empty.txt", "", r"empty.txt: the file is empty"),
    ("empty.vec", "\n\n", r"empty.vec: no vectors in file"),
    ("cut.vec", "3 2\na 1 2\nb 1 2\n", r"cut.vec, row 1, field 'count': the header announces 3 vectors, the file holds 2"),
    ("extra.vec", "1 2\na 1 2\nb 1 2\n", r"extra.vec, row 3: more entries than the 1 the header"),
    ("dim0.txt", "2 0\na\nb\n", r"dim0.txt, row 1, field 'dim': the header gives dimension 0"),
    ("noword.txt", " 1 2 3\n", r"noword.txt, row 1, field 'word': the line has no word"),
]


@pytest.mark.parametrize(("name", "content", "message"), BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_embeddings_io_errors_name_file_line_and_field(tmp_path: Path, name: str, content: str,
                                                       message: str) -> None:
    bad = tmp_path / name
    bad.write_text(content, encoding="utf-8")
    with pytest.raises(DataError, match=message):
        read_embeddings(bad)


def test_embeddings_io_binary_errors(tmp_path: Path) -> None:
    path = write_word2vec_binary(tmp_path / "v.bin", WORDS, VECS)
    data = path.read_bytes()
    cut = tmp_path / "cut.bin"
    cut.write_bytes(data[:30])
    with pytest.raises(DataError, match=r"cut.bin, field 'vector': file ends inside the vector of entry 2 of 4"):
        read_embeddings(cut)
    nan = tmp_path / "nan.bin"
    write_word2vec_binary(nan, ["a", "b"], np.array([[1, 2, 3], [1, np.inf, 3]], dtype=np.float32))
    with pytest.raises(DataError, match=r"nan.bin, field 'value 2 of 3': entry 2 \('b'\) holds inf"):
        read_embeddings(nan)
    more = tmp_path / "more.bin"
    more.write_bytes(b"3" + data[1:])  # header says 3 of the 4 entries
    with pytest.raises(DataError, match=r"more.bin, row 1, field 'count': data follows the 3 entries"):
        read_embeddings(more)
    # A header file whose second line has the wrong dimension is still text, not "binary".
    text = tmp_path / "wrongdim.txt"
    text.write_text("2 3\na 1 2\nb 1 2 3\n", encoding="utf-8")
    assert detect_format(text) == "word2vec"
    with pytest.raises(DataError, match=r"wrongdim.txt, row 2, field 'vector'"):
        read_embeddings(text)


def test_embeddings_io_limit_skips_the_count_check(tmp_path: Path) -> None:
    path = tmp_path / "big.vec"
    path.write_text("5 2\na 1 2\nb 3 4\nc 5 6\n", encoding="utf-8")  # header promises 5
    assert read_embeddings(path, limit=2).words == ["a", "b"]
    with pytest.raises(DataError, match="holds 3"):
        read_embeddings(path, limit=4)


def test_embeddings_io_other_errors(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError):
        read_embeddings(tmp_path / "missing.txt")
    with pytest.raises(DataError, match="whitespace"):
        write_word2vec_text(tmp_path / "o.txt", ["a b"], np.zeros((1, 2)))
    (tmp_path / "ok.txt").write_text("a 1\n", encoding="utf-8")
    with pytest.raises(DataError, match="unknown embedding format 'w2v'"):
        read_embeddings(tmp_path / "ok.txt", "w2v")


def test_embeddings_io_nearest(tmp_path: Path) -> None:
    emb = read_embeddings(write_word2vec_text(tmp_path / "v.txt", WORDS, VECS))
    assert emb.nearest("the", 1)[0][0] == "dog"  # cos 0.52 vs naïve 0.38, Cat -0.84
