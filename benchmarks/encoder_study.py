"""The shipped zero-training encoder study on SST-5, run and timed.

Runs ``search_spaces/sst5_encoders.yaml`` (4 encoders x 10 paired draws of
100 sentences per class; the official SST-5 dev and test splits) on a
private local Ray, then reports per encoder: the dispersion M of the test
draws (median, mean, min, max), the draws it wins (lowest M), kNN accuracy,
and the time spent embedding (each split once per encoder: the cache) next
to the time spent scoring the draws. A second, resumed invocation of the
same command (nothing left to run) is timed too. With ``--finetuned`` it
also runs ``search_spaces/sst5_encoders_finetuned.yaml`` (the trainable
encoders fine-tuned; minutes on a CPU) and records the rank agreement of
the zero-training and the fine-tuned rankings
(:func:`analysis.reading.crossstudy.study_agreement`).

Usage (SST-5 under ``$SEEDSWEEP_DATA/sst5/``, e.g. the shared data folder)::

    SEEDSWEEP_DATA=../shared/data .venv/bin/python benchmarks/encoder_study.py --json benchmarks/results/x.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", help="run directory (default: a new temporary folder)")
    parser.add_argument("--num-cpus", type=int, default=os.cpu_count())
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--finetuned", action="store_true", help="also run the fine-tuned companion study")
    args = parser.parse_args()

    from seedsweep import analysis
    from seedsweep import study

    out = Path(args.out or tempfile.mkdtemp(prefix="sst5-encoders-")) / "run"
    space = REPO / "search_spaces" / "sst5_encoders.yaml"
    t0 = time.perf_counter()
    summary = study.run(space, out, num_cpus=args.num_cpus)
    wall = time.perf_counter() - t0
    t0 = time.perf_counter()
    study.run(space, out, num_cpus=args.num_cpus)
    resumed = time.perf_counter() - t0

    df = analysis.load(out)
    cmp = analysis.compare(df, "model", mode="min")
    per_draw = df.pivot(index="config_id", columns="option", values="test_score")
    winners = per_draw.idxmin(axis=1).value_counts()
    options = {}
    for option, rows in df.groupby("option"):
        m = rows["test_score"]
        options[option] = {
            "M_median": float(m.median()), "M_mean": float(m.mean()), "M_min": float(m.min()), "M_max": float(m.max()),
            "draws_won": int(winners.get(option, 0)), "win_share": cmp.shares[option],
            "knn_accuracy_mean": float(rows["knn_accuracy"].mean()),
            "A_median": float(rows["dispersion_A"].median()), "B_median": float(rows["dispersion_B"].median()),
            "embed_seconds_total": float(rows["embed_seconds"].sum()),
            "score_seconds_total": float(rows["score_seconds"].sum()),
        }
    result = {
        "benchmark": "encoder_study", "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "study": str(space.relative_to(REPO)), "trials": summary.total, "statuses": summary.counts,
        "draws": int(per_draw.shape[0]), "sentences_per_draw": int(df["sentences"].iloc[0]),
        "wall_seconds": wall, "resume_seconds": resumed,
        "embed_seconds_total": float(df["embed_seconds"].sum()),
        "score_seconds_total": float(df["score_seconds"].sum()),
        "train_seconds_total": float(df["train_seconds"].sum()),
        "best": cmp.best, "sign_test_p_against_best": {o: p for o, p in cmp.share_p.items() if o != cmp.best},
        "options": options,
    }
    if args.finetuned:
        from seedsweep.analysis.reading.crossstudy import study_agreement

        tuned_out = out.parent / "finetuned"
        t0 = time.perf_counter()
        tuned = study.run(REPO / "search_spaces" / "sst5_encoders_finetuned.yaml", tuned_out, num_cpus=args.num_cpus)
        tdf = analysis.load(tuned_out)
        result["finetuned"] = {
            "wall_seconds": time.perf_counter() - t0, "trials": tuned.total, "statuses": tuned.counts,
            "test_accuracy": {o: {"median": float(r["test_score"].median()), "mean": float(r["test_score"].mean()),
                                  "statuses": r["status"].value_counts().to_dict()}
                              for o, r in tdf.groupby("option")},
        }
        agreement = study_agreement(out, tuned_out, n_bootstrap=1000)
        result["rank_agreement"] = [{"choice": a.choice, "options": a.result.options, "tau": a.result.tau,
                                     "tau_p": a.result.tau_p, "tau_exact": a.result.tau_exact,
                                     "tau_ci": list(a.result.tau_ci), "rho": a.result.rho} for a in agreement]
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")


if __name__ == "__main__":
    main()
