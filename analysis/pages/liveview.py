"""The live dashboard's state: one view of the run directory per signature.

A refresh reads only the files that changed (:class:`study.store.shards.Cached`);
the statistics of a selection are computed once per view and shared by the
figures that show them; the importance forests grow in a background thread.
"""

from __future__ import annotations

import hashlib
import sys
import threading
import time
from contextlib import contextmanager
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from seedsweep.study.store.rundir import RunDir
from seedsweep.study.store.shards import Cached

from ..figures import core as F
from ..stats.evp import prepare_weights
from ..stats.insights import choice_stats, importance_by_task, paired_of
from ..stats.significance import prepare_ranks

__all__ = ["Views", "signature", "only_changed", "keep_freed_memory", "freeze_startup", "REFIT_S", "SEED",
           "RANKS_AFTER_S"]

#: The importance forests are refit at least this often while rows change.
REFIT_S = 30.0
#: The seed of the dashboard's bootstrap (the report's default too).
SEED = 0
#: The next pair count's bootstrap ranks are drawn, and the importance
#: forests refit, this long after the redraw that asked (not during it).
RANKS_AFTER_S = 1.0


def signature(run_dir: str | Path) -> str:
    """Changes whenever a trial is stored, the directory is compacted or the
    driver's progress file is rewritten (the store's :meth:`RunDir.signature`)."""
    return RunDir(run_dir).signature()


class Views:
    """One :class:`~analysis.figures.core.RunView` per directory signature, shared by callbacks."""

    def __init__(self, run_dir: str) -> None:
        self.run_dir = run_dir
        self.cached = Cached(RunDir(run_dir))          # a refresh reads only the files that changed
        self.lock = threading.Lock()
        self.key: str | None = None
        self.view: F.RunView | None = None
        self.superseded: dict[str, None] = {}          # keys of earlier views (an ordered set, the last 64)
        self.loaded_at = 0.0
        self.stopped = threading.Event()                # ends watch()
        self.watcher: threading.Thread | None = None    # watch()'s thread
        self.failed: tuple[str, str] | None = None      # (signature, message): the watcher could not read it
        self.busy = 0                                   # callbacks computing now (working())
        self.busy_lock = threading.Lock()
        self.computed: dict[tuple, tuple] = {}          # selection -> selection()'s answer, this view only
        self.compute_lock = threading.Lock()
        self.importance_lock = threading.Lock()         # apart: finding the forests never waits for a selection
        self.background = ThreadPoolExecutor(max_workers=1, thread_name_prefix="seedsweep-importance")
        self.importance: dict[tuple, Future] = {}
        self.importance_last: dict[tuple, tuple[int, float, Future]] = {}    # selection -> (rows, when, forests)

    def get(self, key: str | None = None) -> F.RunView:
        """The view of signature ``key`` (now, if None). A key older than the
        view held (the page asks with the version of its last poll, and
        :meth:`watch` may have read a newer one) gets the view held: it is newer."""
        with self.lock:
            key = key or signature(self.run_dir)
            failed = self.failed
            if self.view is not None and failed is not None and key == failed[0]:
                return self.view            # the page names the failure (dashboard) over the last view read
            if self.view is None or (key != self.key and key not in self.superseded):
                if self.key is not None:
                    self.superseded[self.key] = None
                    while len(self.superseded) > 64:
                        self.superseded.pop(next(iter(self.superseded)))
                self.view = F.load_view(self.run_dir, cached=self.cached)
                self.key = key
                self.loaded_at = time.monotonic()
                self.computed = {}
                self.failed = None
            return self.view

    def watch(self, every_s: float, gap_s: float, prepare) -> threading.Thread:
        """Read the directory as soon as it changes, before the page asks.

        A thread looks at the signature every ``every_s`` seconds; when it
        changed and the view held is at least ``gap_s`` old (so a study storing
        a trial every few milliseconds is read about as often as the page
        polls, not more), it reads the new view and calls ``prepare(view)``,
        which computes what the page will ask for (the statistics of the
        selection it shows). The page's callbacks then find them computed.
        It waits while any of them computes (:attr:`busy`).

        A directory it cannot read (a corrupt part: the store's located
        message) is not read again until it changes: the message is printed
        once, kept in :attr:`failed` for the page to show, and the last view
        read stays. An error of ``prepare`` is left for the page's callbacks,
        which compute the same and raise it."""
        def loop() -> None:
            while not self.stopped.wait(every_s):
                try:
                    key = signature(self.run_dir)
                except Exception:  # noqa: BLE001 -- moved or being written: the next look (the thread must live)
                    continue
                failed = self.failed
                # not while the page's callbacks compute: those still to start would take
                # the newer view, and the redraw under way would wait for it
                if (key == self.key or (failed is not None and key == failed[0]) or self.busy
                        or time.monotonic() - self.loaded_at < gap_s):
                    continue
                try:
                    view = self.get(key)
                except Exception as exc:  # noqa: BLE001 -- any reader's error: shown, never lost
                    self.failed = (key, str(exc))
                    print(f"seedsweep dashboard: {exc}", file=sys.stderr, flush=True)
                    continue
                try:
                    prepare(view)
                except Exception:  # noqa: BLE001 -- the callbacks compute the same and report it
                    continue
        self.watcher = threading.Thread(target=loop, name="seedsweep-watch", daemon=True)
        self.watcher.start()
        return self.watcher

    def selection(self, spec, rows, selection: tuple) -> tuple:
        """``(view, df, by_task, ChoiceStats)``: the statistics of ``spec`` on
        ``df = rows(view)``, computed once per view, on the newest view held (a
        callback begun on an older one, while a newer one was read, gets the
        newer one's: the page drops the older answer anyway)."""
        with self.compute_lock:
            with self.lock:             # the view and its statistics together: get() may replace both meanwhile
                view, computed = self.view, self.computed
            if selection not in computed:
                df = rows(view)
                paired = paired_of(df, spec, view.results)          # once, for both
                by_task = F.compare_view(view, spec, df, paired=paired, seed=SEED)
                computed[selection] = (view, df, by_task,
                                       choice_stats(df, spec, by_task, view.results, paired=paired, seed=SEED))
                # one more pair per task, as a running study stores it: its bootstrap ranks, drawn while the page waits
                prepare_ranks([(c.n + 1, c.n_bootstrap, SEED + i) for c in by_task.values() if c.best is not None
                               for i, o in enumerate(c.options) if o != c.best], delay_s=RANKS_AFTER_S)
                # and one more run per option: the weights of its evp curve
                prepare_weights([c.N + 1 for curves in computed[selection][3].evp.values() for c in curves],
                                delay_s=RANKS_AFTER_S)
            return computed[selection]

    @contextmanager
    def working(self):
        """Around a callback that computes: :attr:`busy` counts them."""
        with self.busy_lock:
            self.busy += 1
        try:
            yield
        finally:
            with self.busy_lock:
                self.busy -= 1

    def importance_of(self, version: str | None, view: F.RunView, spec, df, selection: tuple) -> Future:
        """The importance of ``spec`` on ``df`` per task, computing in the background.

        The forests are grown again when the selection's rows changed by at
        least 1% (and by one row at least) or :data:`REFIT_S` seconds passed
        since they were: a study of 50,000 trials stores one every few
        milliseconds, and one more row does not move a forest fitted on a
        seeded subsample of 2,000 per task."""
        key = (version, selection)
        with self.importance_lock:
            if key not in self.importance:
                if len(self.importance) > 32:
                    self.importance = {k: f for k, f in self.importance.items() if not f.done()}
                last = self.importance_last.get(selection)
                if (last is not None and last[2].done() and time.monotonic() - last[1] < REFIT_S
                        and abs(len(df) - last[0]) < max(1.0, 0.01 * last[0])):
                    self.importance[key] = last[2]
                else:       # a refit waits for the redraw that asked for it to be drawn
                    future = self.background.submit(_after, 0.0 if last is None else RANKS_AFTER_S,
                                                    importance_by_task, df, spec, view.results)
                    self.importance[key] = future
                    self.importance_last[selection] = (len(df), time.monotonic(), future)
            return self.importance[key]


def _after(delay_s: float, work, *args):
    time.sleep(delay_s)
    return work(*args)


def keep_freed_memory(heap_up_to: int = 512 << 20, keep: int = 1 << 30) -> bool:
    """Ask glibc's malloc to serve blocks up to ``heap_up_to`` bytes from its
    heap and to keep up to ``keep`` bytes of freed memory (``mallopt``);
    False where the C library is not glibc."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3      # glibc's malloc.h
    return bool(mallopt(M_MMAP_THRESHOLD, heap_up_to)) and bool(mallopt(M_TRIM_THRESHOLD, keep))


def freeze_startup() -> int:
    """Leave the objects alive now (the modules, Dash's and Plotly's, the app
    and its first view) out of the cycle collector's full passes
    (``gc.freeze``), and return how many are: about 160,000 in a dashboard,
    and a full pass over them takes about 0.15 s, which otherwise falls now
    and then inside a redraw. Objects made later are collected as before."""
    import gc

    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def only_changed(figures: list, drawn: dict | None, no_update) -> tuple[list, dict]:
    """``figures``, with ``no_update`` for each one the page already shows,
    and the fingerprints of what the page then shows.

    ``drawn`` maps a figure's place to the fingerprint of its JSON, as sent.
    A study of 50,000 trials stores one every few milliseconds; most of the
    page (the importance forests, the parallel coordinates' fixed sample, the
    problems, an unsealed study's claims) is the same after it, and drawing
    it again would cost the browser more than anything else in a refresh.

    >>> import plotly.graph_objects as go
    >>> figs = [go.Figure(layout={"title": {"text": "a"}}), go.Figure(layout={"title": {"text": "b"}})]
    >>> out, drawn = only_changed(figs, None, "same")
    >>> out == figs
    True
    >>> out, _ = only_changed([figs[0], go.Figure(layout={"title": {"text": "c"}})], drawn, "same")
    >>> out[0], out[1].layout.title.text
    ('same', 'c')
    """
    drawn = dict(drawn or {})
    out = []
    for i, fig in enumerate(figures):
        key = hashlib.blake2b(fig.to_json().encode(), digest_size=16).hexdigest()
        out.append(no_update if drawn.get(str(i)) == key else fig)
        drawn[str(i)] = key
    return out, drawn
