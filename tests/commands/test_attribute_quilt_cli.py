"""``distprivacy attribute quilt``: the command against the library, files, releases, errors."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from distprivacy.attribute.markov_quilt import (
    AttributeQuiltMechanism,
    max_influence,
    sample_school_records,
    school_networks,
)
from distprivacy.commands.attribute_quilt import quilt
from distprivacy.exceptions import DistPrivacyError

SCHOOL = ["--network", "school", "--secret", "income", "--epsilon", "1"]


def run(args):
    return CliRunner().invoke(quilt, args)


def run_json(args):
    res = run([*args, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def school_theta_file(tmp_path, suffix=".json"):
    nets = school_networks()
    shared = nets[0].to_dict()
    spec = {
        "domains": shared["domains"],
        "parents": shared["parents"],
        "theta": [{"name": n.name, "cpts": n.to_dict()["cpts"]} for n in nets],
    }
    path = tmp_path / f"school{suffix}"
    path.write_text(json.dumps(spec))
    return path


def test_height_count_prints_no_noise():
    res = run([*SCHOOL, "--query", "count:height>66", "--n-records", "200"])
    assert res.exit_code == 0, res.output
    assert "noise: none — F(X) is released as it is" in res.output
    assert "Q={gender}" in res.output and "Algorithm 2" in res.output
    out = run_json([*SCHOOL, "--query", "count:height>66", "--n-records", "200"])
    assert out["scale"] == 0 and out["theta"] == ["θ_weak", "θ_strong"]


def test_sat_count_with_the_papers_quilt_matches_the_library():
    args = [*SCHOOL, "--query", "count:height>66&sat>1300", "--n-records", "200"]
    out = run_json([*args, "--quilt", "income=gender"])
    e = max_influence(school_networks(), "income", ["gender"]).value
    assert out["scale"] == pytest.approx(200 / (1 - e), rel=1e-12)
    (sec,) = out["secrets"]
    assert sec["pinned"] and sec["chosen"]["quilt"] == ["gender"]
    assert sec["chosen"]["max_influence"] == pytest.approx(e)
    auto = run_json(args)  # Algorithm 2's minimum: the whole-network bound n / ε here
    assert auto["scale"] == pytest.approx(200.0) and auto["secrets"][0]["chosen"]["trivial"]


@pytest.mark.parametrize("suffix", [".json", ".toml"])
def test_network_files_give_the_same_calibration(tmp_path, suffix):
    path = school_theta_file(tmp_path, ".json")
    if suffix == ".toml":
        # TOML: the same content, written by hand as inline tables and nested arrays
        spec = json.loads(path.read_text())
        lines = [
            "[domains]",
            *(f"{k} = {v}" for k, v in spec["domains"].items()),
            "[parents]",
            *(f"{k} = {json.dumps(v)}" for k, v in spec["parents"].items()),
        ]
        for th in spec["theta"]:
            lines += ["[[theta]]", f'name = "{th["name"]}"', "[theta.cpts]"]
            lines += [f"{k} = {json.dumps(v)}" for k, v in th["cpts"].items()]
        path = tmp_path / "school.toml"
        path.write_text("\n".join(lines) + "\n")
    args = ["--query", "count:height>66&sat>1300", "--secret", "income", "--epsilon", "1"]
    from_file = run_json(["--network", str(path), *args, "--n-records", "200"])
    builtin = run_json(["--network", "school", *args, "--n-records", "200"])
    assert from_file["scale"] == builtin["scale"]
    assert from_file["secrets"] == builtin["secrets"]


def test_release_with_data_and_seed_is_reproducible(tmp_path):
    data, _ = sample_school_records(150, random_state=9)
    csv = tmp_path / "school.csv"
    data.to_csv(csv, index=False)
    args = [*SCHOOL, "--query", "count:height>66&sat>1300", "--quilt", "income=gender"]
    args += ["--data", str(csv), "--seed", "5"]
    first, second = run_json(args), run_json(args)
    assert first["release"] == second["release"] and first["n_records"] == 150
    mech = AttributeQuiltMechanism(
        school_networks(),
        query="count:height>66&sat>1300",
        secrets="income",
        epsilon=1.0,
        quilts={"income": ["gender"]},
    )
    want = mech.release(data, random_state=5).value
    assert first["release"]["value"] == pytest.approx(want, rel=1e-12)
    assert not first["release"]["secure"]
    text = run(args)
    assert text.exit_code == 0 and "seeded noise, seed 5" in text.output
    exact_args = [*SCHOOL, "--query", "count:height>66", "--data", str(csv), "--no-candidates"]
    refused = run(exact_args)  # no noise: the true count only with --allow-exact (issue 13)
    assert refused.exit_code != 0 and "--allow-exact" in str(refused.exception)
    exact = run([*exact_args, "--allow-exact"])
    assert f"release: {int((data['height'] > 66).sum())} (no noise added)" in exact.output


def test_fallback_warning_and_refusal():
    args = [*SCHOOL[:-1], "0.04", "--query", "count:height>66", "--n-records", "100"]
    res = run(args)
    assert res.exit_code == 0
    assert "warning: income: no Markov quilt of 'income' has max-influence below ε" in res.output
    assert "fell back to the whole-network bound" in res.output
    strict = run([*args, "--no-fallback"])
    assert isinstance(strict.exception, DistPrivacyError)
    assert "raise ε or allow the whole-network bound" in str(strict.exception)
    assert "\n" not in str(strict.exception)


def _net_file(tmp_path, spec):
    path = tmp_path / "net.json"
    path.write_text(json.dumps(spec))
    return str(path)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--query", "count:height>66"], "give --n-records N"),
        (["--query", "count:height>66", "--n-records", "5", "--quilt", "gender"], "--quilt"),
        (["--query", "count:shoe>1", "--n-records", "5"], "not an attribute of the network"),
        (["--query", "count:height>66", "--data", "/nonexistent.csv"], "not found"),
    ],
)
def test_bad_options_are_one_line_errors(extra, message):
    res = run([*SCHOOL, *extra])
    assert isinstance(res.exception, DistPrivacyError)
    assert message in str(res.exception) and "\n" not in str(res.exception)


def test_bad_network_files(tmp_path):
    cyclic = {
        "domains": {"a": [0, 1], "b": [0, 1]},
        "parents": {"a": ["b"], "b": ["a"]},
        "cpts": {"a": [[0.5, 0.5], [0.5, 0.5]], "b": [[0.5, 0.5], [0.5, 0.5]]},
    }
    bad_row = {
        "domains": {"a": [0, 1], "b": [0, 1]},
        "parents": {"b": ["a"]},
        "cpts": {"a": [0.5, 0.5], "b": [[0.5, 0.5], [0.3, 0.3]]},
    }
    args = ["--query", "count:b>0", "--secret", "a", "--epsilon", "1", "--n-records", "10"]
    res = run(["--network", _net_file(tmp_path, cyclic), *args])
    assert "the graph has a cycle" in str(res.exception)
    res = run(["--network", _net_file(tmp_path, bad_row), *args])
    assert "CPT of node 'b' row (a=1) sums to 0.6, not 1" in str(res.exception)


def test_data_size_disagreeing_with_n_records(tmp_path):
    data, _ = sample_school_records(20, random_state=1)
    csv = tmp_path / "d.csv"
    data.to_csv(csv, index=False)
    res = run([*SCHOOL, "--query", "count:height>66", "--data", str(csv), "--n-records", "21"])
    assert "disagrees with the 20 rows" in str(res.exception)


def test_through_the_entry_point(capsys):
    """`distprivacy attribute quilt` once the command is attached to the attribute group."""
    from distprivacy.cli import main
    from distprivacy.commands.attribute import attribute

    if "quilt" not in attribute.commands:
        pytest.skip("quilt is not attached to `distprivacy attribute` yet (helper A's cli change)")
    base = ["attribute", "quilt", *SCHOOL, "--query", "count:height>66"]
    assert main([*base, "--n-records", "200"]) == 0
    assert "noise: none" in capsys.readouterr().out
    assert main([*base, "--epsilon", "-1", "--n-records", "200"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --epsilon must be a positive number") and err.count("\n") == 1


def test_secret_values_restrict_the_protected_pairs():
    args = [*SCHOOL, "--query", "count:height>66&sat>1300", "--n-records", "100"]
    args += ["--quilt", "income=gender"]
    full = run_json(args)
    part = run_json([*args, "--secret-values", "income=0.2,0.5"])
    e_part = max_influence(school_networks(), "income", ["gender"], secret_values=[0.2, 0.5])
    assert part["secrets"][0]["chosen"]["max_influence"] == pytest.approx(e_part.value)
    assert part["scale"] < full["scale"]
    bad = run([*args, "--secret-values", "income=0.3,0.5"])
    assert "secret value '0.3' is not a value of 'income'" in str(bad.exception)


def test_infinite_max_influence_is_strict_json(tmp_path):
    det = {
        "domains": {"a": [0, 1], "b": [0, 1], "c": [0, 1]},
        "parents": {"b": ["a"], "c": ["b"]},
        "cpts": {"a": [0.5, 0.5], "b": [[1.0, 0.0], [0.5, 0.5]], "c": [[0.9, 0.1], [0.2, 0.8]]},
    }
    args = ["--network", _net_file(tmp_path, det), "--query", "count:c>0", "--secret", "a"]
    out = run_json([*args, "--epsilon", "1", "--n-records", "10"])
    infeasible = {tuple(c["quilt"]): c for c in out["secrets"][0]["candidates"]}
    assert infeasible[("b",)]["max_influence"] == "inf"
    assert infeasible[("b",)]["status"] == "infeasible"
