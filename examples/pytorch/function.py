"""The digits model of ``digits.py`` as a ``function`` study's function:
seedsweep calls ``fit(trial)`` once per trial and owns the rest (seeding,
early stopping on dev, the test score at the best dev epoch)."""

from digits import train


def fit(trial):
    p = trial.params
    train(p["optimizer"], p["lr"], p["hidden"], trial.max_epochs, trial.seed,
          lambda epoch, loss, dev, test: trial.report(dev=dev, test=test, loss=loss))
