"""A tuned comparison's driver (docs/reference/statistics.md, "Tuned comparisons").

Every option of the compared choice is tuned ``replicates`` times by an
Optuna search over ``space``; search (option, r) asks ``budget`` trials. The
driver asks and tells through Optuna's ask/tell interface and runs the trials
on Ray Tune through :func:`study.execution.runner.run`, one wave at a time: each search
asks ``tune.wave`` trials, every search's asks of a wave run together (the
slots stay busy across searches), and only then is each trial's dev score
told, in position order. Nothing about a search lives only in memory:

* Each ask gets a fresh sampler seeded by (sampler_seed, replicate,
  position), so what it proposes depends only on the search's history (the
  told trials at earlier positions) and not on how often the driver was
  restarted. Replicate r of every option uses the same seeds (and the same
  startup points).
* A search's Optuna storage is a journal file in the run directory
  (``optuna/<option>.r<replicate>.journal``, readable with ``optuna.load_study``). A
  resume checks it against the stored rows and rebuilds it from them when it
  is missing, behind, or holds asks a killed run never told.
* A resume starts at the first wave with a trial not stored and asks its
  trials again; they are the same (``configs.parquet`` holds every asked
  trial, and :func:`study.execution.resume.check_compatible` refuses a re-ask that
  differs, e.g. under another Optuna version).

``sampler: qmc`` feeds points of a scrambled Sobol sequence (seeded per
replicate) to the search as enqueued trials, one dimension per parameter,
categorical ones included: Optuna's ``QMCSampler`` draws its first trial at
random and samples categorical parameters at random.
"""

from __future__ import annotations

import os
import sys
import warnings
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, Iterator, TextIO

import pyarrow as pa

from ..schema import TrialSpec, trial_key
from ..spec.grid import effective_params
from ..spec.sampling import arrow_type, cast_value, value_at
from ..spec.space import Param, Space
from ..spec.tuning import position_id, sampler_seed_of, search_name, trial_seed
from ..store.rundir import RunDir
from ..store.studies import journal_path, load_study
from .runner import RunSummary, run

__all__ = ["run_tuned", "ask_values"]


def _distribution(optuna, p: Param):
    if p.kind == "choice":
        return optuna.distributions.CategoricalDistribution(list(p.values))
    if p.kind == "int":
        return optuna.distributions.IntDistribution(int(p.low), int(p.high))
    return optuna.distributions.FloatDistribution(float(p.low), float(p.high), log=p.kind == "loguniform")


def _active(p: Param, values: dict[str, Any]) -> bool | None:
    """Whether ``p``'s condition holds given ``values`` (None: not known yet)."""
    for other, allowed in p.when:
        if other not in values:
            return None
        if values[other] is _OFF or values[other] not in allowed:
            return False
    return True


_OFF = object()     # a parameter whose condition does not hold


def _suggest(trial, p: Param) -> Any:
    if p.kind == "choice":
        return trial.suggest_categorical(p.name, list(p.values))
    if p.kind == "int":
        return trial.suggest_int(p.name, int(p.low), int(p.high))
    return trial.suggest_float(p.name, float(p.low), float(p.high), log=p.kind == "loguniform")


def ask_values(optuna, trial, space: Space, option: Any) -> dict[str, Any]:
    """The ``space`` parameters suggested to ``trial`` (define-by-run): a
    parameter is suggested once its ``when`` condition can be read and holds;
    one whose condition fails is null, as in a random study."""
    choice = space.compare[0][0]
    values: dict[str, Any] = {choice: option}
    left = list(space.params)
    while left:
        progressed = False
        for p in list(left):
            ok = _active(p, values)
            if ok is None:
                continue
            values[p.name] = _suggest(trial, p) if ok else _OFF
            left.remove(p)
            progressed = True
        if not progressed:          # a circle of conditions (refused by the file checks): none of them holds
            values.update({p.name: _OFF for p in left})
            break
    return {p.name: (None if values[p.name] is _OFF else cast_value(p, values[p.name])) for p in space.params}


def _sobol_point(space: Space, replicate: int, position: int) -> dict[str, Any]:
    from scipy.stats import qmc     # SciPy's Sobol generator (what Optuna's QMCSampler wraps)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # "balance properties" warning for n != 2**m
        sobol = qmc.Sobol(d=len(space.params), scramble=True, seed=sampler_seed_of(space.sampler_seed, replicate, 0))
        point = sobol.random(position + 1)[position]
    return {p.name: value_at(p, float(u)) for p, u in zip(space.params, point)}


def _sampler(optuna, space: Space, study, replicate: int, position: int):
    seed = sampler_seed_of(space.sampler_seed, replicate, position)
    if space.tune.sampler == "tpe":
        return optuna.samplers.TPESampler(seed=seed, n_startup_trials=space.tune.startup)
    if space.tune.sampler == "qmc":
        study.enqueue_trial(_sobol_point(space, replicate, position), skip_if_exists=False)
    return optuna.samplers.RandomSampler(seed=seed)


def _finished(row: dict[str, Any]) -> float | None:
    """The value told for a stored row: its dev score, or None (told as failed)."""
    dev = row.get("dev_score")
    return None if row.get("status") == "failed" or dev is None or dev != dev else float(dev)


class _Search:
    """One search: its Optuna study on its journal, and its trials asked so far."""

    def __init__(self, optuna, space: Space, out: Path, option: Any, replicate: int, history: list[dict]):
        self.optuna, self.space, self.option, self.replicate = optuna, space, option, replicate
        self.path = journal_path(out, option, replicate)
        self.dists = {p.name: _distribution(optuna, p) for p in space.params}
        self.direction = "maximize" if space.train.mode == "max" else "minimize"
        self.name = search_name(option, replicate)
        self.study = self._open(history)
        self.asked: dict[int, int] = {}          # position -> Optuna trial number, asked and not told

    def _expected(self, history: list[dict]) -> list[tuple]:
        return [({k: v for k, v in ((p.name, row[p.name]) for p in self.space.params) if v is not None},
                 _finished(row)) for row in history]

    def _open(self, history: list[dict]):
        optuna = self.optuna
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists():
            try:
                study = optuna.load_study(study_name=self.name, storage=self._storage(self.path))
                have = [(t.params, t.value if t.state == optuna.trial.TrialState.COMPLETE else None, t.state)
                        for t in study.get_trials(deepcopy=False)]
                states = optuna.trial.TrialState
                if have == [(p, v, states.FAIL if v is None else states.COMPLETE) for p, v in self._expected(history)]:
                    return study
            except (KeyError, ValueError, RuntimeError):
                pass                                # unreadable or not this search: rebuilt below
        tmp = self.path.with_name(self.path.name + ".rebuild")
        tmp.unlink(missing_ok=True)
        study = optuna.create_study(study_name=self.name, storage=self._storage(tmp), direction=self.direction)
        for params, value in self._expected(history):
            state = optuna.trial.TrialState.COMPLETE if value is not None else optuna.trial.TrialState.FAIL
            study.add_trial(optuna.trial.create_trial(params=params, distributions={
                k: self.dists[k] for k in params}, value=value, state=state))
        os.replace(tmp, self.path)
        return optuna.load_study(study_name=self.name, storage=self._storage(self.path))

    def _storage(self, path: Path):
        from optuna.storages.journal import JournalFileBackend, JournalFileOpenLock   # (Optuna: see run_tuned)

        return self.optuna.storages.JournalStorage(JournalFileBackend(str(path), lock_obj=JournalFileOpenLock(
            str(path))))

    def ask(self, position: int) -> dict[str, Any]:
        """The parameters of the trial at ``position`` (asked now, told later)."""
        self.study.sampler = _sampler(self.optuna, self.space, self.study, self.replicate, position)
        trial = self.study.ask()
        self.asked[position] = trial.number
        return ask_values(self.optuna, trial, self.space, self.option)

    def tell(self, position: int, row: dict[str, Any]) -> None:
        """Tell the stored row of the trial at ``position``."""
        value = _finished(row)
        number = self.asked.pop(position)
        if value is None:
            self.study.tell(number, state=self.optuna.trial.TrialState.FAIL)
        else:
            self.study.tell(number, value)


def _spec(space: Space, option: Any, replicate: int, position: int, values: dict[str, Any]) -> TrialSpec:
    choice = space.compare[0][0]
    cid = position_id(option, replicate, position)
    seed = trial_seed(space.sampler_seed, replicate, position)
    params = effective_params(space, values, choice, option)
    return TrialSpec(key=_key(space, option, replicate, position), config_id=cid, choice=choice, option=option,
                     seed=seed, params=tuple(params.items()),
                     extra=(("search", search_name(option, replicate)), ("replicate", replicate),
                            ("position", position)))


def _key(space: Space, option: Any, replicate: int, position: int) -> str:
    return trial_key(position_id(option, replicate, position), space.compare[0][0], option,
                     trial_seed(space.sampler_seed, replicate, position))


def _configs(space: Space, specs: list[TrialSpec]) -> pa.Table:
    """``configs.parquet`` of a tuned study: every asked trial's search, position and parameters, in ask order."""
    cols: dict[str, pa.Array] = {
        "config_id": pa.array([s.config_id for s in specs], pa.string()),
        "search": pa.array([dict(s.extra)["search"] for s in specs], pa.string()),
        "position": pa.array([dict(s.extra)["position"] for s in specs], pa.int64())}
    for p in space.params:
        cols[p.name] = pa.array([s.hparams[p.name] for s in specs], arrow_type(p.value_type))
    return pa.table(cols)


def _stored_rows(rd: RunDir, space: Space) -> dict[str, dict[str, Any]]:
    """trial key -> stored row (status, dev score, parameters) of ``rd``."""
    if not rd.exists():
        return {}
    table = rd.read_trials(["trial_key", "status", "dev_score"] + [p.name for p in space.params])
    return {r["trial_key"]: r for r in table.to_pylist()} if table is not None else {}


@contextmanager
def _quiet_optuna(optuna) -> Iterator[None]:
    level = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)     # no "Trial n finished" line per tell
    try:
        yield
    finally:
        optuna.logging.set_verbosity(level)


def run_tuned(space_path, out, *, stream: TextIO | None = None, num_cpus: int | None = None,
              retry_failed: bool = False, **kwargs) -> RunSummary:
    """Run (or resume) the tuned study of ``space_path`` (it has ``tune:``)
    into the local run directory ``out``; ``kwargs`` go to :func:`study.execution.runner.run`.
    Returns the last wave's :class:`~study.execution.runner.RunSummary` (its totals
    cover every trial asked)."""
    import optuna       # Optuna, only when a tuned study runs (the readers never load it)

    stream = stream or sys.stderr
    space = load_study(space_path)
    tune = space.tune
    rd = RunDir(out)
    (choice, options), = space.compare
    searches = [(o, r) for o in options for r in range(tune.replicates)]
    stored = _stored_rows(rd, space)
    specs: list[TrialSpec] = []
    first = 0           # the first wave with a trial not stored: asking resumes there
    while first < tune.waves and all(_key(space, o, r, p) in stored for o, r in searches
                                     for p in range(first * tune.wave, min((first + 1) * tune.wave, tune.budget))):
        first += 1
    upto = first * tune.wave
    for k in range(first):      # the stored trials of finished waves, in ask order
        for o, r in searches:
            for p in range(k * tune.wave, min((k + 1) * tune.wave, tune.budget)):
                key = _key(space, o, r, p)
                specs.append(_spec(space, o, r, p, {q.name: stored[key][q.name] for q in space.params}))
    summary = None
    if not rd.exists():         # the manifest (and sealed claims) first: the journals live inside a run directory
        run(space, out, plan=(_configs(space, []), []), stream=stream, num_cpus=num_cpus, **kwargs)
    # one Ray and one Tune fit for every wave (each run() joins them), only when a wave is left to run
    session = nullcontext()
    if first < tune.waves:
        from .fitsession import study_fit     # Ray Tune at import: only once a wave runs
        session = study_fit(space, out, num_cpus, kwargs)
    with _quiet_optuna(optuna), session:
        live = {(o, r): _Search(optuna, space, out, o, r,
                                [stored[_key(space, o, r, p)] for p in range(min(upto, tune.budget))])
                for o, r in searches}
        for k in range(first, tune.waves):
            positions = range(k * tune.wave, min((k + 1) * tune.wave, tune.budget))
            wave = [_spec(space, o, r, p, live[(o, r)].ask(p)) for o, r in searches for p in positions]
            specs.extend(wave)
            summary = run(space, out, plan=(_configs(space, specs), specs), stream=stream, num_cpus=num_cpus,
                          **kwargs)
            if summary.interrupted:
                return summary
            rows = _stored_rows(rd, space)
            for t in wave:
                extra = dict(t.extra)
                live[(t.option, extra["replicate"])].tell(extra["position"], rows[t.key])
    if summary is None or retry_failed:     # every trial stored already (one pass for the manifest and the
        # counts), or --retry-failed: the failed trials of every wave run again with their stored parameters
        # and seeds; the later asks keep the history they were asked with (the failure told), and each
        # journal is rebuilt from the rows so that it holds the retried values
        summary = run(space, out, plan=(_configs(space, specs), specs), stream=stream, num_cpus=num_cpus,
                      retry_failed=retry_failed, **kwargs)
        if retry_failed and not summary.interrupted:
            rows = _stored_rows(rd, space)
            with _quiet_optuna(optuna):
                for o, r in searches:
                    _Search(optuna, space, out, o, r, [rows[_key(space, o, r, p)] for p in range(tune.budget)
                                                       if _key(space, o, r, p) in rows])
    return summary
