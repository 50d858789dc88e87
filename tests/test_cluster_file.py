"""cluster.yaml passes Ray's own launcher checks, and ours (what Ray does not check)."""

from __future__ import annotations

import copy

import pytest
import yaml

from tests.conftest import REPO

CLUSTER = REPO / "cluster.yaml"


def ray_validate(config: dict) -> None:
    from ray.autoscaler._private.util import prepare_config, validate_config

    validate_config(prepare_config(copy.deepcopy(config)))


def test_cluster_yaml_passes_rays_launcher_checks():
    ray_validate(yaml.safe_load(CLUSTER.read_text()))


def test_a_misspelled_top_level_key_fails_rays_checks():
    config = yaml.safe_load(CLUSTER.read_text())
    config["availabel_node_types"] = config.pop("available_node_types")
    with pytest.raises(Exception):
        ray_validate(config)


def test_node_types_declare_resources_and_setup_installs_from_the_lock():
    config = yaml.safe_load(CLUSTER.read_text())
    types = config["available_node_types"]
    for name, node in types.items():
        assert {"CPU"} <= set(node["resources"]), f"{name} must declare its CPUs"
    gpu_types = [n for n, t in types.items() if t["resources"].get("GPU", 0) >= 1]
    assert gpu_types and all(types[n]["min_workers"] == 0 for n in gpu_types), "GPU workers autoscale from 0"
    assert types[config["head_node_type"]]["resources"].get("GPU", 0) == 0, "the head is a CPU node"
    setup = "\n".join(config["setup_commands"])
    assert "-r ~/seedsweep/requirements.lock" in setup and "torch==2.13.0" in setup
    assert ".venv" in config["rsync_exclude"]
