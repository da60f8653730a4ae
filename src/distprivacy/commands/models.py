"""``distprivacy models``: distribution inference on trained models (Suri & Evans)."""

from __future__ import annotations

import click


@click.group(name="models")
def models() -> None:
    """Distribution inference on trained models: train populations, attack, defend."""
