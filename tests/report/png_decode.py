"""A small PNG reader (8-bit greyscale, RGB, RGBA; no interlace) — enough for Chromium's
screenshots — so that the browser test needs no imaging library."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np

_CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}


def _paeth_row(line: bytearray, prev: bytes, bpp: int) -> None:
    for i in range(len(line)):
        a = line[i - bpp] if i >= bpp else 0
        b = prev[i]
        c = prev[i - bpp] if i >= bpp else 0
        p = a + b - c
        pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
        pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
        line[i] = (line[i] + pred) & 0xFF


def _average_row(line: bytearray, prev: bytes, bpp: int) -> None:
    for i in range(len(line)):
        a = line[i - bpp] if i >= bpp else 0
        line[i] = (line[i] + ((a + prev[i]) >> 1)) & 0xFF


def read_png(path: str | Path) -> np.ndarray:
    """The image as a uint8 array (height, width, channels)."""
    data = Path(path).read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path} is not a PNG")
    pos, idat, header = 8, [], None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
        pos += 12 + length
    if header is None:
        raise ValueError(f"{path} has no IHDR")
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in _CHANNELS or interlace:
        raise ValueError(f"unsupported PNG: depth {depth}, colour type {colour}")
    bpp = _CHANNELS[colour]
    stride = width * bpp
    raw = zlib.decompress(b"".join(idat))
    out = np.zeros((height, stride), dtype=np.uint8)
    prev = np.zeros(stride, dtype=np.uint8)
    for y in range(height):
        start = y * (stride + 1)
        kind = raw[start]
        line = np.frombuffer(raw, dtype=np.uint8, count=stride, offset=start + 1)
        if kind == 0:
            row = line.copy()
        elif kind == 1:  # Sub: running sum along the row, per channel, mod 256
            row = np.cumsum(line.reshape(width, bpp), axis=0, dtype=np.uint64) % 256
            row = row.astype(np.uint8).reshape(stride)
        elif kind == 2:  # Up
            row = (line.astype(np.uint16) + prev).astype(np.uint8)
        elif kind == 3:
            buf = bytearray(line.tobytes())
            _average_row(buf, prev.tobytes(), bpp)
            row = np.frombuffer(bytes(buf), dtype=np.uint8)
        elif kind == 4:
            buf = bytearray(line.tobytes())
            _paeth_row(buf, prev.tobytes(), bpp)
            row = np.frombuffer(bytes(buf), dtype=np.uint8)
        else:
            raise ValueError(f"bad PNG filter {kind}")
        out[y] = row
        prev = row
    return out.reshape(height, width, bpp)
