"""Issue 23: the words a steward signs — what is protected, what is released, the guarantee as
an attack statement — computed from the spec and the guarantee, first in the CLI's output."""

from __future__ import annotations

import pytest

from distprivacy.cli import main
from distprivacy.guarantee import Guarantee
from distprivacy.profiles import gdp_accuracy
from distprivacy.spec import ProtectionSpec
from distprivacy.wording import guarantee_sentence, protected_sentence, statement


def test_the_protected_shares_in_words():
    spec = ProtectionSpec("afam==yes", n=500, values=[0.10, 0.15, 0.20])
    assert protected_sentence(spec) == (
        "whether records with `afam==yes` are 10 %, 15 % or 20 % of these 500 records"
    )
    near = ProtectionSpec("afam==yes", n=500, values=[0.1, 0.15, 0.2], pairs_within=0.05)
    assert "at most 5 % apart" in protected_sentence(near)


def test_the_guarantee_as_an_attack_statement():
    g = Guarantee(epsilon=1.0, delta=1e-3, theorem="t", mu=0.3, curve="gdp", verified=True)
    text = guarantee_sentence(g)
    acc = 100 * gdp_accuracy(0.3)
    assert text.startswith(
        "no one seeing this release can guess which of those shares is true with more than "
        f"{acc:.1f} % accuracy, where 50 % is a coin flip"
    )
    assert "(ε, δ) = (1, 0.001)" in text and "verified" in text
    none = Guarantee(epsilon=float("inf"), delta=1.0, theorem="t", max_attack_accuracy=1.0)
    assert "nothing is hidden" in guarantee_sentence(none)


def test_statement_names_the_statistics():
    spec = ProtectionSpec("income==>50K", n=100, values=[0.45, 0.55])
    g = Guarantee(epsilon=1.0, delta=1e-3, theorem="t", mu=0.3, curve="gdp")
    s = statement(spec, ["mean(age)", "proportion(sex==Female)"], g, released=True)
    assert s.startswith(
        "This release publishes the mean of age and the share of records with sex==Female"
    )
    assert "It keeps secret whether records with `income==>50K` are 45 % or 55 %" in s


@pytest.mark.slow
@pytest.mark.parametrize("command", ["release", "calibrate"])
def test_the_cli_opens_with_the_words(capsys, adult_dir, command):
    args = [command, "--data", str(adult_dir), "--modeling", "exact", "--mechanism", "DauM-G"]
    if command == "release":
        args += ["--seed", "1"]
    assert main(args) == 0
    out = capsys.readouterr().out
    first = out.strip().splitlines()[0]
    # A release without --target is a demonstration, and its headline says so (issue 33).
    assert first.startswith("This DEMONSTRATION publishes" if command == "release" else "Releasing")
    assert "where 50 % is a coin flip" in " ".join(out.split())


def test_audit_and_ledger_statements_say_what_happened():
    from types import SimpleNamespace as Result

    from distprivacy.spec import ProtectionSpec
    from distprivacy.targets import GDP, EpsDelta, MaxAttackAccuracy
    from distprivacy.wording import audit_statement, ledger_statement

    spec = ProtectionSpec("income==>50K", n=100, values=[0.45, 0.55])
    held = [Result(mechanism="DauM-G", refuted=False, best_accuracy=0.531)]
    text = audit_statement(spec, held, 2000)
    assert "2,000 real datasets of 100 records" in text and "53.1 %" in text
    assert "kept its promise" in text and "never prove" in text
    broken = [*held, Result(mechanism="NoNoise", refuted=True, best_accuracy=0.97)]
    text = audit_statement(spec, broken, 2000)
    assert (
        "NoNoise did worse than promised" in text and "97.0 % of the time (against NoNoise)" in text
    )
    # Issue 33: 0.573 [0.557, 0.588] against a bound of 0.562 is "not significantly above",
    # never "no attack beat the accuracy its guarantee allows".
    attack = Result(attack="likelihood-ratio", accuracy=0.573, accuracy_interval=(0.557, 0.588))
    close = [Result(mechanism="EigM-G", refuted=False, best_accuracy=0.573, accuracy_bound=0.562,
                    attacks=(attack,))]  # fmt: skip
    text = audit_statement(spec, close, 2000)
    assert "above the 56.2 % its guarantee allows though not significantly" in text
    assert "55.7 % to 58.8 %" in text and "no attack came above" not in text
    assert "kept its promise" not in text and "no promise was refuted" in text
    text = ledger_statement(GDP(0.5), 3, 1)
    assert "3 releases of 1 dataset;" in text and "59.9 % accuracy (μ = 0.5)" in text
    text = ledger_statement(EpsDelta(2.0, 1e-5), 1, 2)
    assert "1 release of 2 datasets" in text and "(2, 1e-05)" in text
    text = ledger_statement(MaxAttackAccuracy(0.6), 1, 2)
    assert "more than 60.0 % accuracy" in text
