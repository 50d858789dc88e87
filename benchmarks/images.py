"""Static images of every report figure: seedsweep's renderer beside Plotly's own, in one run.

Both render the same figures of the same run directory (the synthetic study of
``tests/test_dashboard.py``, written once) to the same format in one Kaleido
browser session each; the peer is ``plotly.io.write_images``, the call
``seedsweep report --images`` used before (its page loads MathJax, from a CDN
unless a local copy is configured). Rounds alternate the two; the figure is the
median time of each and their ratio::

    .venv/bin/python benchmarks/images.py --rounds 3 --json benchmarks/results/images-2026-12-02.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

import plotly.io as pio  # noqa: E402

from seedsweep.analysis.figures import core as F  # noqa: E402
from seedsweep.analysis.pages.htmlreport import report_figures, write_images  # noqa: E402
from tests.test_dashboard import STUDY, write_synthetic_run  # noqa: E402


def peer(run: Path, folder: Path, fmt: str) -> int:
    """Plotly's ``write_images`` on the figures ``write_images`` renders."""
    figs = report_figures(F.load_view(run), n_bootstrap=1000, seed=0)
    folder.mkdir(parents=True, exist_ok=True)
    pio.write_images([fig for _, _, fig in figs], [folder / f"{fig_id}.{fmt}" for _, fig_id, _ in figs],
                     format=fmt, width=1100, height=[int(fig.layout.height or 500) for _, _, fig in figs])
    return len(figs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--format", choices=["png", "svg"], default="svg")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if not shutil.which("chromium") and not shutil.which("google-chrome"):
        sys.exit("no Chromium: make browser")
    os.environ.setdefault("BROWSER_PATH", shutil.which("chromium") or shutil.which("google-chrome"))
    work = Path(tempfile.mkdtemp(prefix="images-bench-"))
    run = work / "run"
    write_synthetic_run(run, STUDY)
    times: dict[str, list[float]] = {"seedsweep": [], "plotly.io.write_images": []}
    n_figures = {}
    for r in range(args.rounds):
        for name in (times if r % 2 == 0 else reversed(list(times))):
            folder = work / f"{name}-{r}"
            t = time.perf_counter()
            if name == "seedsweep":
                n_figures[name] = len(write_images(run, folder, args.format))
            else:
                n_figures[name] = peer(run, folder, args.format)
            times[name].append(time.perf_counter() - t)
            print(f"round {r + 1}: {name}: {n_figures[name]} figures in {times[name][-1]:.1f} s", flush=True)
    median = {k: statistics.median(v) for k, v in times.items()}
    ratio = median["plotly.io.write_images"] / median["seedsweep"]
    print(f"\n{'renderer':<24} {'median s':>9}")
    for k, v in median.items():
        print(f"{k:<24} {v:9.1f}")
    print(f"seedsweep is {ratio:.2f}x faster ({n_figures['seedsweep']} {args.format} figures)")
    if args.json:
        args.json.write_text(json.dumps({
            "what": "seedsweep report --images (Kaleido, MathJax off) vs plotly.io.write_images, same figures",
            "format": args.format, "figures": n_figures, "rounds": args.rounds,
            "seconds": times, "median_seconds": median, "speedup": round(ratio, 2),
            "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        }, indent=2) + "\n")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
