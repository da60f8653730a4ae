"""The figures need matplotlib (the ``[figures]`` extra): imported first by the package, this
raises :class:`~distprivacy.exceptions.MissingExtraError` (one line naming the extra) before any
module of the package imports matplotlib. The package itself is imported only to draw."""

from __future__ import annotations

from distprivacy.exceptions import require_extra

require_extra("matplotlib", "drawing the figures")
