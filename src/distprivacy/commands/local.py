"""``distprivacy local``: local distribution privacy (Kawamoto & Murakami, ESORICS 2019)."""

from __future__ import annotations

import click


@click.group(name="local")
def local() -> None:
    """Local distribution privacy: obfuscation mechanisms and their exact DistP."""
