"""Configurations are drawn by our sampler, deterministically, and every option
and seed of a configuration shares them exactly."""

from __future__ import annotations

import io

import pyarrow.parquet as pq
import pytest

from seedsweep.study.schema import escape_key, unescape_key
from seedsweep.study.spec.grid import effective_params, trial_grid
from seedsweep.study.spec.sampling import sample_configs
from seedsweep.study.spec.spacefile import parse_space

BASE = """
name: s
family: synthetic
samples: {samples}
seeds: {seeds}
sampler: {sampler}
sampler_seed: 3
compare:
  classifier: [softmax, crf]
space:
  optimizer: {{choice: [adam, nadam, sgd]}}
  dropout: {{choice: [none, naive, variational]}}
  dropout_rate: {{choice: [0.05, 0.25, 0.5], when: {{dropout: [naive, variational]}}}}
  lr: {{loguniform: [1.0e-4, 1.0e-2]}}
  layers: {{int: [1, 3]}}
  momentum: {{uniform: [0.0, 0.9]}}
"""


def space(samples=20, seeds=2, sampler="random", extra=""):
    return parse_space(BASE.format(samples=samples, seeds=seeds, sampler=sampler) + extra, "t.yaml")


def parquet_bytes(table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


@pytest.mark.parametrize("sampler", ["random", "qmc"])
def test_same_file_gives_byte_identical_configs(sampler):
    assert parquet_bytes(sample_configs(space(sampler=sampler))) == parquet_bytes(sample_configs(space(sampler=sampler)))


@pytest.mark.parametrize("sampler", ["random", "qmc"])
def test_growing_samples_keeps_existing_configurations(sampler):
    small, large = sample_configs(space(10, sampler=sampler)), sample_configs(space(37, sampler=sampler))
    assert large.slice(0, 10).equals(small)
    assert large.num_rows == 37


def test_values_respect_their_distributions():
    t = sample_configs(space(200)).to_pandas()
    assert set(t.optimizer) == {"adam", "nadam", "sgd"}
    assert t.lr.between(1e-4, 1e-2).all() and t.momentum.between(0.0, 0.9).all()
    assert set(t.layers) == {1, 2, 3} and str(t.layers.dtype) == "int64"
    # log-uniform: about half the draws below the geometric midpoint 1e-3
    assert 0.4 < (t.lr < 1e-3).mean() < 0.6
    assert t.config_id.is_unique


def test_adding_a_parameter_does_not_move_the_others():
    before = sample_configs(space(15)).to_pandas()
    after = sample_configs(space(15, extra="  batch: {choice: [8, 32]}\n")).to_pandas()
    assert before.equals(after[before.columns])


def test_qmc_fills_the_space_more_evenly_than_random():
    # 64 Sobol points put exactly 16 in each quarter of a dimension; random draws rarely do.
    q = sample_configs(space(64, sampler="qmc")).to_pandas()
    counts = q.momentum.floordiv(0.9 / 4).clip(upper=3).value_counts()
    assert sorted(counts.tolist()) == [16, 16, 16, 16]


def test_grid_pairs_options_and_seeds_on_identical_hyperparameters():
    sp = space(6, seeds=3)
    grid = trial_grid(sp, sample_configs(sp))
    assert len(grid) == sp.n_trials == 6 * 2 * 3
    assert len({t.key for t in grid}) == len(grid)
    by_config = {}
    for t in grid:
        shared = {k: v for k, v in t.params if k != "classifier"}
        by_config.setdefault(t.config_id, []).append(shared)
        assert t.hparams["classifier"] == t.option
        assert t.key == f"{t.config_id}/classifier={t.option}/seed={t.seed}"
    for rows in by_config.values():
        assert all(r == rows[0] for r in rows)


def test_conditional_parameter_is_null_where_its_condition_fails():
    sp = space(60)
    for t in trial_grid(sp, sample_configs(sp)):
        hp = t.hparams
        if hp["dropout"] == "none":
            assert hp["dropout_rate"] is None
        else:
            assert hp["dropout_rate"] in (0.05, 0.25, 0.5)


def test_several_compared_choices_draw_the_others_per_configuration():
    sp = parse_space("""
name: two
family: synthetic
samples: 30
seeds: 1
compare:
  classifier: [softmax, crf]
  optimizer: [adam, nadam, sgd]
space:
  rate: {choice: [0.1, 0.5], when: {optimizer: [sgd]}}
""", "two.yaml")
    configs = sample_configs(sp)
    assert {"classifier", "optimizer", "rate"} <= set(configs.column_names)
    grid = trial_grid(sp, configs)
    assert len(grid) == 30 * (2 + 3)
    drawn = {r["config_id"]: r for r in configs.to_pylist()}
    for t in grid:
        other = "optimizer" if t.choice == "classifier" else "classifier"
        assert t.hparams[t.choice] == t.option
        assert t.hparams[other] == drawn[t.config_id][other]
        # the condition follows the trial's own optimizer, not the configuration's draw
        assert (t.hparams["rate"] is None) == (t.hparams["optimizer"] != "sgd")


def test_effective_params_chain_conditions():
    sp = parse_space("""
name: chain
family: synthetic
samples: 1
seeds: 1
compare: {c: [a, b]}
space:
  x: {choice: [on, off]}
  y: {choice: [p, q], when: {x: [on]}}
  z: {choice: [1, 2], when: {y: [p]}}
""", "chain.yaml")
    off = effective_params(sp, {"x": "off", "y": "p", "z": 1}, "c", "a")
    assert off["y"] is None and off["z"] is None
    on = effective_params(sp, {"x": "on", "y": "p", "z": 1}, "c", "a")
    assert on["y"] == "p" and on["z"] == 1


@pytest.mark.parametrize("key", ["c00001/classifier=crf/seed=1", "c00002/model=bert base %x/seed=10"])
def test_trial_key_escaping_round_trips_and_is_flat(key):
    name = escape_key(key)
    assert "/" not in name and unescape_key(name) == key
