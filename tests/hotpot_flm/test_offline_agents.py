"""A hub checkpoint name with no network: one clear error after one connection attempt,
not after transformers' own retries (24-70 s)."""

import os
import subprocess
import sys

from tests.support.connections import counting_environment

PROBE = """
from condambig_tasks.hotpot_flm.hf_models import CheckpointSpec, check_checkpoint_available
try:
    check_checkpoint_available(CheckpointSpec("google/flan-t5-base"), "answering agent",
                               "answering_agent")
except Exception as error:
    print(type(error).__name__, "|", error)
"""


def test_an_unreachable_hub_fails_fast_with_the_agent_error(tmp_path, closed_port):
    env = {key: value for key, value in os.environ.items()
           if key not in {"HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE",
                          "CONDAMBIG_OFFLINE"}}
    env.update(HF_ENDPOINT=f"http://127.0.0.1:{closed_port}", HF_HOME=str(tmp_path / "hf"),
               HF_HUB_ETAG_TIMEOUT="30", HF_HUB_DOWNLOAD_TIMEOUT="30")
    env, attempts = counting_environment(tmp_path / "counting", closed_port, env)
    result = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.stdout.startswith("AgentLoadError |"), result.stdout + result.stderr
    assert "google/flan-t5-base" in result.stdout
    # the connect check and huggingface_hub's one user-agent lookup (utils/_detect_agent.py);
    # its download, retried for a minute, was never tried
    assert attempts() <= 2
