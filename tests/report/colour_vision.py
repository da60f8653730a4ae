"""Colour science for the palette's test: sRGB to CIELAB (D65), the CIEDE2000 colour
difference (Sharma, Wu & Dalal 2005) and the simulation of dichromat vision (Machado, Oliveira
& Fernandes 2009, severity 1, applied to linear RGB)."""

from __future__ import annotations

import numpy as np

#: Machado et al. (2009), severity 1.0: linear-RGB matrices.
CVD = {
    "deuteranopia": np.array([[0.367322, 0.860646, -0.227968],
                              [0.280085, 0.672501, 0.047413],
                              [-0.011820, 0.042940, 0.968881]]),
    "protanopia": np.array([[0.152286, 1.052583, -0.204868],
                            [0.114503, 0.786281, 0.099216],
                            [-0.003882, -0.048116, 1.051998]]),
    "tritanopia": np.array([[1.255528, -0.076749, -0.178779],
                            [-0.078411, 0.930809, 0.147602],
                            [0.004733, 0.691367, 0.303900]]),
}  # fmt: skip

_XYZ = np.array([[0.4124564, 0.3575761, 0.1804375],
                 [0.2126729, 0.7151522, 0.0721750],
                 [0.0193339, 0.1191920, 0.9503041]])  # fmt: skip
_WHITE = _XYZ @ np.ones(3)


def hex_to_rgb(colours: list[str]) -> np.ndarray:
    """``#RRGGBB`` → sRGB in [0, 1], one row per colour."""
    return np.array([[int(c[i : i + 2], 16) / 255 for i in (1, 3, 5)] for c in colours])


def to_linear(rgb: np.ndarray) -> np.ndarray:
    rgb = np.asarray(rgb, dtype=float)
    return np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)


def simulate(rgb: np.ndarray, kind: str | None) -> np.ndarray:
    """Linear RGB as a dichromat of ``kind`` sees sRGB ``rgb`` (None: as is)."""
    lin = to_linear(rgb)
    return lin if kind is None else np.clip(lin @ CVD[kind].T, 0.0, 1.0)


def lab(linear: np.ndarray) -> np.ndarray:
    """Linear RGB → CIELAB (D65)."""
    t = (linear @ _XYZ.T) / _WHITE
    d = 6 / 29
    f = np.where(t > d**3, np.cbrt(t), t / (3 * d * d) + 4 / 29)
    return np.stack([116 * f[:, 1] - 16, 500 * (f[:, 0] - f[:, 1]), 200 * (f[:, 1] - f[:, 2])], 1)


def ciede2000(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """CIEDE2000 difference of CIELAB colours ``a`` and ``b`` (broadcast rows)."""
    L1, a1, b1 = np.moveaxis(np.asarray(a, dtype=float), -1, 0)
    L2, a2, b2 = np.moveaxis(np.asarray(b, dtype=float), -1, 0)
    C1, C2 = np.hypot(a1, b1), np.hypot(a2, b2)
    Cm = (C1 + C2) / 2
    G = 0.5 * (1 - np.sqrt(Cm**7 / (Cm**7 + 25.0**7)))
    a1p, a2p = (1 + G) * a1, (1 + G) * a2
    C1p, C2p = np.hypot(a1p, b1), np.hypot(a2p, b2)
    h1p = np.degrees(np.arctan2(b1, a1p)) % 360
    h2p = np.degrees(np.arctan2(b2, a2p)) % 360
    dLp = L2 - L1
    dCp = C2p - C1p
    dh = h2p - h1p
    dh = np.where(dh > 180, dh - 360, np.where(dh < -180, dh + 360, dh))
    dh = np.where(C1p * C2p == 0, 0.0, dh)
    dHp = 2 * np.sqrt(C1p * C2p) * np.sin(np.radians(dh / 2))
    Lpm = (L1 + L2) / 2
    Cpm = (C1p + C2p) / 2
    hsum = h1p + h2p
    hpm = np.where(
        C1p * C2p == 0,
        hsum,
        np.where(np.abs(h1p - h2p) <= 180, hsum / 2,
                 np.where(hsum < 360, (hsum + 360) / 2, (hsum - 360) / 2)),
    )  # fmt: skip
    cos = lambda deg: np.cos(np.radians(deg))  # noqa: E731
    T = (
        1
        - 0.17 * cos(hpm - 30)
        + 0.24 * cos(2 * hpm)
        + 0.32 * cos(3 * hpm + 6)
        - 0.20 * cos(4 * hpm - 63)
    )
    dtheta = 30 * np.exp(-(((hpm - 275) / 25) ** 2))
    Rc = 2 * np.sqrt(Cpm**7 / (Cpm**7 + 25.0**7))
    Sl = 1 + 0.015 * (Lpm - 50) ** 2 / np.sqrt(20 + (Lpm - 50) ** 2)
    Sc = 1 + 0.045 * Cpm
    Sh = 1 + 0.015 * Cpm * T
    Rt = -np.sin(np.radians(2 * dtheta)) * Rc
    return np.sqrt((dLp / Sl) ** 2 + (dCp / Sc) ** 2 + (dHp / Sh) ** 2
                   + Rt * (dCp / Sc) * (dHp / Sh))  # fmt: skip


def min_pairwise(colours: list[str], kind: str | None) -> tuple[float, tuple[str, str]]:
    """The smallest CIEDE2000 difference between two of ``colours`` as seen under ``kind``,
    and that pair."""
    L = lab(simulate(hex_to_rgb(colours), kind))
    d = ciede2000(L[:, None, :], L[None, :, :])
    np.fill_diagonal(d, np.inf)
    i, j = np.unravel_index(np.argmin(d), d.shape)
    return float(d[i, j]), (colours[i], colours[j])
