"""The front door speaks the command line's mechanism names (issue 33 item 5): by one rule,
``-`` becomes ``_`` and a Gaussian mechanism of Chen & Ohrimenko may drop its ``-G``; each
name is the registry's class, listed in ``distprivacy.__all__``, and loaded on first use."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import distprivacy as dp
from distprivacy.mechanisms import MECHANISMS
from distprivacy.registry import BUILTIN_MECHANISMS

SRC = Path(__file__).resolve().parents[1] / "src"


def test_every_command_line_name_is_a_front_door_name():
    for cli in BUILTIN_MECHANISMS:
        name = cli.replace("-", "_")
        assert getattr(dp, name) is MECHANISMS[cli], cli
        assert name in dp.__all__, name


def test_gaussian_mechanisms_of_chen_and_ohrimenko_drop_their_suffix():
    short = {"ExpM": "ExpM-G", "DirM": "DirM-G", "EigM": "EigM-G", "DauM": "DauM-G",
             "OptM": "OptM-G"}  # fmt: skip
    for name, cli in short.items():
        assert getattr(dp, name) is MECHANISMS[cli] and name in dp.__all__
    assert dp.DirM is dp.DirectionalGaussian and dp.DirM_L is dp.DirectionalLaplace
    assert not hasattr(dp, "GroupDP")  # a baseline, not one of the paper's mechanisms


def test_the_names_are_loaded_on_first_use():
    probe = (
        "import sys, distprivacy as dp\n"
        "before = 'distprivacy.mechanisms' in sys.modules\n"
        "cls = dp.DirM\n"
        "print(before, cls.name, 'distprivacy.mechanisms' in sys.modules)\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(SRC), "PATH": ""},
        check=False,
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["False", "DirM-G", "True"]
