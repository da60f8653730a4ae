"""Reproductions of the papers' experiments (``distprivacy reproduce``).

* :mod:`~distprivacy.experiments.paper` — Chen & Ohrimenko (2023), §5: tables and figures as
  data frames;
* :mod:`~distprivacy.experiments.figures` — the PNGs;
* :mod:`~distprivacy.experiments.report` — the markdown report beside the paper's numbers;
* :mod:`~distprivacy.experiments.reproduce` — the command's runner.
"""
