"""The figures of the reproduction ledger's runs, as Markdown for
``benchmarks/results/``: every number comes from a run directory's trials.

    python benchmarks/reproduction_runs.py setting runs/sst2-setting
    python benchmarks/reproduction_runs.py populations runs/sst2-robustness-closest
    python benchmarks/reproduction_runs.py augment runs/sst2-augment-factor
    python benchmarks/reproduction_runs.py encoders runs/sst5-encoders-pooling

``setting`` chooses, per architecture, the setting with the best mean *dev*
accuracy (never the test accuracy) and prints it with its test figures.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import pandas as pd

from seedsweep import analysis

PUBLISHED = {"fc": 0.8993, "cnn": 0.9077, "lstm": 0.9101, "attention": 0.8963}
PHENOMENA = ("negation", "mixed", "sarcasm")


def ms(values) -> str:
    """mean ± sd of ``values`` (sample sd; one value: no sd)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if len(v) == 0:
        return "–"
    return f"{v.mean():.4f}" + (f" ± {v.std(ddof=1):.4f}" if len(v) > 1 else "")


def wall(df: pd.DataFrame) -> str:
    """From the first trial's start to the last trial's end."""
    seconds = (pd.to_datetime(df["finished_at"]).max() - pd.to_datetime(df["started_at"]).min()).total_seconds()
    return f"{int(seconds // 60)} min {int(seconds % 60)} s"


def ok_rows(run: str) -> pd.DataFrame:
    """The run's finished trials (status ok)."""
    df = analysis.load(run)
    return df[df["status"].astype(str) == "ok"].copy()


def setting(run: str) -> str:
    """Per architecture x lr x phrases: dev, test and test-phrase accuracy, epochs; the choice by dev."""
    df = ok_rows(run)
    cap = int(df["epochs_run"].max())
    df["phrases"] = df["option"].astype(str)
    lines = [f"Trials: {len(df)} ok; wall {wall(df)} on this machine; epoch cap {cap}.", "",
             "| architecture | lr | phrases | n | dev accuracy | test accuracy | test-phrase accuracy | "
             "best epoch at the cap | train s (mean) |", "|---|---:|---|---:|---:|---:|---:|---:|---:|"]
    chosen = {}
    for (arch, lr, phrases), g in df.groupby(["architecture", "lr", "phrases"], observed=True):
        lines.append(f"| {arch} | {lr:g} | {phrases} | {len(g)} | {ms(g.dev_score)} | {ms(g.test_score)} | "
                     f"{ms(g.eval_sst2_test_phrases)} | {int((g.best_epoch == cap).sum())} of {len(g)} | "
                     f"{g.train_seconds.mean():.0f} |")
    means = df.groupby(["architecture", "lr", "phrases"], observed=True)["dev_score"].mean()
    for arch in means.index.get_level_values(0).unique():
        (lr, phrases), dev = means[arch].idxmax(), means[arch].max()
        chosen[arch] = (lr, phrases, dev)
    lines += ["", "Chosen by mean dev accuracy (per architecture):", ""]
    lines += [f"- {a}: lr {lr:g}, phrases {p} (dev {d:.4f})" for a, (lr, p, d) in chosen.items()]
    overall = df.groupby(["lr", "phrases"], observed=True)["dev_score"].mean()
    (lr, phrases), dev = overall.idxmax(), overall.max()
    lines += ["", f"One setting for every architecture, by mean dev accuracy over all of them: lr {lr:g}, "
                  f"phrases {phrases} (dev {dev:.4f})."]
    return "\n".join(lines)


def populations(run: str) -> str:
    """Per architecture: SST-2 test accuracy (mean ± sd) beside the published one, test phrases, p' per phenomenon."""
    df = ok_rows(run)
    cols = [f"eval_{p}" for p in PHENOMENA if f"eval_{p}" in df]
    cap = int(df["epochs_run"].max())
    lines = [f"Trials: {len(df)} ok; wall {wall(df)} on this machine; epoch cap {cap}.", "",
             "| architecture | n | SST-2 test accuracy | published | gap | test-phrase accuracy | best test epoch "
             "(peeking) | best dev epoch at the cap | " + " | ".join(f"p′ {c[5:]}" for c in cols) + " |",
             "|---|---:|---:|---:|---:|---:|---:|---:|" + "---:|" * len(cols)]
    for arch, g in df.groupby("architecture", observed=True):
        phr = ms(g["eval_sst2_test_phrases"]) if "eval_sst2_test_phrases" in g else "–"
        lines.append(f"| {arch} | {len(g)} | {ms(g.test_score)} | {PUBLISHED[arch]:.4f} | "
                     f"{g.test_score.mean() - PUBLISHED[arch]:+.4f} | {phr} | {ms(g.test_score_max)} | "
                     f"{int((g.best_epoch == cap).sum())} of {len(g)} | " + " | ".join(ms(g[c]) for c in cols) + " |")
    return "\n".join(lines)


def augment(run: str) -> str:
    """p' on negation and test accuracy per architecture against the augmentation factor."""
    df = ok_rows(run)
    lines = [f"Trials: {len(df)} ok; wall {wall(df)} on this machine.", "",
             "| architecture | factor | n | p′ negation | Δ p′ vs factor 0 (per seed, median) | SST-2 test accuracy | "
             "epochs run (mean) | train s (mean) |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    df["factor"] = df["augment_factor"].astype(int)
    for arch, g in df.groupby("architecture", observed=True):
        base = g[g.factor == 0].set_index("seed")["eval_negation"]
        for k, h in g.groupby("factor"):
            d = (h.set_index("seed")["eval_negation"] - base).dropna()
            lines.append(f"| {arch} | {k} | {len(h)} | {ms(h.eval_negation)} | "
                         f"{np.median(d):+.4f} | {ms(h.test_score)} | {h.epochs_run.mean():.1f} | "
                         f"{h.train_seconds.mean():.0f} |")
    return "\n".join(lines)


def encoders(run: str) -> str:
    """M per encoder and pooling (median over draws, from the model comparison's trials) and the ranking."""
    df = ok_rows(run)
    df = df[df["choice"].astype(str) == "model"]
    lines = [f"Trials: {len(df)} ok (the model comparison's); wall {wall(df)} on this machine.", "",
             "| pooling | encoder | draws | M median | M mean ± sd | rank (by median, 1 = lowest M) |",
             "|---|---|---:|---:|---:|---:|"]
    for pooling, g in df.groupby("pooling", observed=True):
        med = g.groupby("model", observed=True)["test_score"].median().sort_values()
        for rank, (model, m) in enumerate(med.items(), 1):
            lines.append(f"| {pooling} | {model} | {int((g.model == model).sum())} | {m:.1f} | "
                         f"{ms(g[g.model == model].test_score)} | {rank} |")
    return "\n".join(lines)


def main() -> None:
    """Print the figures of one run directory."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kind", choices=["setting", "populations", "augment", "encoders"])
    ap.add_argument("run")
    args = ap.parse_args()
    print({"setting": setting, "populations": populations, "augment": augment, "encoders": encoders}[args.kind](
        args.run))


if __name__ == "__main__":
    sys.exit(main())
