"""Figures of single trials: learning curves, confusion matrices, problems."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from ..specs import ComparisonSpec
from ..stats.pairing import as_text, finished
from .figurekit import COLORS, TABLE_MARGIN, axes_grid, empty_figure, fast_figure, option_color, table_height

__all__ = ["default_trials", "curves_figure", "confusion_figure", "problems_figure", "mean_curves", "learning_figure"]


def default_trials(df: pd.DataFrame, spec: ComparisonSpec | None, limit: int = 4) -> list[str]:
    """The median-scoring finished trial of each option (what the curves show first)."""
    ok = finished(df, "test_score")
    if spec is None or spec.choice not in ok or not len(ok):
        return list(ok["trial_key"].head(limit)) if "trial_key" in ok else []
    out = []
    for _, sub in ok.groupby(ok[spec.choice].astype(str), sort=False):
        sub = sub.sort_values(["test_score", "trial_key"])
        out.append(str(sub["trial_key"].iloc[len(sub) // 2]))
    return out[:limit]


def curves_figure(epochs: pd.DataFrame | None, df: pd.DataFrame, keys: list[str], fig_id: str = "curves"
                  ) -> go.Figure:
    """Dev and test score per epoch of the trials ``keys``, the best dev epoch starred."""
    if epochs is None or not len(epochs):
        return empty_figure(fig_id, "learning curves: this run directory has no epoch rows (imported results)")
    chosen = epochs[epochs["trial_key"].isin(keys)]          # only the chosen trials' rows, once
    present = set(chosen["trial_key"])
    keys = [k for k in keys if k in present]
    if not keys:
        return empty_figure(fig_id, "learning curves: choose trials")
    rows = df[df["trial_key"].isin(keys)] if "trial_key" in df else df.iloc[:0]
    best = dict(zip(rows["trial_key"], rows["best_epoch"])) if "best_epoch" in rows else {}
    fig = go.Figure()
    for i, key in enumerate(keys):
        e = chosen[chosen["trial_key"] == key].sort_values("epoch")
        color = COLORS[i % len(COLORS)]
        for split, dash in (("dev_score", "solid"), ("test_score", "dot")):
            fig.add_scatter(x=e["epoch"], y=e[split], mode="lines+markers", line={"color": color, "dash": dash},
                            name=f"{key} {split.split('_')[0]}", legendgroup=key, meta=key)
        b = best.get(key)
        if b is not None and not pd.isna(b) and (e["epoch"] == b).any():
            row = e[e["epoch"] == b].iloc[0]
            fig.add_scatter(x=[b], y=[row["dev_score"]], mode="markers", legendgroup=key, showlegend=False,
                            marker={"symbol": "star", "size": 14, "color": color, "line": {"color": "black",
                                                                                          "width": 1}},
                            name=f"{key} best dev epoch", meta={"best_epoch": key})
    fig.update_layout(title="learning curves<br><sup>dev (solid) and test (dotted) per epoch; ★ best dev epoch</sup>",
                      xaxis_title="epoch", yaxis_title="score", meta={"id": fig_id, "trials": keys})
    return fig


def confusion_figure(confusion: pd.DataFrame | None, df: pd.DataFrame, keys: list[str], fig_id: str = "confusion"
                     ) -> go.Figure:
    """The test confusion matrix at the best dev epoch, summed over the trials ``keys``."""
    if confusion is None or not len(confusion):
        return empty_figure(fig_id, "confusion matrix: none stored (only classifying families store one)")
    best = df.set_index("trial_key")["best_epoch"].to_dict()
    keys = [k for k in keys if k in best and not pd.isna(best[k])]
    if not keys:
        return empty_figure(fig_id, "confusion matrix: choose finished trials")
    sel = confusion[(confusion["split"] == "test") & confusion["trial_key"].isin(keys)]
    sel = sel[sel["epoch"] == sel["trial_key"].map(best)]
    labels = list(dict.fromkeys(confusion["gold"].tolist()))
    m = sel.pivot_table(index="gold", columns="predicted", values="count", aggfunc="sum", fill_value=0)
    m = m.reindex(index=labels, columns=labels, fill_value=0)
    fig = go.Figure(go.Heatmap(z=m.to_numpy(), x=labels, y=labels, colorscale="Blues", texttemplate="%{z}",
                               hovertemplate="gold %{y}, predicted %{x}: %{z}<extra></extra>"))
    fig.update_layout(title=f"test confusion matrix<br><sup>at the best dev epoch, summed over {len(keys)} "
                            "trial(s)</sup>",
                      xaxis_title="predicted", yaxis={"title": "gold", "autorange": "reversed"},
                      meta={"id": fig_id, "trials": keys, "total": int(m.to_numpy().sum())})
    return fig


def problems_figure(df: pd.DataFrame, fig_id: str = "problems") -> go.Figure:
    """Every diverged and failed trial with its reason, as a table."""
    bad = df[as_text(df["status"]) != "ok"] if len(df) else df
    if not len(bad):
        fig = go.Figure(go.Table(header={"values": ["trial", "status", "reason"]}, cells={"values": [[], [], []]}))
        fig.update_layout(title="diverged and failed trials: none", height=table_height(0), margin=TABLE_MARGIN,
                          meta={"id": fig_id, "count": 0})
        return fig
    keys = bad["trial_key"].astype(str) if "trial_key" in bad and bad["trial_key"].notna().any() \
        else pd.Series([f"row {i}" for i in bad.index], index=bad.index)
    fig = go.Figure(go.Table(
        header={"values": ["trial", "status", "reason"]},
        cells={"values": [keys.tolist(), bad["status"].astype(str).tolist(),
                          bad["reason"].astype(str).fillna("").tolist() if "reason" in bad else [""] * len(bad)],
               "align": "left"},
        columnwidth=[2, 1, 5]))
    fig.update_layout(title=f"diverged and failed trials: {len(bad)} (kept, never hidden)",
                      height=min(640, table_height(len(bad))), margin=TABLE_MARGIN,
                      meta={"id": fig_id, "count": int(len(bad))})
    return fig




def mean_curves(epochs: pd.DataFrame, df: pd.DataFrame, choice: str) -> pd.DataFrame:
    """Per task, option and epoch: the mean dev and test score over the
    option's finished trials that reached that epoch, and how many did
    (columns task, option, epoch, dev_score, test_score, trials)."""
    ok = finished(df, "test_score")
    if choice not in ok or epochs is None or not len(epochs):
        return pd.DataFrame(columns=["task", "option", "epoch", "dev_score", "test_score", "trials"])
    keys = ok[["trial_key", choice] + (["task"] if "task" in ok else [])].rename(columns={choice: "option"})
    keys = keys.assign(option=keys["option"].astype(str), task=keys["task"].astype(str) if "task" in keys else "")
    e = epochs.merge(keys, on="trial_key")
    out = e.groupby(["task", "option", "epoch"], sort=True).agg(dev_score=("dev_score", "mean"),
                                                                 test_score=("test_score", "mean"),
                                                                 trials=("trial_key", "nunique"))
    return out.reset_index()


def learning_figure(epochs: pd.DataFrame | None, df: pd.DataFrame, spec: ComparisonSpec | None,
                    fig_id: str = "learning") -> go.Figure:
    """Seed-averaged learning curves: per option, the mean dev (solid) and
    test (dotted) score per epoch over its finished trials, tasks side by side."""
    curves = mean_curves(epochs, df, spec.choice) if spec is not None and epochs is not None else None
    if curves is None or not len(curves):
        return empty_figure(fig_id, "learning curves: no finished trial with epoch rows yet")
    tasks = list(dict.fromkeys(curves["task"]))
    options = [o for o in (spec.options or []) if o in set(curves["option"])] or list(dict.fromkeys(curves["option"]))
    axes, notes, ref = axes_grid(1, len(tasks), [t or "(all)" for t in tasks], hspace=min(0.08, 0.4 / len(tasks)))
    data = []
    for col, task in enumerate(tasks, 1):
        x_ref, y_ref = ref(1, col)
        for o in options:
            c = curves[(curves["task"] == task) & (curves["option"] == o)]
            for split, dash in (("dev_score", "solid"), ("test_score", "dot")):
                data.append({"type": "scatter", "x": c["epoch"].tolist(), "y": c[split].tolist(), "mode": "lines+markers",
                             "name": f"{o} {split.split('_')[0]}", "legendgroup": o, "showlegend": col == 1,
                             "line": {"color": option_color(options, o), "dash": dash}, "xaxis": x_ref, "yaxis": y_ref,
                             "customdata": c["trials"].tolist(), "meta": {"option": o, "task": task, "split": split},
                             "hovertemplate": f"{o}, epoch %{{x}}: mean {split} %{{y:.4f}} over %{{customdata}} trials"
                                              f"<extra>{task}</extra>"})
        axes["xaxis" + x_ref[1:]]["title"] = {"text": "epoch"}
    layout = {**axes, "annotations": notes, "height": 420,
              "title": {"text": f"{spec.name}: seed-averaged learning curves<br><sup>mean over each option's finished "
                                "trials that reached the epoch; dev solid, test dotted</sup>"},
              "meta": {"id": fig_id, "choice": spec.choice}}
    return fast_figure(data, layout)
