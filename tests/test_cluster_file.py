"""cluster.yaml (AWS) and cluster.local.yaml (a lab's own machines) pass Ray's
own launcher checks, and ours (what Ray does not check)."""

from __future__ import annotations

import copy

import pytest
import yaml

from tests.conftest import REPO

FILES = ["cluster.yaml", "cluster.local.yaml"]


def ray_prepare(config: dict) -> dict:
    from ray.autoscaler._private.util import prepare_config, validate_config

    prepared = prepare_config(copy.deepcopy(config))
    validate_config(prepared)
    return prepared


def load(name: str) -> dict:
    return yaml.safe_load((REPO / name).read_text())


@pytest.mark.parametrize("name", FILES)
def test_cluster_files_pass_rays_launcher_checks(name):
    ray_prepare(load(name))


@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("key", ["cluster_name", "setup_commands", "auth"])
def test_a_misspelled_top_level_key_fails_rays_checks(name, key):
    config = load(name)
    config[key[:-1] + key[-1].upper() + "x"] = config.pop(key)
    with pytest.raises(Exception):
        ray_prepare(config)


@pytest.mark.parametrize("name", FILES)
def test_setup_installs_from_the_lock_with_the_cluster_extra(name):
    config = load(name)
    setup = "\n".join(config["setup_commands"])
    assert "torch==2.13.0" in setup and "-r ~/seedsweep/requirements.lock" in setup
    assert "[cluster]" in setup
    assert setup.index("requirements.lock") < setup.index("[cluster]"), "the lock first, then the extra"
    assert {".venv", "runs"} <= set(config["rsync_exclude"])
    assert ".git" not in config["rsync_exclude"], "the commit that runs must travel (tests/test_cluster_setup.py)"
    assert "test -x ~/seedsweep/.venv/bin/python ||" in setup, "creating the venv is idempotent"
    pyproject = (REPO / "pyproject.toml").read_text()
    assert 'cluster = ["ray[default]==2.60.0", "boto3"]' in pyproject


@pytest.mark.parametrize("name", FILES)
def test_the_head_starts_no_idle_workers_for_its_first_driver(name):
    """Tune gives every trial actor a runtime environment, so the workers a head starts for its first
    driver never run a trial: 2 idle workers, 80 MiB each, with the variable at 1, none at 0
    (benchmarks/results/prestart-2026-12-07-ray-start-8cpus.json, whose head is started with the
    variable in ``ray start``'s environment, as the shell running this line puts it there)."""
    starts = [c for c in load(name)["head_start_ray_commands"] if "ray start" in c]
    assert len(starts) == 1, starts
    assert starts[0].startswith("RAY_prestart_worker_first_driver=0 ~/seedsweep/.venv/bin/ray start --head"), starts


def test_aws_node_types_declare_resources_and_gpu_workers_autoscale_from_zero():
    config = load("cluster.yaml")
    types = config["available_node_types"]
    for name, node in types.items():
        assert {"CPU"} <= set(node["resources"]), f"{name} must declare its CPUs"
    gpu_types = [n for n, t in types.items() if t["resources"].get("GPU", 0) >= 1]
    assert gpu_types and all(types[n]["min_workers"] == 0 for n in gpu_types), "GPU workers autoscale from 0"
    assert types[config["head_node_type"]]["resources"].get("GPU", 0) == 0, "the head is a CPU node"


def test_local_cluster_lists_its_machines_and_gets_one_node_type():
    config = load("cluster.local.yaml")
    provider = config["provider"]
    assert provider["type"] == "local" and provider["head_ip"] and provider["worker_ips"]
    prepared = ray_prepare(config)
    (node_type,) = prepared["available_node_types"].values()
    assert node_type["min_workers"] == node_type["max_workers"] == len(provider["worker_ips"])
