"""The real run with a real key: a generated train.py given an sk- key reaches its first step against
a server that does not advertise JWT auth, where the PyPI mindlab-toolkit 0.2.0 alone rejects the key
(api_facts §0.9). mint-local plays that server (`--no-jwt-auth`); nothing leaves loopback."""

import os
import subprocess
import sys

import pytest

from mint_local.launcher import LocalServer
from mint_migrate.render import ScaffoldOptions, scaffold

SK_KEY = "sk-mint-local-no-jwt"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def no_jwt_server():
    server = LocalServer.start(model="tiny", jwt_auth=False)
    try:
        yield server
    finally:
        server.stop()


def env_for(server: LocalServer) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TINKER_API_KEY", "TINKER_BASE_URL")}
    return {**env, "MINT_BASE_URL": server.base_url, "MINT_API_KEY": SK_KEY, "TINKER_TELEMETRY": "0",
            "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def test_the_server_reproduces_the_bug_the_script_works_around(no_jwt_server):
    """Without the workaround the pinned SDK refuses the key before any request: the server is the
    one the issue describes, so the next test proves the workaround and not a friendly server."""
    code = f"import mint\nmint.ServiceClient(base_url={no_jwt_server.base_url!r}, api_key={SK_KEY!r})\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env=env_for(no_jwt_server))
    assert done.returncode != 0 and "must start with the 'tml-' prefix" in done.stderr, done.stderr[-2000:]


def test_a_generated_train_py_reaches_its_first_step_with_an_sk_key(no_jwt_server, tmp_path):
    scaffold(ScaffoldOptions(kind="sft"), output_path=str(tmp_path / "train.py"), workspace=tmp_path, overwrite=False)
    done = subprocess.run(
        [sys.executable, str(tmp_path / "train.py"), "--smoke", "--steps", "1", "--base-model", no_jwt_server.model_name,
         "--log-dir", str(tmp_path / "logs")],
        capture_output=True, text=True, timeout=600, env=env_for(no_jwt_server), cwd=tmp_path,
    )
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-3000:])
    assert "METRIC step=1 " in done.stdout and SK_KEY not in done.stdout + done.stderr
