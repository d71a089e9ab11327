"""The MCP workspace fence: tools read, run and write only inside the workspace (and the client's
roots); writes go through folder descriptors, never through a link or a hard-linked file; `~`
means the home folder for reading and writing alike. The CLI, run by a person, goes anywhere."""

import os
import threading

import pytest
from mcp import Client, types
from probes import race_places, race_reads, racing

from mint_migrate.errors import OutsideWorkspace, WouldOverwrite
from mint_migrate.server import create_server
from mint_migrate.workspace import inside, read_fence, user_path, write_text

SECRET_TEXT = "outside-the-workspace: do not read me\n"


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def places(tmp_path):
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (outside / "secret.py").write_text(SECRET_TEXT, encoding="utf-8")
    return workspace, outside


def test_a_hard_link_to_an_outside_file_is_replaced_not_written_through(places):
    workspace, outside = places
    os.link(outside / "secret.py", workspace / "train.py")
    write_text("train.py", "print('new')\n", workspace, overwrite=True)
    assert (outside / "secret.py").read_text() == SECRET_TEXT
    assert (workspace / "train.py").read_text() == "print('new')\n"
    assert (workspace / "train.py").stat().st_ino != (outside / "secret.py").stat().st_ino


def test_never_through_a_link_and_never_over_a_file_unasked(places):
    workspace, outside = places
    (workspace / "out").symlink_to(outside)
    with pytest.raises(OutsideWorkspace, match="link"):
        write_text("out/new.py", "x = 1\n", workspace, overwrite=True)
    (workspace / "link.py").symlink_to(outside / "secret.py")
    write_text("link.py", "x = 1\n", workspace, overwrite=True)  # the link itself is replaced
    assert (outside / "secret.py").read_text() == SECRET_TEXT and not (workspace / "link.py").is_symlink()
    with pytest.raises(WouldOverwrite):
        write_text("link.py", "x = 2\n", workspace, overwrite=False)
    with pytest.raises(OutsideWorkspace, match="outside the workspace"):
        write_text("../outside/new.py", "x = 1\n", workspace, overwrite=True)
    assert sorted(p.name for p in outside.iterdir()) == ["secret.py"]


def test_a_folder_swapped_for_a_link_between_check_and_write_never_leads_outside(places):
    """A racer swaps ws/sub between a real folder and a link to the outside while files are written."""
    workspace, outside = places
    sub, parked = workspace / "sub", workspace / "parked"
    sub.mkdir()
    stop = threading.Event()

    def swap() -> None:
        while not stop.is_set():
            try:
                sub.rename(parked)
                sub.symlink_to(outside, target_is_directory=True)
                sub.unlink()
                parked.rename(sub)
            except OSError:
                pass

    racer = threading.Thread(target=swap)
    racer.start()
    written = refused = 0
    try:
        for i in range(300):
            try:
                write_text(f"sub/f{i}.py", "x = 1\n", workspace, overwrite=False)
                written += 1
            except (OutsideWorkspace, FileNotFoundError, FileExistsError, WouldOverwrite):
                refused += 1
    finally:
        stop.set()
        racer.join()
    assert sorted(p.name for p in outside.iterdir()) == ["secret.py"]
    assert written > 0 and written + refused == 300


def test_tilde_is_the_home_folder_for_reading_and_writing(places, monkeypatch):
    workspace, outside = places
    monkeypatch.setenv("HOME", str(outside))
    assert user_path("~/secret.py") == outside / "secret.py"
    with pytest.raises(OutsideWorkspace):
        inside("~/secret.py", workspace)
    with pytest.raises(OutsideWorkspace):
        write_text("~/new.py", "x = 1\n", workspace, overwrite=True)
    monkeypatch.setenv("HOME", str(workspace))
    write_text("~/home.py", "x = 1\n", workspace, overwrite=False)
    assert inside("~/home.py", workspace) == workspace / "home.py"


def test_the_read_fence_covers_files_the_engine_opens_itself(places):
    from mint_migrate.migrate import migrate

    workspace, outside = places
    (outside / "grpo.yaml").write_text("learning_rate: 0.123456\n", encoding="utf-8")
    launch = workspace / "run.sh"
    launch.write_text("python train.py --config ../outside/grpo.yaml\n", encoding="utf-8")
    (workspace / "train.py").write_text("import trl\n", encoding="utf-8")
    # Unfenced (the CLI), the analyzer follows the launch command to the outside config ...
    plan = migrate(launch, [], output_dir=None, workspace=workspace, overwrite=False).plan
    assert any("grpo.yaml" in label for label in plan.inputs)
    # ... fenced (an MCP tool), it may not, and neither may an explicit companion.
    for configs in ([], [outside / "grpo.yaml"]):
        with read_fence([workspace]), pytest.raises(OutsideWorkspace, match="outside the workspace"):
            migrate(launch, configs, output_dir=None, workspace=workspace, overwrite=False)


def test_the_read_fence_covers_hydra_config_groups_and_sibling_scripts(places):
    """The analyzer's own reads added with issue 10 (a hydra script's config folder, the scripts
    beside a config given alone) stay inside the fence too: not read, and no crash."""
    from mint_migrate.migrate import migrate

    workspace, outside = places
    (outside / "config" / "loss").mkdir(parents=True)
    (outside / "config" / "config.yaml").write_text(
        "defaults:\n  - loss: dpo\n  - _self_\noptim:\n  lr: 0.123456\n", encoding="utf-8"
    )
    (outside / "config" / "loss" / "dpo.yaml").write_text("beta: 0.375\n", encoding="utf-8")
    script = workspace / "train.py"
    script.write_text(
        "import hydra\nimport torch\n\n\n"
        '@hydra.main(config_path="../outside/config", config_name="config", version_base=None)\n'
        "def main(cfg):\n    optimizer = torch.optim.AdamW([], lr=cfg.optim.lr)\n    beta = cfg.loss.beta\n",
        encoding="utf-8",
    )
    plan = migrate(script, [], output_dir=None, workspace=workspace, overwrite=False).plan
    assert plan.settings.learning_rate is not None and plan.settings.learning_rate.value == 0.123456  # unfenced: read
    with read_fence([workspace]):
        fenced = migrate(script, [], output_dir=None, workspace=workspace, overwrite=False).plan
    assert fenced.settings.learning_rate is None or fenced.settings.learning_rate.value != 0.123456
    assert "0.375" not in fenced.model_dump_json()

    # A config given alone: the analyzer looks into the scripts beside it for the one that names it,
    # and a link among them to an outside file is skipped, not read and not fatal.
    (workspace / "grpo.yaml").write_text("learning_rate: 0.5\n", encoding="utf-8")
    (outside / "main.py").write_text("import sys  # grpo.yaml\n", encoding="utf-8")
    (workspace / "escape.py").symlink_to(outside / "main.py")
    with read_fence([workspace]):
        alone = migrate(workspace / "grpo.yaml", [], output_dir=None, workspace=workspace, overwrite=False).plan
    assert not any("escape.py" in label or "main.py" in label for label in alone.inputs)


@pytest.mark.anyio
async def test_mcp_tools_refuse_to_read_or_run_outside_the_workspace(places):
    workspace, outside = places
    (workspace / "escape.py").symlink_to(outside / "secret.py")
    (workspace / "train.py").write_text("import mint\n", encoding="utf-8")
    calls = [
        ("lint_script", {"path": "../outside/secret.py", "fix": True}),
        ("lint_script", {"path": str(outside / "secret.py"), "fix": True}),
        ("lint_script", {"path": "/etc/hostname"}),
        ("lint_script", {"path": "escape.py", "fix": True}),
        ("migrate_script", {"source_path": "train.py", "config_paths": ["../outside/secret.py"]}),
        ("migrate_script", {"source_path": str(outside / "secret.py")}),
        ("preflight_check", {"script_path": "../outside/secret.py"}),
        ("launch_smoke_run", {"script_path": "../outside/secret.py"}),
        ("launch_smoke_run", {"script_path": "escape.py"}),
        ("launch_smoke_run", {"script_path": "train.py", "parity_source_path": "../outside/secret.py"}),
        ("check_parity", {"source_path": "../outside/secret.py"}),
        ("check_parity", {"source_path": "escape.py"}),
        ("check_parity", {"source_path": "train.py", "data_path": str(outside / "secret.py")}),
    ]
    async with Client(create_server(workspace)) as client:
        for name, arguments in calls:
            result = await client.call_tool(name, arguments)
            text = result.content[0].text
            assert result.is_error, (name, arguments, text[:200])
            assert "outside the workspace" in text or "is a link" in text, (name, text)
            assert "do not read me" not in text
        fine = await client.call_tool("lint_script", {"path": "train.py", "fix": True})
        assert not fine.is_error, fine.content


@pytest.mark.anyio
async def test_the_clients_roots_are_inside_the_fence_too(places):
    workspace, outside = places

    async def roots(context) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=outside.as_uri(), name="outside")])

    # Roots are a handshake-era feature (deprecated in the 2026-07-28 protocol), as clients send them today.
    async with Client(create_server(workspace), mode="legacy", list_roots_callback=roots) as client:
        result = await client.call_tool("lint_script", {"path": str(outside / "secret.py")})
        assert not result.is_error, result.content
        assert result.structured_content["path"] == str(outside / "secret.py")
    async with Client(create_server(workspace)) as client:  # a client without roots
        assert (await client.call_tool("lint_script", {"path": str(outside / "secret.py")})).is_error


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_folder_or_file_swapped_for_a_link_mid_call_is_never_read_or_run(places):
    """240 MCP calls (lint, migrate, smoke launch) on paths a racer keeps swapping for links to the
    outside: no outside content in any answer, and the outside script never runs (its sentinel)."""
    workspace, outside = places
    race_places(workspace, outside)
    with racing(workspace, outside):
        async with Client(create_server(workspace)) as client:
            escapes, outcomes = await race_reads(client, outside, rounds=40)
    assert escapes == []
    assert sum(len(v) for v in outcomes.values()) == 240
    for name, succeeded in outcomes.items():  # the racer won some calls, and lost some: a real race
        assert 0 < sum(succeeded) < len(succeeded), (name, sum(succeeded), len(succeeded))
    assert sorted(p.name for p in outside.iterdir()) == ["cfg.yaml", "secret.py", "train.py"]


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_smoke_verdict_shows_no_source_line_of_a_file_outside_the_workspace(places):
    """Python prints a traceback's source lines by re-reading each file by name, so a frame in a
    file outside the workspace (imported from there, or a name swapped for a link while the run
    went on) would show that file's lines. The verdict keeps only lines it can read inside."""
    workspace, outside = places
    (outside / "helper.py").write_text("def fail():\n    raise RuntimeError('boom')  # OUTSIDE-LINE-MARK\n",
                                       encoding="utf-8")
    (workspace / "train.py").write_text(
        f"import sys\nsys.path.insert(0, {str(outside)!r})\nimport helper\nhelper.fail()  # INSIDE-LINE-MARK\n",
        encoding="utf-8",
    )
    async with Client(create_server(workspace)) as client:
        result = await client.call_tool("launch_smoke_run", {"script_path": "train.py", "timeout_s": 120})
    text = str(result.structured_content)
    assert "RuntimeError: boom" in text  # the run failed as written, and its traceback is there
    assert "OUTSIDE-LINE-MARK" not in text
    assert "INSIDE-LINE-MARK" in text  # the script's own line, from the very file that ran
