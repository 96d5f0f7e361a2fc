"""prepare_common.py, files: strict UTF-8 reading, and the atomic rename every output goes
through."""

import pytest
from conftest import names_in, write_files

from safety import PrepareError, read_text
from safety.files import atomic_path, atomic_write_text

# ---------------------------------------------------------------------------------------------
# atomic_path


def test_atomic_path_renames_into_place_on_success(tmp_path):
    path = tmp_path / "out.txt"
    with atomic_path(path) as tmp:
        assert tmp.parent == tmp_path  # same folder, so the rename is atomic
        assert tmp.name.startswith(".") and tmp.name.endswith(".tmp")  # never looks finished
        tmp.write_text("new")
        assert not path.exists()  # nothing under the real name until the block succeeds
    assert path.read_text() == "new"
    assert names_in(tmp_path) == ["out.txt"]


def test_atomic_path_replaces_the_previous_file_on_success(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("old")
    with atomic_path(path) as tmp:
        tmp.write_text("new")
        assert path.read_text() == "old"
    assert path.read_text() == "new"
    assert names_in(tmp_path) == ["out.txt"]


@pytest.mark.parametrize("error", [ValueError("boom"), KeyboardInterrupt()])
def test_atomic_path_keeps_the_previous_file_on_error(tmp_path, error):
    path = tmp_path / "out.txt"
    path.write_text("old")
    with pytest.raises(type(error)), atomic_path(path) as tmp:
        tmp.write_text("half")
        raise error
    assert path.read_text() == "old"
    assert names_in(tmp_path) == ["out.txt"]


def test_atomic_path_leaves_nothing_on_error_without_a_previous_file(tmp_path):
    with pytest.raises(ValueError), atomic_path(tmp_path / "out.txt") as tmp:
        tmp.write_text("half")
        raise ValueError("boom")
    assert names_in(tmp_path) == []


def test_atomic_path_names_the_file_when_its_folder_takes_no_temporary(tmp_path):
    """A folder that is missing (or read-only) fails making the temporary: the error names the
    file asked for, not the temporary's name."""
    path = tmp_path / "missing" / "out.txt"
    with pytest.raises(FileNotFoundError) as caught, atomic_path(path):
        pass
    assert caught.value.filename == str(path)


# ---------------------------------------------------------------------------------------------
# read_text


def test_read_text_reads_strict_utf8(tmp_path):
    path = tmp_path / "in.txt"
    path.write_bytes("héllo\n世界".encode())
    assert read_text(path) == "héllo\n世界"


@pytest.mark.parametrize(
    "files, name, fragments",
    [
        pytest.param({}, "nope.txt", ["does not exist"], id="missing"),
        pytest.param({"folder/x.txt": "x"}, "folder", ["is a folder"], id="folder"),
        pytest.param(
            {"latin1.txt": "naïve".encode() + b" caf\xe9\n"},  # 'naïve' is 6 bytes, then ' caf'
            "latin1.txt",
            ["not valid UTF-8", "byte offset 10 ", r"b'\xe9'"],
            id="invalid-utf8",
        ),
        pytest.param(
            {"big.txt": b"a" * 12_345 + b"\xff"},
            "big.txt",
            ["byte offset 12,345 "],
            id="invalid-utf8-offset-with-thousands-separators",
        ),
    ],
)
def test_read_text_refuses_bad_input_naming_the_file(tmp_path, files, name, fragments):
    write_files(tmp_path, files)
    with pytest.raises(PrepareError) as excinfo:
        read_text(tmp_path / name)
    message = str(excinfo.value)
    assert str(tmp_path / name) in message
    for fragment in fragments:
        assert fragment in message


def test_atomic_write_text(tmp_path):
    path = tmp_path / "sub" / "out.txt"
    atomic_write_text(path, "héllo\n")
    assert path.read_bytes() == "héllo\n".encode()
    plain = tmp_path / "plain.txt"
    plain.write_text("x", encoding="utf-8")
    assert path.stat().st_mode == plain.stat().st_mode  # a normal file's mode, not mkstemp's 0600
    plain.unlink()
    (tmp_path / "folder").mkdir()
    with pytest.raises(IsADirectoryError):
        atomic_write_text(tmp_path / "folder", "x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder", "sub"]  # no temporary left
