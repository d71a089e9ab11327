"""The MCP server through the SDK's own in-memory Client: schemas, annotations, errors, prompt, resources."""

import json

import pytest
from mcp import Client

from mcp_server.server import create_server

TOOLS = {
    "map_concept", "scaffold_train_py", "migrate_script", "lint_script", "preflight_check", "launch_smoke_run",
    "check_parity",
}


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
async def client(tmp_path):
    async with Client(create_server(tmp_path), raise_exceptions=True) as c:
        yield c


@pytest.mark.anyio
async def test_lists_every_tool_with_schemas_and_annotations(client):
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.description and tool.output_schema, tool.name
        # dedented: no line of the description starts with the docstring's source indentation
        assert not any(line.startswith(" ") for line in tool.description.splitlines()), tool.description
        assert tool.annotations is not None and tool.annotations.read_only_hint is not None, tool.name
        assert tool.annotations.open_world_hint is not None, tool.name
    # Annotations must be true: tools that can write a file are not read-only, the network ones are open-world.
    assert tools["map_concept"].annotations.read_only_hint is True
    assert tools["lint_script"].annotations.read_only_hint is True
    assert tools["scaffold_train_py"].annotations.read_only_hint is False
    assert tools["migrate_script"].annotations.read_only_hint is False
    assert tools["launch_smoke_run"].annotations.idempotent_hint is False
    assert tools["preflight_check"].annotations.open_world_hint is True
    assert tools["map_concept"].annotations.open_world_hint is False


@pytest.mark.anyio
async def test_map_concept_structured_output(client):
    result = await client.call_tool("map_concept", {"framework": "trl", "concept": "GRPOConfig"})
    assert not result.is_error
    table = result.structured_content
    assert table["framework"] == "trl"
    [concept] = table["concepts"]
    assert {"source", "mint", "explanation", "before", "after", "pitfalls"} <= set(concept)
    assert "importance_sampling" in concept["mint"] + concept["after"] + concept["explanation"]
    # The same value is mirrored as JSON text for models that read content only.
    assert json.loads(result.content[0].text)["framework"] == "trl"


@pytest.mark.anyio
async def test_map_concept_whole_table(client):
    result = await client.call_tool("map_concept", {"framework": "verl"})
    assert not result.is_error
    assert len(result.structured_content["concepts"]) >= 8


@pytest.mark.anyio
async def test_unknown_framework_is_a_tool_error_naming_the_known_ones(client):
    result = await client.call_tool("map_concept", {"framework": "trlx"})
    assert result.is_error
    text = result.content[0].text
    assert "Unknown framework 'trlx'" in text and "verl" in text and "Closest match: 'trl'" in text


@pytest.mark.anyio
async def test_unknown_concept_is_a_tool_error_with_the_closest_match(client):
    result = await client.call_tool("map_concept", {"framework": "trl", "concept": "GRPOConfg"})
    assert result.is_error
    assert "Closest match" in result.content[0].text


@pytest.mark.anyio
async def test_prompt_walks_the_workflow_for_a_framework(client):
    prompts = (await client.list_prompts()).prompts
    assert [p.name for p in prompts] == ["mint-migrate"]
    got = await client.get_prompt("mint-migrate", {"framework": "openrlhf"})
    text = got.messages[0].content.text
    assert "map_concept(framework='openrlhf', concept=...)" in text
    for tool in ("migrate_script", "lint_script", "preflight_check", "launch_smoke_run"):
        assert tool in text
    # migrate before map; the local preflight needs no key; the paid run needs consent
    assert text.index("migrate_script") < text.index("map_concept") < text.index("what the plan did not cover")
    assert "preflight_check(script_path=..., target='local')" in text and "consent" in text


@pytest.mark.anyio
async def test_prompt_accepts_a_question_instead_of_a_framework(client):
    got = await client.get_prompt("mint-migrate", {"framework": "how do I port my DPO run?"})
    assert "Identify the source framework" in got.messages[0].content.text


@pytest.mark.anyio
async def test_resources_serve_the_shipped_docs(client):
    uris = {r.uri for r in (await client.list_resources()).resources}
    assert {"mint://docs/cheatsheet", "mint://docs/reference", "mint://docs/skill"} <= uris
    cheatsheet = await client.read_resource("mint://docs/cheatsheet")
    assert "forward_backward" in cheatsheet.contents[0].text
    reference = await client.read_resource("mint://docs/reference")
    assert "create_lora_training_client" in reference.contents[0].text
    table = await client.read_resource("mint://concepts/torchforge")
    assert json.loads(table.contents[0].text)["framework"] == "torchforge"


@pytest.mark.anyio
async def test_scaffold_tool_writes_inside_the_workspace_only_and_never_over_a_file(client, tmp_path):
    args = {"kind": "grpo", "loss_fn": "ppo", "learning_rate": 3e-5, "group_size": 4, "output_path": "rl/train.py"}
    result = await client.call_tool("scaffold_train_py", args)
    assert not result.is_error, result.content
    written = tmp_path / "rl" / "train.py"
    assert result.structured_content["path"] == str(written)
    source = written.read_text()
    assert source == result.structured_content["source"]
    assert "LEARNING_RATE = 3e-05" in source and 'LOSS_FN = "ppo"' in source

    again = await client.call_tool("scaffold_train_py", args)
    assert again.is_error and "already exists" in again.content[0].text
    outside = await client.call_tool("scaffold_train_py", {**args, "output_path": "../escape.py"})
    assert outside.is_error and "outside the workspace root" in outside.content[0].text
    assert not (tmp_path.parent / "escape.py").exists()


@pytest.mark.anyio
async def test_scaffold_tool_rejects_out_of_range_tuning(client):
    result = await client.call_tool("scaffold_train_py", {"kind": "sft", "lora_rank": 0})
    assert result.is_error and "lora_rank" in result.content[0].text
