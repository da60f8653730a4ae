"""Command lines shared by several test files (importable from any test directory: tests/ is
on sys.path through its conftest.py)."""

#: ``attribute gaussian`` on the blood-pressure example (a binary sensitive attribute).
BP = [
    "attribute",
    "gaussian",
    "--sensitive",
    "gender",
    "--query",
    "blood_pressure",
    "-n",
    "50",
    "--binary",
    "--parameter-range",
    "0.25:0.75",
    "--secret",
    "(0.25,0.5)",
    "--secret",
    "(0.5,0.75)",
    "--slope",
    "blood_pressure=6:10",
    "--residual-variance",
    "blood_pressure=100",
    "--pair-distance",
    "centres",
]
