"""Reproductions of the papers' experiments (``distprivacy reproduce``).

* :mod:`~distprivacy.experiments.paper` — Chen & Ohrimenko (2023), §5: tables and figures as
  data frames;
* :mod:`~distprivacy.experiments.figures` — the PNGs;
* :mod:`~distprivacy.experiments.reproduction_report` — the markdown report beside the paper's
  numbers;
* :mod:`~distprivacy.experiments.reproduce` — the command's runner, and the other papers'
  reproductions by target name;
* :mod:`~distprivacy.experiments._run` — the tail every reproduction shares
  (:func:`~distprivacy.experiments._run.write_run`: tables, figures, report, timings and
  manifest written into the run folder).
"""
