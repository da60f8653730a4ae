"""``distprivacy attribute``: attribute privacy (Zhang, Ohrimenko & Cummings, FAccT 2022)."""

from __future__ import annotations

import click


@click.group(name="attribute")
def attribute() -> None:
    """Attribute privacy: the attribute-private Gaussian and Markov quilt mechanisms."""
