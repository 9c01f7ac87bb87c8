"""Memory images as the files the test harness loads and dumps, in bulk (cosim/harness.py).

Text, for ``$readmemh`` and ``$writememh``: one 32-bit word per line, 8 hex digits. Binary: a
bank as ``$fread`` reads it (big-endian words), a memory as ``$fwrite`` ``%u`` writes it, word
after word (the machine's byte order). A memory of B banks keeps word w in bank ``w % B``, row
``w // B`` (:func:`flows.memmap.locate`; a test holds :func:`split` and :func:`join` to it).
Reading keeps what the simulator could not resolve: a word with an ``x`` or ``z`` digit (Icarus
writes them for unknown bits) is flagged, never guessed. Both directions are vectorised with
numpy: a program's 24,576 words are written and its 12,288 read back in a few milliseconds.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

DIGITS = 8
"""Hex digits per 32-bit word."""
LINE = DIGITS + 1
_BYTE_HEX = np.frombuffer(b"".join(f"{b:02x}".encode() for b in range(256)), dtype=np.uint16)
"""Byte -> its two hex digits, as one uint16."""
_SHIFTS = np.arange(4 * (DIGITS - 1), -1, -4, dtype=np.uint32)
UNKNOWN = 16
"""A digit's value in :data:`_NIBBLE` when it is x, X, z or Z."""
BAD = 255
_HEX_DIGITS = b"0123456789abcdefABCDEF\n"
_NIBBLE = np.full(256, BAD, dtype=np.uint8)
for _k, _c in enumerate(b"0123456789abcdef"):
    _NIBBLE[_c] = _k
for _k, _c in enumerate(b"ABCDEF"):
    _NIBBLE[_c] = 10 + _k
for _c in b"xXzZ":
    _NIBBLE[_c] = UNKNOWN


def split(words: np.ndarray, banks: int) -> np.ndarray:
    """A memory's words (length a multiple of ``banks``) -> its banks, shape (banks, rows)."""
    return np.asarray(words).reshape(-1, banks).T


def join(banks: np.ndarray) -> np.ndarray:
    """The inverse of :func:`split`: (banks, rows) -> the memory's words."""
    return np.asarray(banks).T.reshape(-1)


def hex_text(words: np.ndarray) -> bytes:
    """uint32 words -> ``$readmemh`` text, one word per line."""
    octets = np.asarray(words, dtype=">u4").view(np.uint8)
    out = np.empty((len(octets) // 4, LINE), dtype=np.uint8)
    out[:, :DIGITS] = _BYTE_HEX[octets].view(np.uint8).reshape(-1, DIGITS)   # a uint16 lookup: fast
    out[:, DIGITS] = ord("\n")
    return out.tobytes()


def write_banks(folder: Path, names: list[str], words: np.ndarray) -> None:
    """Write a memory's words (padded with zeros to whole rows) as one file per bank."""
    banks = len(names)
    padded = np.zeros(-(-len(words) // banks) * banks, dtype=np.uint32)
    padded[:len(words)] = words
    for name, bank in zip(names, split(padded, banks), strict=True):
        (folder / name).write_bytes(hex_text(bank))


def _lines(text: bytes) -> bytes:
    """``$writememh`` text as lines of exactly DIGITS characters and a newline each."""
    if b"//" in text:                 # Icarus writes "// 0x<address>" lines
        text = b"\n".join(ln for ln in text.split(b"\n") if not ln.lstrip().startswith(b"//"))
    if not text.endswith(b"\n"):
        text += b"\n"
    data = np.frombuffer(text, dtype=np.uint8)
    if len(data) % LINE == 0 and (data[DIGITS::LINE] == ord("\n")).all():
        return text
    lines = [ln.strip() for ln in text.split(b"\n") if ln.strip()]    # other layouts: line by line
    bad = next((ln for ln in lines if len(ln) != DIGITS), None)
    if bad is not None:
        raise ValueError(f"{bad[:40]!r} is not a word of {DIGITS} hex digits")
    return b"".join(ln + b"\n" for ln in lines)


def write_banks_binary(folder: Path, names: list[str], words: np.ndarray) -> None:
    """Write a memory's words (padded with zeros to whole rows) as one ``$fread`` file per bank."""
    banks = len(names)
    padded = np.zeros(-(-len(words) // banks) * banks, dtype=np.uint32)
    padded[:len(words)] = words
    for name, bank in zip(names, split(padded, banks), strict=True):
        (folder / name).write_bytes(bank.astype(">u4").tobytes())


def read_binary(path: Path, size: int) -> tuple[np.ndarray, np.ndarray]:
    """A memory dumped as one binary file -> (its words, all False: binary has no unknown bits).

    Raises:
        ValueError: the file does not hold ``size`` words.
    """
    data = Path(path).read_bytes()
    if len(data) != 4 * size:
        raise ValueError(f"{Path(path).name}: {len(data)} bytes, expected {4 * size} ({size} words)")
    return np.frombuffer(data, dtype=np.uint32).copy(), np.zeros(size, dtype=bool)


def parse_hex(text: bytes, what: str) -> tuple[np.ndarray, np.ndarray]:
    """``$writememh`` text -> (uint32 words, True where a word held x or z).

    Comment lines (``// 0x00000000``, which Icarus writes) and blank lines are skipped.

    Raises:
        ValueError: a line that is not one word of DIGITS hex digits (the message names ``what``
            and the line).
    """
    try:
        text = _lines(text)
    except ValueError as e:
        raise ValueError(f"{what}: {e}") from None
    if not text.translate(None, _HEX_DIGITS):   # only hex digits in place: bytes.fromhex skips the newlines
        values = np.frombuffer(bytes.fromhex(text.decode("ascii")), dtype=">u4").astype(np.uint32)
        return values, np.zeros(len(values), dtype=bool)
    chars = np.frombuffer(text, dtype=np.uint8).reshape(-1, LINE)[:, :DIGITS]
    digits = _NIBBLE[chars]
    if (digits == BAD).any():
        row = int(np.flatnonzero((digits == BAD).any(axis=1))[0])
        raise ValueError(f"{what}: {chars[row].tobytes()!r} is not a word of {DIGITS} hex digits")
    unknown = (digits == UNKNOWN).any(axis=1)
    digits[digits == UNKNOWN] = 0
    values = (digits.astype(np.uint32) << _SHIFTS).sum(axis=1, dtype=np.uint32)
    return values, unknown


def read_banks(folder: Path, names: list[str], rows: int) -> tuple[np.ndarray, np.ndarray]:
    """A memory dumped as one file per bank -> (its words, True where a word held x or z).

    Raises:
        ValueError: a file has another number of words than ``rows``, or a bad line.
    """
    values, unknown = [], []
    for name in names:
        v, x = parse_hex((folder / name).read_bytes(), name)
        if len(v) != rows:
            raise ValueError(f"{name}: {len(v)} words, expected {rows}")
        values.append(v)
        unknown.append(x)
    return join(np.stack(values)), join(np.stack(unknown))


def parse_fields(text: str, names: tuple[str, ...], what: str) -> dict[str, int]:
    """A line of hex numbers (``%h``) -> name -> value, or -1 where a digit is x or z.

    Raises:
        ValueError: not one number per name.
    """
    tokens = text.split()
    if len(tokens) != len(names):
        raise ValueError(f"{what}: {len(tokens)} values, expected {len(names)} ({' '.join(names)})")
    out = {}
    for name, token in zip(names, tokens, strict=True):
        out[name] = -1 if any(c in "xXzZ" for c in token) else int(token, 16)
    return out
