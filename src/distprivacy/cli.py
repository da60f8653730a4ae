"""Command-line interface: the ``distprivacy`` group, its commands and the entry point.

The commands live in :mod:`distprivacy.commands` (each parses, calls the library and prints);
this module registers them and is the one place exceptions become messages (:func:`main`):
errors in the input are printed as one line (``error: ...``) on stderr with exit status 2.
"""

from __future__ import annotations

import importlib
import sys
import warnings

import click

from distprivacy._version import __version__
from distprivacy.commands._flags import to_flags
from distprivacy.exceptions import EXTRAS, DistPrivacyError, MissingExtraError

#: Every command: the module and name that define it, and the line `distprivacy --help` shows
#: for it — so that the help (and any one command) imports only what it needs.
COMMANDS: dict[str, tuple[str, str]] = {
    "calibrate": (
        "distprivacy.commands.calibrate:calibrate",
        "Show every applicable mechanism's noise and expected L2 error side by side.",
    ),
    "release": (
        "distprivacy.commands.release:release",
        "Release the statistics of a dataset with the chosen mechanism (or a saved plan).",
    ),
    "audit": (
        "distprivacy.commands.audit:audit",
        "Attack each mechanism on real samples of F and bound its ε from below.",
    ),
    "ledger": (
        "distprivacy.commands.ledger:ledger",
        "A privacy ledger: every release recorded before it is shown, with a budget.",
    ),
    "serve": (
        "distprivacy.commands.serve:serve",
        "Run the release service: it holds the ledger, keys and data; users log in.",
    ),
    "reproduce": (
        "distprivacy.commands.reproduce:reproduce",
        "Reproduce the papers' tables and figures (and the comparisons beyond them).",
    ),
    "attribute": (
        "distprivacy.commands.attribute:attribute",
        "Attribute privacy: the attribute-private Gaussian and Markov quilt mechanisms.",
    ),
    "local": (
        "distprivacy.commands.local:local",
        "Local distribution privacy: obfuscation mechanisms and their exact DistP.",
    ),
    "models": (
        "distprivacy.commands.models:models",
        "Distribution inference on trained models: train populations, attack them.",
    ),
}


class LazyGroup(click.Group):
    """A group whose commands are imported when one is run or its help is asked for
    (``distprivacy --help`` imports none of them)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*COMMANDS, *(n for n in super().list_commands(ctx) if n not in COMMANDS)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in COMMANDS and cmd_name not in self.commands:
            module, attr = COMMANDS[cmd_name][0].split(":")
            self.add_command(getattr(importlib.import_module(module), attr), cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][1]) for name in COMMANDS]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="distprivacy")
def cli() -> None:
    """Release dataset statistics with (ε, δ)-distribution privacy for a global property."""


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _error(message: str) -> int:
    click.echo(f"error: {_one_line(to_flags(message))}", err=True)
    return 2


def main(argv: list[str] | None = None) -> int:
    """Entry point: the one place exceptions become messages.

    * :class:`DistPrivacyError` (bad input, an impossible request, a memory estimate over the
      limit of :mod:`distprivacy.resources`, an exact release without ``--allow-exact``) →
      ``error: …`` on one line, exit 2;
    * ``MemoryError`` / ``OverflowError`` / ``FloatingPointError`` / ``ZeroDivisionError`` →
      one line naming what ran out or overflowed, exit 2;
    * click usage errors → one line with the command's ``--help``, exit 2;
    * a missing optional dependency → one line naming its extra (``pip install
      'distprivacy[EXTRA]'``), exit 2.

    NumPy's RuntimeWarnings are silenced here (the results they warn about are checked for
    finiteness where they are computed); other warnings are printed after the command as one
    ``warning: …`` line each, and not at all when it fails, so an error is the only line.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            # Outside standalone mode click returns the code of a click.exceptions.Exit.
            rv = cli.main(args=argv, prog_name="distprivacy", standalone_mode=False)
        except click.exceptions.Exit as e:
            rv = int(e.exit_code)
        except click.exceptions.Abort:
            click.echo("error: aborted", err=True)
            return 1
        except click.UsageError as e:
            hint = " ".join(["distprivacy", *_cmd(argv), "--help"])
            return _error(f"{e.format_message()} (see {hint})")
        except click.ClickException as e:
            return _error(e.format_message())
        except DistPrivacyError as e:
            return _error(str(e) or type(e).__name__)
        except ModuleNotFoundError as e:  # an optional dependency no library check named
            top = (e.name or "").partition(".")[0]
            if top not in EXTRAS:
                raise
            return _error(str(MissingExtraError(" ".join(["distprivacy", *_cmd(argv)]), top)))
        except MemoryError as e:
            detail = f" ({_one_line(str(e))})" if str(e) else ""
            return _error(
                f"out of memory: the request is too large for this machine{detail}; ask for "
                "fewer samples, a smaller grid or smaller sizes"
            )
        except ArithmeticError as e:  # OverflowError, FloatingPointError, ZeroDivisionError
            kind = type(e).__name__
            detail = f": {_one_line(str(e))}" if str(e) else ""
            return _error(
                f"numeric failure ({kind}{detail}); a parameter is too large or too small for "
                "double precision"
            )
    seen: set[str] = set()
    for w in caught:
        text = _one_line(str(w.message))
        if text not in seen and not issubclass(w.category, DeprecationWarning):
            seen.add(text)
            click.echo(f"warning: {to_flags(text)}", err=True)
    return rv if isinstance(rv, int) else 0


def _cmd(argv: list[str] | None) -> list[str]:
    args = sys.argv[1:] if argv is None else argv
    return [args[0]] if args and args[0] in COMMANDS else []


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

__all__ = ["COMMANDS", "cli", "main"]
