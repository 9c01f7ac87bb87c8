"""cosim/memfiles.py: memories as $readmemh / $writememh files, banked as flows/memmap.py says."""

from __future__ import annotations

import numpy as np
import pytest

from cosim import memfiles
from flows import memmap
from sim.spec import DEFAULT, Params


@pytest.mark.parametrize("params", [DEFAULT, Params(SPAD_WORDS=256, EXT_WORDS=512)])
@pytest.mark.parametrize("memory", memmap.MEMORIES)
def test_banks_follow_the_memory_map(memory, params):
    arrays = memmap.arrays(memory, params)
    words = np.arange(len(arrays) * arrays[0].depth, dtype=np.uint32)
    banks = memfiles.split(words, len(arrays))
    index = {a.dotted(): b for b, a in enumerate(arrays)}
    for w in (0, 1, 2, 3, 4, 5, 7, len(words) - 1):
        path, row = memmap.locate(memory, w, params)
        assert banks[index[path], row] == w
    assert (memfiles.join(banks) == words).all()


def test_hex_text_is_what_readmemh_reads():
    words = np.array([0, 1, 0xDEADBEEF, 0xFFFFFFFF, 0x80000000], dtype=np.uint32)
    assert memfiles.hex_text(words) == b"00000000\n00000001\ndeadbeef\nffffffff\n80000000\n"
    assert memfiles.hex_text(np.zeros(0, np.uint32)) == b""


def test_parse_round_trip_and_the_formats_simulators_write():
    words = np.random.default_rng(1).integers(0, 1 << 32, 1000, dtype=np.uint64).astype(np.uint32)
    text = memfiles.hex_text(words)
    for layout in (text, b"// 0x00000000\n" + text, text.rstrip(b"\n"), text.replace(b"\n", b"\r\n"),
                   text.upper()):
        values, unknown = memfiles.parse_hex(layout, "f")
        assert (values == words).all() and not unknown.any()


def test_x_and_z_digits_are_flagged_never_guessed():
    values, unknown = memfiles.parse_hex(b"// 0x00000000\nxxxxxxxx\n0000000z\n0000X0a1\n000000a1\n", "f")
    assert list(unknown) == [True, True, True, False]
    assert values[3] == 0xA1


@pytest.mark.parametrize("bad", [b"1234567\n", b"123456789\n", b"0000000g\n", b"00 00000\n"])
def test_bad_lines_are_refused_naming_the_file(bad):
    with pytest.raises(ValueError, match=r"spad0\.out: .* is not a word of 8 hex digits"):
        memfiles.parse_hex(bad, "spad0.out")


def test_files_per_bank(tmp_path):
    words = np.arange(10, dtype=np.uint32) + 7
    names = [f"m{b}.hex" for b in range(4)]
    memfiles.write_banks(tmp_path, names, words)            # padded to 3 rows
    assert (tmp_path / "m1.hex").read_bytes() == b"00000008\n0000000c\n00000010\n"
    values, unknown = memfiles.read_banks(tmp_path, names, 3)
    assert list(values) == [*range(7, 17), 0, 0] and not unknown.any()
    with pytest.raises(ValueError, match=r"m0\.hex: 3 words, expected 4"):
        memfiles.read_banks(tmp_path, names, 4)


def test_state_line():
    names = ("finished", "error_code", "count_cycles")
    assert memfiles.parse_fields("1 5 000001f4\n", names, "state.out") == {
        "finished": 1, "error_code": 5, "count_cycles": 500}
    assert memfiles.parse_fields("1 x 0000X1f4", names, "state.out")["error_code"] == -1
    with pytest.raises(ValueError, match=r"state\.out: 2 values, expected 3"):
        memfiles.parse_fields("1 5", names, "state.out")


def test_binary_files_as_fread_reads_and_fwrite_u_writes(tmp_path):
    words = np.arange(10, dtype=np.uint32) * 0x01010101
    names = [f"m{b}.bin" for b in range(4)]
    memfiles.write_banks_binary(tmp_path, names, words)
    assert (tmp_path / "m1.bin").read_bytes() == bytes.fromhex("01010101" "05050505" "09090909")  # big-endian
    (tmp_path / "dump.bin").write_bytes(words.astype("=u4").tobytes())     # %u: the machine's order
    values, unknown = memfiles.read_binary(tmp_path / "dump.bin", 10)
    assert (values == words).all() and not unknown.any()
    with pytest.raises(ValueError, match=r"dump\.bin: 40 bytes, expected 44 \(11 words\)"):
        memfiles.read_binary(tmp_path / "dump.bin", 11)
