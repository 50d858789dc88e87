"""A Hugging Face ``Trainer`` that reports to a seedsweep trial.

An existing ``Trainer`` script becomes a ``function`` study's function with
a few lines::

    from seedsweep.study.families.function.trainer import report_to

    def fit(trial):
        args = TrainingArguments(output_dir=trial.dir, eval_strategy="epoch", logging_strategy="epoch",
                                 save_strategy="no", num_train_epochs=trial.max_epochs, seed=trial.seed,
                                 learning_rate=trial.params["lr"], report_to=[])
        trainer = Trainer(model=model, args=args, train_dataset=train, eval_dataset=dev,
                          compute_metrics=accuracy)
        report_to(trial, trainer, test_dataset=test, metric="accuracy")
        trainer.train()

After every evaluation the callback reports to the trial: ``dev`` is the
Trainer's own ``eval_<metric>`` on its ``eval_dataset``, ``test`` the same
metric of ``trainer.predict(test_dataset)``, ``loss`` the training loss the
Trainer logged last (set ``logging_strategy`` like ``eval_strategy``), and
``dev_loss`` its ``eval_loss``. When seedsweep has seen enough (patience,
``max_epochs``) it sets ``control.should_training_stop``, and the Trainer
ends the run itself.
"""

from __future__ import annotations

from typing import Any

from transformers import TrainerCallback

__all__ = ["SeedsweepCallback", "report_to"]


class SeedsweepCallback(TrainerCallback):
    """Reports each evaluation of ``trainer`` to ``trial`` (see the module docstring)."""

    def __init__(self, trial: Any, trainer: Any, test_dataset: Any, metric: str = "accuracy") -> None:
        self.trial, self.trainer, self.test_dataset, self.metric = trial, trainer, test_dataset, metric

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        metrics = metrics or {}
        key = f"eval_{self.metric}"
        if key not in metrics:
            raise KeyError(f"the Trainer's evaluation has no {key!r} (it has {sorted(metrics)}): give "
                           "compute_metrics that returns {'" + self.metric + "': ...}, or name another metric")
        test = self.trainer.predict(self.test_dataset, metric_key_prefix="test").metrics[f"test_{self.metric}"]
        losses = [entry["loss"] for entry in state.log_history if "loss" in entry]
        extras = {"dev_loss": float(metrics["eval_loss"])} if "eval_loss" in metrics else {}
        if self.trial.report(dev=float(metrics[key]), test=float(test), loss=losses[-1] if losses else None,
                             **extras):
            control.should_training_stop = True
        return control


def report_to(trial: Any, trainer: Any, test_dataset: Any, metric: str = "accuracy") -> SeedsweepCallback:
    """Attach a :class:`SeedsweepCallback` to ``trainer``; returns it."""
    callback = SeedsweepCallback(trial, trainer, test_dataset, metric)
    trainer.add_callback(callback)
    return callback
