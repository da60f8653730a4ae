"""Command groups of the other frameworks (thin: parse, call the library, print).

Each module defines one click group that :mod:`distprivacy.cli` registers:
``attribute`` (Zhang, Ohrimenko & Cummings), ``local`` (Kawamoto & Murakami) and
``models`` (Suri & Evans). Bad input raises :class:`distprivacy.DistPrivacyError`, which the
entry point prints as one line with exit status 2.
"""

import click

#: ``--data DIR``: where the Adult files are (default: fetched, verified and cached).
adult_data_option = click.option(
    "--data",
    type=click.Path(),
    default=None,
    help="Directory with adult.data/adult.test (default: fetched and cached).",
)
