"""The ``seedsweep`` command line (:mod:`seedsweep.cli`), on top of both
packages: :mod:`study` (the engine) and :mod:`analysis` (the statistics).
Nothing imports it; ``python -m seedsweep`` and the ``seedsweep`` console
script run it."""
