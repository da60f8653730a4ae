"""docs/extending.md: a Gaussian mechanism in one file (issue 22) — the worked example runs as
written, is registered, verified by the shared calibrator and unit-equivariant; the registry
refuses what would let a mechanism print an unchecked guarantee or shadow another."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import distprivacy as dp
from distprivacy.exceptions import DistPrivacyError
from distprivacy.mechanisms import MECHANISMS, GaussianMechanism, make_mechanism
from distprivacy.mechanisms import base as mech_base
from distprivacy.targets import EpsDelta, met_by

DOC = Path(__file__).resolve().parents[2] / "docs" / "extending.md"


@pytest.fixture
def registry(monkeypatch):
    """A private copy of the registry for the test (what it registers is forgotten after)."""
    monkeypatch.setattr(mech_base, "_REGISTRY", dict(mech_base._REGISTRY))


def _example() -> str:
    text = DOC.read_text(encoding="utf-8")
    section = text[: text.index("## A new statistic kind is one class")]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 1
    return blocks[0]


def test_the_worked_example_runs(registry, adult_dir, monkeypatch, capsys):
    monkeypatch.setenv("DISTPRIVACY_DATA", str(adult_dir))
    ns: dict = {"__name__": "__extending__"}
    exec(compile(_example(), "docs/extending.md", "exec"), ns)
    assert capsys.readouterr().out.rstrip().endswith("True")
    assert "ScaledExpM-G" in MECHANISMS and list(MECHANISMS)[-1] == "ScaledExpM-G"
    cal = ns["cal"]
    assert cal.mechanism == "ScaledExpM-G" and cal.verified
    assert met_by(EpsDelta(0.5, 1e-3), cal.guarantee)
    assert not met_by(EpsDelta(0.5, 1e-5), cal.guarantee)  # a wrong target is caught
    # Rescale one statistic (×1000): its noise SD scales, the others' and the guarantee do not.
    model = ns["model"]
    scaled = dp.GaussianModel(
        [str(t) for t in model.thetas_],
        model.means_ * np.array([1000.0, 1, 1]),
        model.covariances_ * np.outer([1000.0, 1, 1], [1000.0, 1, 1]),
        [(str(model.thetas_[i]), str(model.thetas_[j])) for i, j in model.pair_indices_],
        list(model.statistic_names_),
    )
    again = make_mechanism("ScaledExpM-G", EpsDelta(0.5, 1e-3)).calibrate(scaled)
    ratio = np.asarray(again.noise_sd) / np.asarray(cal.noise_sd)
    assert ratio == pytest.approx([1000.0, 1.0, 1.0], rel=1e-6)
    assert again.guarantee.mu == pytest.approx(cal.guarantee.mu, rel=1e-9)


class _Half(GaussianMechanism):
    """A test mechanism: DauM-like one-direction noise is not needed; isotropic, σ = Δ/μ."""

    name = "Half-G"
    theorem = "test: Cor. A.1"

    def propose(self, model, mu, convention):
        from distprivacy.noise import NoiseDistribution

        d2 = float(np.linalg.norm(model.mean_differences(), axis=1).max())
        return dp.Proposal.of(NoiseDistribution.isotropic("gaussian", model.dim, d2 / mu))


def test_registry_refuses_clashes_and_incomplete_mechanisms(registry):
    dp.register_mechanism(_Half)
    dp.register_mechanism(_Half)  # the same class again: fine (a reload)

    class Other(_Half):
        name = "Half-G"
        theorem = "another"

    class Lower(_Half):
        name = "half-g"
        theorem = "another"

    class NoTheorem(_Half):
        name = "NoTheorem-G"

    class Abstract(GaussianMechanism):
        name = "Abstract-G"
        theorem = "none"

    for cls, msg in (
        (Other, "already registered"),
        (Lower, "case-insensitive"),
        (NoTheorem, "theorem"),
        (Abstract, "does not implement propose"),
        (int, "Mechanism subclass"),
    ):
        with pytest.raises(DistPrivacyError, match=msg):
            dp.register_mechanism(cls)
    assert make_mechanism("half-g", EpsDelta(1.0, 1e-3)).name == "Half-G"


def test_builtin_listing_order_is_unchanged():
    assert list(MECHANISMS)[:13] == [
        "ExpM-L", "DirM-L", "ExpM-G", "DirM-G", "EigM-G", "DauM-G", "OptM-G", "NoNoise",
        "Wasserstein", "ApproxWasserstein", "ApproxWasserstein-Bounded", "GroupDP-L", "GroupDP-G",
    ]  # fmt: skip
