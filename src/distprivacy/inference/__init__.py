"""Distribution inference on trained models (Suri & Evans, *Formalizing Distribution Inference
Risks*, 2021): the game of §2 (distribution transformers, disjoint victim/adversary data, the
adversary's advantage), populations of small models trained as one vectorised computation, and
the attacks of §3.2 on them.

Modules: :mod:`~distprivacy.inference.population` (a stack of trained models),
:mod:`~distprivacy.inference.training` (batched training), :mod:`~distprivacy.inference.game`
(splits, dataset sampling, advantage), :mod:`~distprivacy.inference.transformers`
(distribution transformers G0, G1), :mod:`~distprivacy.inference.features` (Adult encoder).
"""
