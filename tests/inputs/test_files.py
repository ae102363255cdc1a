"""Tests of headstats.inputs.files: reading data files line by line, and one DataError for each way that fails."""

from __future__ import annotations

import pytest

from headstats.errors import DataError
from headstats.inputs.files import check_data_file, iter_lines


def test_lines_numbers_ends_and_bom(tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes("\ufeffone\r\ntwo\rthree\nfour".encode())
    assert list(iter_lines(path)) == [(1, "one"), (2, "two"), (3, "three"), (4, "four")]
    assert list(iter_lines(path, keepends=True)) == [(1, "one\r\n"), (2, "two\r"), (3, "three\n"), (4, "four")]


def test_latin1_names_the_line_and_byte(tmp_path):
    path = tmp_path / "latin.txt"
    path.write_bytes("ok\nstill ok\nCaf\xe9 au lait\n".encode("latin-1"))
    with pytest.raises(DataError, match=r"latin\.txt, line 3: not UTF-8 text \(byte 4 of the line, 0xe9, cannot be decoded: "
                                        r"latin-1, Windows-1252, or a binary file\?\); give it as UTF-8 text"):
        list(iter_lines(path))


def test_error_after_the_first_read_chunk_still_names_its_line(tmp_path):
    path = tmp_path / "long.txt"
    path.write_bytes(b"fine line\n" * 5000 + b"\x93quoted\x94\n")
    with pytest.raises(DataError, match=r"line 5001: not UTF-8 text \(byte 1 of the line, 0x93"):
        list(iter_lines(path))


def test_utf16_and_binary(tmp_path):
    utf16 = tmp_path / "u16.txt"
    utf16.write_text("A cat sat.\n", encoding="utf-16")
    with pytest.raises(DataError, match=r"u16\.txt: UTF-16 text, not UTF-8; save it as UTF-8"):
        list(iter_lines(utf16))
    binary = tmp_path / "data.txt"
    binary.write_bytes(b"A cat sat.\nPK\x03\x04\x00\x00\x08\x00\n")
    with pytest.raises(DataError, match=r"data\.txt, line 2: a NUL byte; this is a binary file \(or UTF-16 text\)"):
        list(iter_lines(binary))


def test_folder_missing_and_unreadable(tmp_path):
    with pytest.raises(DataError, match=r"is a folder, not a file; name one data file inside it"):
        check_data_file(tmp_path)
    with pytest.raises(DataError, match=r"is a folder, not a file"):
        list(iter_lines(tmp_path))
    with pytest.raises(DataError, match=r"data file not found: '.*nope\.txt'; check the path"):
        check_data_file(tmp_path / "nope.txt")
    with pytest.raises(DataError, match=r"GLUE file not found"):
        check_data_file(tmp_path / "nope.tsv", what="GLUE file")
    assert check_data_file(_touch(tmp_path)) == tmp_path / "ok.txt"


def test_unreadable_file(tmp_path, monkeypatch):
    path = _touch(tmp_path, "locked.txt")
    original = type(path).open

    def refuse(self, *args, **kwargs):
        if self == path:
            raise PermissionError(13, "Permission denied")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(type(path), "open", refuse)
    with pytest.raises(DataError, match=r"cannot read '.*locked\.txt': Permission denied; check the file and its "
                                        r"permissions"):
        list(iter_lines(path))


def _touch(folder, name="ok.txt"):
    path = folder / name
    path.write_text("x\n")
    return path
