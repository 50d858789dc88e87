"""Write SST-2's labelled *test phrases* (every distinct non-neutral phrase of
the SST test trees, the root sentences included) as a (text, label) table,
so that a study can score them with ``evaluate:`` beside the usual
root-sentence test accuracy.

Why: the published robustness populations reach 0.90-0.91 SST-2 accuracy
with about 40K parameters over frozen 50d vectors. Accuracy on all test
phrases (most of them short and easy) is one candidate for what such a
figure measured; ``search_spaces/sst2_setting.yaml`` measures it.

    python benchmarks/sst2_test_phrases.py ../shared/data/sst5 runs/sst2_test_phrases.tsv

The table is derived from the shared data at run time and never committed.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

from seedsweep.study.families.sentencedata import SST2_LABELS, read_sst_trees


def main() -> None:
    """Read ``SST/test.txt`` and write the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sst", help="the folder holding the SST tree files (train.txt, dev.txt, test.txt)")
    ap.add_argument("out", help="the TSV file to write (columns text, label)")
    args = ap.parse_args()
    data = read_sst_trees(Path(args.sst) / "test.txt", phrases=True, binary=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, delimiter="\t", quoting=csv.QUOTE_MINIMAL, lineterminator="\n")
        w.writerow(["text", "label"])
        for text, label in zip(data.texts, data.labels):
            w.writerow([text, SST2_LABELS[label]])
    print(f"{out}: {len(data.texts)} test phrases")


if __name__ == "__main__":
    main()
