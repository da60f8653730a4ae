"""``distprivacy models graph``: the mean-degree game of Suri & Evans on a graph (GCNs in
PyTorch). Thin: parse, call :func:`distprivacy.inference.graph.run_graph_game`, print.

Registered under the ``models`` group by :mod:`distprivacy.cli`
(``models.add_command(graph)``).
"""

from __future__ import annotations

import click

from distprivacy.commands import POSITIVE, POSITIVE_INT, SEED, Number, dumps_json, parse_floats
from distprivacy.exceptions import DistPrivacyError

_PRUNE = Number(low=0, high=1, high_open=True)
_ATTACK_NAMES = ("loss-test", "threshold-test", "meta-weights", "meta-outputs")


@click.command(name="graph")
@click.option(
    "--graph",
    "graph_spec",
    default="karate",
    show_default=True,
    help="karate (networkx's karate club), sbm[:N] (a block model drawn with networkx), or "
    "ogbn-arxiv:DIR (OGB's files in DIR; nothing is downloaded).",
)
@click.option(
    "--degrees",
    required=True,
    help="Target mean degrees of G0 and G1, e.g. 3,4 (equal: the null game).",
)
@click.option("--n-models", type=POSITIVE_INT, default=50, show_default=True,
              help="Victim models per distribution.")  # fmt: skip
@click.option("--n-shadow", type=POSITIVE_INT, default=None,
              help="Adversary models per distribution (default: --n-models).")  # fmt: skip
@click.option("--hidden", type=POSITIVE_INT, default=16, show_default=True)
@click.option("--epochs", type=POSITIVE_INT, default=100, show_default=True)
@click.option("--random-prune", type=_PRUNE, default=0.05, show_default=True,
              help="Share of nodes removed at random from each drawn graph.")  # fmt: skip
@click.option("--tolerance", type=POSITIVE, default=0.25, show_default=True,
              help="Largest accepted |achieved − target| mean degree.")  # fmt: skip
@click.option("--no-split", is_flag=True,
              help="Victim and adversary share the nodes (graphs too small to halve).")  # fmt: skip
@click.option("--attack", "attacks", multiple=True, type=click.Choice(_ATTACK_NAMES),
              help="Attacks to run (repeatable; default all).")  # fmt: skip
@click.option("--seed", type=SEED, default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def graph(
    graph_spec: str,
    degrees: str,
    n_models: int,
    n_shadow: int | None,
    hidden: int,
    epochs: int,
    random_prune: float,
    tolerance: float,
    no_split: bool,
    attacks: tuple[str, ...],
    seed: int,
    as_json: bool,
) -> None:
    """Can an adversary tell the mean degree of the graph a GCN was trained on?

    Suri & Evans (2021), §3–4 on ogbn-arxiv: each side trains GCNs on graphs pruned to mean
    degree d0 (G0) or d1 (G1); the adversary's attacks guess b for the victim's models.
    """
    from distprivacy.commands._common import LazyProgress
    from distprivacy.inference.graph import GRAPH_ATTACKS, load_graph, run_graph_game

    d = parse_floats(degrees, "--degrees", example="3,4")
    if len(d) != 2:
        raise DistPrivacyError(f"--degrees takes two mean degrees, e.g. 3,4; got {degrees!r}")
    g = load_graph(graph_spec, random_state=seed)
    bar = LazyProgress("training GCNs", enabled=not as_json)
    try:
        result = run_graph_game(
            g,
            (d[0], d[1]),
            n_models=n_models,
            n_shadow=n_shadow,
            hidden=hidden,
            epochs=epochs,
            random_prune=random_prune,
            tolerance=tolerance,
            split=not no_split,
            attacks=tuple(dict.fromkeys(attacks)) or GRAPH_ATTACKS,
            random_state=seed,
            progress=bar,
        )
    finally:
        bar.close()
    out = result.to_dict()
    out["seed"] = seed
    if as_json:
        click.echo(dumps_json(out))
        return
    from rich.console import Console

    from distprivacy.commands._display import print_columns

    n = result.nodes
    console = Console(highlight=False)
    console.print(
        f"{result.graph}: victim {n['victim']} nodes, adversary {n['adversary']} nodes"
        f"{'' if n['split'] else ' (shared: --no-split)'}; G0 mean degree {d[0]:g}, G1 {d[1]:g}; "
        f"{2 * (result.n_models + result.n_shadow)} GCNs trained in {result.train_seconds:.1f} s",
        markup=False,
    )
    rows = [
        (
            name,
            f"{o.accuracy:.3f}",
            f"[{o.accuracy_ci[0]:.3f}, {o.accuracy_ci[1]:.3f}]",
            f"{o.advantage:.3f}",
            f"[{o.advantage_ci[0]:.3f}, {o.advantage_ci[1]:.3f}]",
            str(o.n0 + o.n1),
        )
        for name, o in result.outcomes.items()
    ]
    print_columns(
        console,
        f"Mean degree {d[0]:g} (G0) vs {d[1]:g} (G1)",
        ("attack", "accuracy", "95 % CI", "advantage", "95 % CI", "victim models"),
        rows,
        [(1, 2), (3, 4, 5)],
    )
