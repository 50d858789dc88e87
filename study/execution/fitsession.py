"""One ``Tuner.fit`` for all the waves of a study, so that its trial actors outlive a wave.

An adaptive study (:func:`study.execution.waves.run_until`) and a tuned one
(:func:`study.execution.tuned.run_tuned`) run wave after wave, each wave a
:func:`study.execution.runner.run`. Were each wave its own ``Tuner.fit``, every
wave would start new trial actors: a Ray worker process that imports Ray Tune
and the family again, about 2 CPU-seconds each before the first trial trains
(``benchmarks/wave_cost.py``). Inside :func:`fit_session`, the waves' runs hand
their trials to one fit instead, running on a thread of the driver:

* its searcher (:class:`Queue`) hands out what the current wave put in, and
  while none of its trials is live it waits for the next wave (or the end), so
  Tune keeps a finished trial's actor for the next wave's first trial;
* a :class:`Relay` forwards Tune's events to the current wave's
  ``StoreAndProgress``, so each wave stores its trials, counts them and ends
  exactly as a wave with its own fit did: the looks, the asks and a resume read
  the store as before.

The fit is ended (and another started) where a wave's trainable differs, where
the fit would hold more than :func:`study.execution.feed.batch_size` trials (the
driver's memory), or where it stopped (Ctrl-C, a full disk). Nothing is kept
only here: a killed driver loses at most the trials that were running.
"""

from __future__ import annotations

import threading
from collections import deque
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from ray import tune
from ray.tune.search import Searcher

from .feed import Unsaved, batch_size
from .session import ray_session, without_mlflow_import
from .shipping import shipped_env

__all__ = ["study_fit", "fit_session", "active", "FitSession", "Queue", "Relay"]

_ACTIVE: list["FitSession"] = []        # the innermost session of this driver (one thread runs waves)


@contextmanager
def fit_session(storage: str) -> Iterator["FitSession"]:
    """Within this block, :func:`study.execution.runner.run` hands its trials to one
    fit (per trainable) stored under ``storage``; the fit ends with the block."""
    session = FitSession(storage)
    _ACTIVE.append(session)
    try:
        yield session
    finally:
        _ACTIVE.remove(session)
        session.close()


@contextmanager
def study_fit(space, out, num_cpus: int | None, kwargs: dict) -> Iterator[str | None]:
    """The one Ray session of an adaptive or tuned study's waves (the study's folder
    shipped to the workers where it travels: a joined run's own would not be applied)
    and, inside it, the one fit they share; yields the session's storage.
    ``kwargs`` are :func:`study.execution.runner.run`'s (``address``, ``ray_temp_dir``)."""
    address = kwargs.get("address")
    with ray_session(address=address, num_cpus=num_cpus, ray_temp_dir=kwargs.get("ray_temp_dir"),
                     runtime_env=shipped_env(space, out, address)) as storage, fit_session(storage):
        yield storage


def active() -> "FitSession | None":
    """The fit session the calling run hands its trials to (None: a fit of its own)."""
    return _ACTIVE[-1] if _ACTIVE else None


class Queue(Unsaved):
    """Hands Tune the trials put in, in order. With none to hand out and none
    live, it waits for more (a study's next wave) or :meth:`close`: Tune asks
    again only after a second's sleep, and a finished trial's actor is kept
    for the next trial only while the searcher is not finished."""

    def __init__(self, key: str) -> None:
        super().__init__()
        self.key, self.items, self.live, self.closed = key, deque(), 0, False
        self.cond = threading.Condition()

    def put(self, items: list[str]) -> None:
        """Trials for Tune to run next."""
        with self.cond:
            self.items.extend(items)
            self.cond.notify_all()

    def close(self) -> None:
        """No more trials: the fit ends once its live trials end."""
        with self.cond:
            self.closed = True
            self.cond.notify_all()

    def suggest(self, trial_id: str):
        with self.cond:
            while not self.items and not self.closed and self.live == 0:
                self.cond.wait(1.0)
            if self.items:
                self.live += 1
                return {self.key: self.items.popleft()}
            return Searcher.FINISHED if self.closed else None

    def on_trial_complete(self, trial_id: str, result=None, error: bool = False) -> None:
        with self.cond:
            self.live -= 1


class Relay(tune.Callback):
    """Forwards Tune's events to the current wave's ``StoreAndProgress``
    (``target``) and counts the wave's trials that ended."""

    def __init__(self) -> None:
        self.target = None
        self.ended = 0
        self.cond = threading.Condition()

    def __getstate__(self):
        return {}       # Tune pickles its callbacks into a state nothing restores from

    def aim(self, target) -> None:
        """Send the events from now on to ``target`` (None: drop them), counting afresh."""
        with self.cond:
            self.target, self.ended = target, 0

    def _forward(self, name: str, *args, ends: bool = False, **info) -> None:
        with self.cond:
            if self.target is not None:
                getattr(self.target, name)(*args, **info)
            if ends:
                self.ended += 1
                self.cond.notify_all()

    def on_trial_start(self, iteration, trials, trial, **info):
        self._forward("on_trial_start", iteration, trials, trial, **info)

    def on_trial_result(self, iteration, trials, trial, result, **info):
        self._forward("on_trial_result", iteration, trials, trial, result, **info)

    def on_trial_recover(self, iteration, trials, trial, **info):
        self._forward("on_trial_recover", iteration, trials, trial, **info)

    def on_trial_complete(self, iteration, trials, trial, **info):
        self._forward("on_trial_complete", iteration, trials, trial, ends=True, **info)

    def on_trial_error(self, iteration, trials, trial, **info):
        self._forward("on_trial_error", iteration, trials, trial, ends=True, **info)

    def on_step_end(self, iteration, trials, **info):
        self._forward("on_step_end", iteration, trials, **info)


class _Stop(tune.Stopper):
    """Stops the fit when asked (Ctrl-C) or when the current wave's store found the disk full."""

    def __init__(self, relay: Relay) -> None:
        self.relay, self.asked = relay, False

    def __call__(self, trial_id, result) -> bool:
        return False

    def stop_all(self) -> bool:
        target = self.relay.target
        return self.asked or (target is not None and target.full is not None)

    def __getstate__(self):
        return {}


class _Fit:
    """One ``Tuner.fit`` on a thread, fed by a :class:`Queue`."""

    def __init__(self, signature: tuple, make_tuner: Callable[..., Any], name: str, n: int, tracked: bool) -> None:
        self.signature, self.count, self.error, self.tracked = signature, 0, None, tracked
        self.queue, self.relay = Queue(name), Relay()
        self.stop = _Stop(self.relay)
        tuner = make_tuner(self.queue, self.relay, self.stop, n)
        self.thread = threading.Thread(target=self._fit, args=(tuner,), name="seedsweep-fit", daemon=True)
        self.thread.start()

    def _fit(self, tuner) -> None:
        try:
            with without_mlflow_import(self.tracked):
                tuner.fit()
        except BaseException as exc:        # noqa: BLE001 -- re-raised in the waiting run
            self.error = exc
        finally:
            with self.relay.cond:
                self.relay.cond.notify_all()

    def end(self) -> None:
        """Let the fit finish its live trials and end; wait for it."""
        self.queue.close()
        self.thread.join()


class FitSession:
    """The fit the runs of one study hand their waves to (see the module)."""

    def __init__(self, storage: str) -> None:
        self.storage, self.fit, self.fits = storage, None, 0

    def run_wave(self, signature: tuple, make_tuner: Callable[..., Any], name: str, units: list[str],
                 callback, slots: int, *, tracked: bool) -> None:
        """Run ``units`` (the JSON configs of one wave) on the session's fit,
        storing them through ``callback``; returns when every one has ended
        (or the fit stopped). ``make_tuner(searcher, relay, stopper, n)``
        builds a fit's ``Tuner``; ``signature`` says which fits may be shared.
        ``tracked``: the study logs to MLflow (:func:`study.execution.session.without_mlflow_import`).
        Raises what the fit raised; Ctrl-C stops the fit and re-raises."""
        fit = self.fit
        if (fit is None or fit.signature != signature or not fit.thread.is_alive()
                or fit.count + len(units) > batch_size(slots)):
            self.close()
            fit = self.fit = _Fit(signature, make_tuner, name, self.fits, tracked)
            self.fits += 1
        fit.relay.aim(callback)
        fit.count += len(units)
        fit.queue.put(units)
        try:
            with fit.relay.cond:
                while fit.relay.ended < len(units) and fit.thread.is_alive():
                    fit.relay.cond.wait(0.5)
        except KeyboardInterrupt:
            fit.stop.asked = True
            fit.end()
            raise
        finally:
            fit.relay.aim(None)
        if fit.error is not None:
            error, fit.error = fit.error, None
            raise error

    def close(self) -> None:
        """End the current fit, if any."""
        if self.fit is not None:
            self.fit.end()
            self.fit = None
