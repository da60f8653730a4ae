"""Tests of ``distprivacy attribute gaussian`` (in-process through ``distprivacy.cli.main``)."""

from __future__ import annotations

import json

import pytest
from cli_commands import BP

from distprivacy.cli import main


def run(capsys: pytest.CaptureFixture[str], args: list[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_paper_blood_pressure_query_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, [*BP, "--rule", "classic", "--json"])
    assert code == 0
    d = json.loads(out)
    assert d["sensitivity"] == pytest.approx(2.5)
    assert d["conditional_variance"] == pytest.approx(2.0)
    assert d["noise_variance"] == pytest.approx(87.13623537870431, rel=1e-9)
    assert d["rule"] == "classic" and d["epsilon"] == 1.0 and d["delta"] == 0.001
    assert d["framework"]["n"] == 50
    assert "released" not in d


def test_release_with_seed_is_reproducible(capsys: pytest.CaptureFixture[str]) -> None:
    args = [*BP, "--value", "102.18", "--seed", "4", "--json"]
    _, out1, _ = run(capsys, args)
    _, out2, _ = run(capsys, args)
    a, b = json.loads(out1), json.loads(out2)
    assert a["released"] == b["released"] != 102.18
    assert a["secure_noise"] is False


def test_human_output_names_the_theorem_and_guarantee(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, BP)
    assert code == 0
    assert "Alg. 1" in out and "Δ = 2.5" in out and "μ =" in out


def test_no_noise_for_uncorrelated_attribute(capsys: pytest.CaptureFixture[str]) -> None:
    args = [a.replace("blood_pressure", "temperature") for a in BP]
    args = [a.replace("=6:10", "=0:0.3").replace("=100", "=4") for a in args]
    # σ² = 0: the release would print the true value, refused unless asked for explicitly.
    code, out, err = run(capsys, [*args, "--value", "98.58", "--json"])
    assert code == 2 and "--allow-exact" in err and out == ""
    code, out, _ = run(capsys, [*args, "--value", "98.58", "--json", "--allow-exact"])
    assert code == 0
    d = json.loads(out)
    assert d["adds_noise"] is False and d["released"] == 98.58
    assert d["secure_noise"] is True


def test_problem_file_and_vector_query(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    f = tmp_path / "problem.json"
    f.write_text(
        json.dumps(
            {
                "sensitive": "gender",
                "query": ["w", "bp"],
                "n": 50,
                "secrets": [0.4, 0.6],
                "attributes": ["gender", "w", "bp"],
                "covariances": [[0.25, -4, 1.5], [-4, 300, 0], [1.5, 0, 100]],
            }
        )
    )
    code, out, _ = run(capsys, ["attribute", "gaussian", "--problem", str(f), "--json"])
    assert code == 0
    d = json.loads(out)
    assert d["statistics"] == ["mean(w)", "mean(bp)"]
    assert d["sensitivity"] == pytest.approx(0.2 * (16**2 + 6**2) ** 0.5)
    # the command line overrides the file
    code, out, _ = run(
        capsys, ["attribute", "gaussian", "--problem", str(f), "--query", "bp", "--json"]
    )
    assert json.loads(out)["sensitivity"] == pytest.approx(0.2 * 6)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--epsilon", "0"], "epsilon must be a positive number"),
        (["--delta", "1.5"], "delta must lie in (0, 1)"),
        (["--residual-variance", "blood_pressure=-1"], "must be positive"),
        (["--secret", "(0.31,0.315)"], "no distribution in Θ can produce"),
        (["--value", "1,2"], "expected (1,)"),
        (["--slope", "blood_pressure"], "ATTRIBUTE=VALUE"),
    ],
)
def test_bad_input_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    code, out, err = run(capsys, [*BP, *extra])
    assert code == 2
    assert err.startswith("error: ") and message in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err + out


def test_bad_covariance_and_missing_file(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["attribute", "gaussian", "--sensitive", "g", "--query", "w", "-n", "5"]
    base += ["--secret", "0", "--secret", "1", "--attributes", "g,w"]
    code, _, err = run(capsys, [*base, "--covariance", "1,2;2,1"])
    assert code == 2 and "not positive definite" in err
    code, _, err = run(capsys, [*base, "--covariance", "1,0.2,0;0.2,1,0"])
    assert code == 2 and "expected (2, 2)" in err
    code, _, err = run(capsys, ["attribute", "gaussian", "--problem", "/nonexistent.toml"])
    assert code == 2 and "not found" in err


def test_wasserstein_mechanism_option(capsys: pytest.CaptureFixture[str]) -> None:
    """The Pufferfish Wasserstein Mechanism on the same problem: W = |slope| d(U) = 2.5."""
    code, out, _ = run(capsys, [*BP, "--mechanism", "wasserstein", "--json"])
    assert code == 0
    d = json.loads(out)
    assert d["mechanism"] == "Pufferfish-Wasserstein" and d["delta"] == 0.0
    assert d["sensitivity"] == pytest.approx(2.5) and d["laplace_scale"] == pytest.approx(2.5)
    code, out, _ = run(capsys, [*BP, "--mechanism", "wasserstein", "--value", "102.18"])
    assert code == 0 and "Laplace, scale b = W/ε = 2.5" in out and "secure noise" in out


def test_quilt_command_is_registered(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, ["attribute", "--help"])
    assert code == 0 and "gaussian" in out and "quilt" in out
