#!/usr/bin/env python3
"""Draws the web app's icons (Sources/ChatWeb/Page/icon-192.png and icon-512.png): a speech
bubble in the page's accent colour with three dots, on the page's dark background, inside the
central 80 % a maskable icon must keep. Plain PNG written with zlib: no image library needed.
Run it again after changing the drawing; the PNGs are committed."""
import os
import struct
import zlib

BG = (0x15, 0x17, 0x1B)
ACCENT = (0x7A, 0xB8, 0xFF)
DOT = (0x15, 0x17, 0x1B)


def inside_rounded(x, y, left, top, right, bottom, radius):
    if not (left <= x <= right and top <= y <= bottom):
        return False
    cx = min(max(x, left + radius), right - radius)
    cy = min(max(y, top + radius), bottom - radius)
    return (x - cx) ** 2 + (y - cy) ** 2 <= radius ** 2


def inside_triangle(x, y, a, b, c):
    def side(p, q, r):
        return (p[0] - r[0]) * (q[1] - r[1]) - (q[0] - r[0]) * (p[1] - r[1])
    d1, d2, d3 = side((x, y), a, b), side((x, y), b, c), side((x, y), c, a)
    negative = d1 < 0 or d2 < 0 or d3 < 0
    positive = d1 > 0 or d2 > 0 or d3 > 0
    return not (negative and positive)


def colour(u, v):
    """The colour at (u, v) in a unit square, 0..1 each way."""
    left, top, right, bottom = 0.2, 0.24, 0.8, 0.66
    in_bubble = inside_rounded(u, v, left, top, right, bottom, 0.11) or inside_triangle(u, v, (0.3, 0.6), (0.46, 0.6), (0.28, 0.78))
    if not in_bubble:
        return BG
    for cx in (0.36, 0.5, 0.64):
        if (u - cx) ** 2 + (v - 0.45) ** 2 <= 0.045 ** 2:
            return DOT
    return ACCENT


def png(size):
    samples = 3  # 3×3 samples a pixel: smooth edges
    rows = []
    for y in range(size):
        row = bytearray([0])
        for x in range(size):
            total = [0, 0, 0]
            for sy in range(samples):
                for sx in range(samples):
                    c = colour((x + (sx + 0.5) / samples) / size, (y + (sy + 0.5) / samples) / size)
                    for i in range(3):
                        total[i] += c[i]
            row += bytes(round(t / samples ** 2) for t in total)
        rows.append(bytes(row))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"".join(rows), 9)) + chunk(b"IEND", b"")


if __name__ == "__main__":
    page = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Sources", "ChatWeb", "Page")
    for size in (192, 512):
        with open(os.path.join(page, f"icon-{size}.png"), "wb") as f:
            f.write(png(size))
