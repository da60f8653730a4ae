"""``audit`` shows its progress on a terminal — one step per mechanism's datasets and per attack,
named — and nothing when its output is piped (issue 23, item 6)."""

from __future__ import annotations

import io

from rich.console import Console

from distprivacy.cli import main

AUDIT = ["audit", "--mechanism", "DauM-G", "--mechanism", "ExpM-L", "--samples", "200",
         "--audit-samples", "80", "--attack", "logistic",
         "--attack", "likelihood-ratio"]  # fmt: skip


def test_piped_audit_prints_no_bar(adult_dir, monkeypatch, capsys):
    monkeypatch.setenv("DISTPRIVACY_DATA", str(adult_dir))
    assert main(AUDIT) == 0
    cap = capsys.readouterr()
    assert "Empirical lower bounds on ε" in cap.out
    assert cap.err == ""
    assert "auditing" not in cap.out and "━" not in cap.out.split("Audit:")[0]


def test_terminal_audit_names_each_step(adult_dir, monkeypatch, capsys):
    import distprivacy.commands._common as common

    monkeypatch.setenv("DISTPRIVACY_DATA", str(adult_dir))
    screen = io.StringIO()
    terminal = Console(file=screen, force_terminal=True, width=120, color_system=None)
    monkeypatch.setattr(common, "err_console", terminal)
    assert main(AUDIT) == 0
    shown = screen.getvalue()
    # Every step: the datasets of each mechanism's pair, then each attack; 2 × (1 + 2) steps.
    for mech in ("DauM-G", "ExpM-L"):
        assert f"auditing {mech}: drawing 80 datasets at each value" in shown
        for attack in ("logistic", "likelihood-ratio"):
            assert f"auditing {mech}: {attack} attack" in shown
    assert "/6" in shown
    assert "Empirical lower bounds on ε" in capsys.readouterr().out
