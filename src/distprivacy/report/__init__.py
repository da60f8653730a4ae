"""HTML reports a data steward can read and sign (issue 23, item 5).

``distprivacy calibrate|release|audit|ledger show|models audit --report FILE.html`` write one
self-contained HTML file — inline CSS and SVG, no script, nothing loaded from anywhere — that
opens with the steward's words (:mod:`distprivacy.wording`), then shows per statistic the
noise (and for a release the released value with its 95 % noise interval), the
privacy–utility curve (each applicable mechanism recalibrated at a log-spaced grid of ε, the
chosen point ringed), the bound on any attacker's accuracy against ε, the assumptions with
their measured checks, and for a ledger the budget spent per dataset after each release;
``models audit``'s report shows each attack's measured accuracy against a coin flip
(:func:`models_audit_report`).

In Python::

    from distprivacy.report import calibrate_report, sweep, write_report
    html = calibrate_report(cals, model=model, context={}, best="DauM-G",
                            sweep=sweep(model, cals, delta=1e-3))
    write_report("report.html", html, private=True)
"""

from __future__ import annotations

from pathlib import Path

from distprivacy.report._curves import Sweep, epsilon_grid, sweep
from distprivacy.report._interval import noise_halfwidths
from distprivacy.report._models_page import models_audit_report
from distprivacy.report._pages import audit_report, calibrate_report, ledger_report, release_report

__all__ = [
    "Sweep",
    "audit_report",
    "calibrate_report",
    "epsilon_grid",
    "ledger_report",
    "models_audit_report",
    "noise_halfwidths",
    "release_report",
    "sweep",
    "write_report",
]


def write_report(path: str | Path, html: str, *, private: bool, public: bool = False) -> Path:
    """Write a report atomically; mode 0600 when ``private`` (it holds exact statistics of
    the data, or a ledger's contents), 0644 when ``public`` (a page to publish: readable by
    all whatever the umask), else the usual mode. A path that exists and is not a regular
    file is never written over (:func:`distprivacy.outputs.atomic_write`)."""
    from distprivacy.outputs import write_text

    return write_text(path, html, mode=0o600 if private else 0o644 if public else None)
