"""The shared options as one typed value (issue 22.5): built once from click, validated at the
boundary, the target typed, the user's choices told apart from the defaults."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from distprivacy.commands._common import common_options
from distprivacy.commands._settings import Settings
from distprivacy.exceptions import DistPrivacyError
from distprivacy.request import GaussianOptions, MechanismSpec
from distprivacy.targets import GDP, EpsDelta, MaxAttackAccuracy


def _settings(*args: str) -> Settings:
    got: list[Settings] = []

    @click.command()
    @common_options
    @click.pass_context
    def cmd(ctx: click.Context, **p):
        got.append(Settings.from_click(ctx, p))

    res = CliRunner().invoke(cmd, list(args), catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return got[0]


def test_defaults_are_typed_and_not_given():
    s = _settings()
    assert s.target() == EpsDelta(1.0, 1e-3)
    assert s.given == frozenset() and not s.was_given("epsilon")
    assert s.seed is None and s.model_seed == 0 and s.show
    assert s.options() == GaussianOptions("exact", "fitted", "scaled")
    assert s.spec("DauM-G") == MechanismSpec("DauM-G", EpsDelta(1.0, 1e-3), s.options())
    assert {**s.modelling().to_dict(), **s.options().to_dict()} == {
        "requested": "auto", "samples": 1000, "seed": 0, "engine": "auto",
        "calibration": "exact", "covariances": "fitted", "utility": "scaled",
    }  # fmt: skip


def test_targets_options_and_what_the_user_gave():
    s = _settings("--target-mu", "0.5", "--delta", "1e-5", "--seed", "3", "--json",
                  "--covariances", "POOLED", "--values", "0.4,0.6")  # fmt: skip
    assert s.target() == GDP(0.5)
    assert s.options().report_delta == 1e-5  # the point at which ε is reported
    assert s.covariances == "pooled" and s.values == "0.4,0.6"
    assert s.model_seed == 3 and not s.show
    assert {"target_mu", "delta", "seed", "as_json", "covariances", "values_"} <= s.given
    assert not s.was_given("epsilon")
    acc = _settings("--max-attack-accuracy", "0.55")
    assert acc.target() == MaxAttackAccuracy(0.55)
    assert acc.to_dict()["max_attack_accuracy"] == 0.55


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["--target-mu", "0.5", "--max-attack-accuracy", "0.55"], "not both"),
        (["--epsilon", "1", "--target-mu", "0.5"], "--epsilon or a target"),
        (["--target-mu", "0.5", "--calibration", "classic"], "--calibration exact"),
        (["--calibration", "loose"], "loose"),
        (["--target-mu", "-1"], "μ"),
    ],
)
def test_refused_at_the_boundary(args, match):
    with pytest.raises(DistPrivacyError, match=match):
        _settings(*args)
