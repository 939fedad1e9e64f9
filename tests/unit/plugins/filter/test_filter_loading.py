"""What a worker process pays to look up one of this collection's filters.

ansible-core's Jinja2Loader imports every file of plugins/filter whenever a task looks up any filter of the
collection (it walks the package until the name is found, and keeps walking), and it does so again in every
forked worker process. So a module that only some filters need (the GPU planner, the Gluster helpers, other
filters' rules) is imported where it is used, not at the top of a filter file; these tests keep it that way.
They run Ansible's own loader in a fresh interpreter, as a worker would.
"""

from __future__ import annotations

import json
import subprocess
import sys

from ansible.utils.collection_loader import AnsibleCollectionConfig

LOOKUP = r"""
import json, sys
from ansible.plugins.loader import filter_loader, init_plugin_loader
init_plugin_loader([sys.argv[1]])
before = set(sys.modules)
found = filter_loader.get_with_context(sys.argv[2]).object
print(json.dumps({"found": found is not None,
                  "loaded": sorted(m for m in set(sys.modules) - before if m.startswith("ansible_collections.hpclab"))}))
"""

# The collection loader compiles these from source on every import (no bytecode): each is imported by the filters
# that use it, in the function that uses it.
DEFERRED = (
    "ansible_collections.hpclab.cluster.plugins.plugin_utils._gpu_plan",
    "ansible_collections.hpclab.cluster.plugins.module_utils._gluster",
    "ansible_collections.hpclab.cluster.plugins.plugin_utils._checks",
    "ansible_collections.hpclab.cluster.plugins.plugin_utils._names",
    "ansible_collections.hpclab.cluster.plugins.plugin_utils._hostlist",
    "ansible_collections.hpclab.cluster.plugins.module_utils._munge",
    "ansible_collections.hpclab.cluster.plugins.plugin_utils._users",
)


def collections_root():
    """The collections path the unit tests' conftest.py installed (this checkout as hpclab.cluster)."""
    return AnsibleCollectionConfig.collection_paths[0]


def lookup(name):
    proc = subprocess.run([sys.executable, "-c", LOOKUP, collections_root(), name],
                          capture_output=True, text=True, timeout=120, check=True)
    return json.loads(proc.stdout.splitlines()[-1])


def test_a_filter_lookup_imports_every_filter_file_but_none_of_the_collections_helpers():
    result = lookup("hpclab.cluster.slurm_node_lines")
    assert result["found"]
    loaded = set(result["loaded"])
    # The loader really walks the whole package: filters of other layers are imported too.
    assert "ansible_collections.hpclab.cluster.plugins.filter.llm_serving_problems" in loaded
    assert "ansible_collections.hpclab.cluster.plugins.filter.nfs_ganesha_problems" in loaded
    assert not loaded & set(DEFERRED), sorted(loaded & set(DEFERRED))


def test_the_filters_that_need_the_deferred_modules_still_work_from_a_fresh_worker():
    code = LOOKUP.replace(
        'found = filter_loader.get_with_context(sys.argv[2]).object',
        'found = filter_loader.get_with_context(sys.argv[2]).object\n'
        'plan = found.j2_function([{"index": 0, "memory_total": 81559}],\n'
        '                         [{"name": "m", "model": "meta-llama/Meta-Llama-3-8B-Instruct", "max_model_len": 8192}])\n'
        'assert plan["models"][0]["port"] == 8000, plan\n'
        'layout = filter_loader.get_with_context("hpclab.cluster.gluster_volume_layout").object.j2_function(\n'
        '    {"name": "gv0", "replica": 2, "brick_dirs": ["/b"]}, ["n1", "n2"], ["n1", "n2"])\n'
        'assert layout["bricks"] == ["n1:/b", "n2:/b"], layout\n'
        'lines = filter_loader.get_with_context("hpclab.cluster.slurm_hostlist_compress").object.j2_function(["n1", "n2", "n3"])\n'
        'assert lines == "n[1-3]", lines\n'
        'key = filter_loader.get_with_context("hpclab.cluster.munge_random_key").object.j2_function(1024)\n'
        'assert len(key) > 1024, len(key)\n'
        'gone = filter_loader.get_with_context("hpclab.cluster.cluster_users_removed").object.j2_function(\n'
        '    "bob:x:2002:2002:hpclab cluster user:/gfsv/home/bob:/bin/bash", [])\n'
        'assert gone == ["bob"], gone',
    )
    proc = subprocess.run([sys.executable, "-c", code, collections_root(), "hpclab.cluster.llm_gpu_plan"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    loaded = set(json.loads(proc.stdout.splitlines()[-1])["loaded"])
    assert set(DEFERRED) - {"ansible_collections.hpclab.cluster.plugins.plugin_utils._checks",
                            "ansible_collections.hpclab.cluster.plugins.plugin_utils._names"} <= loaded
