"""The MCP server through the SDK's own in-memory Client: schemas, annotations, errors, prompt, resources."""

import json
from pathlib import Path

import pytest
from mcp import Client

from mint_migrate.server import create_server
from mint_migrate.tools import TOOLS as REGISTRY

TOOLS = {tool.name for tool in REGISTRY}


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


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.anyio
async def test_tools_marked_read_only_write_nothing_and_the_others_do(client, tmp_path):
    """The annotations are promises a client relies on (it may skip confirmation for read-only
    tools): every read-only tool is called with its most active arguments and the workspace must
    be byte for byte the same; the tools that may write are the ones that do."""
    (tmp_path / "train.py").write_text(
        "import mint\nfrom mint import types\nsc = mint.ServiceClient()\n"
        "tc = sc.create_lora_training_client(base_model='Qwen/Qwen3-0.6B', rank=8)\n"
        "sampler = tc.save_weights_and_get_sampling_client('s')\n"
        "params = types.SamplingParams(max_tokens=8, stop_token_ids=[1])\n",
        encoding="utf-8",
    )
    tools = {t.name: t for t in (await client.list_tools()).tools}
    read_only_calls = {
        "map_concept": {"framework": "verl"},
        "lint_script": {"path": "train.py", "fix": True},
        "preflight_check": {"script_path": "train.py"},
    }
    assert {n for n, t in tools.items() if t.annotations.read_only_hint} == set(read_only_calls)
    before = snapshot(tmp_path)
    for name, arguments in read_only_calls.items():
        result = await client.call_tool(name, arguments)
        assert not result.is_error, (name, result.content)
    assert snapshot(tmp_path) == before
    fixed = (await client.call_tool("lint_script", read_only_calls["lint_script"])).structured_content
    assert fixed["fixes_applied"], "the lint call above had fixes to apply, and still wrote nothing"

    writes = {
        "scaffold_train_py": {"kind": "sft", "output_path": "out/sft.py"},
        "migrate_script": {"source_path": "train.py", "output_dir": "migrated"},
    }
    for name, arguments in writes.items():
        assert tools[name].annotations.read_only_hint is False
        result = await client.call_tool(name, arguments)
        assert not result.is_error, (name, result.content)
    assert {"out/sft.py", "out/mint_run.py", "migrated/train.py", "migrated/mint_run.py",
            "migrated/MIGRATION.md"} <= set(snapshot(tmp_path))


@pytest.mark.anyio
async def test_scaffold_arguments_are_the_scaffold_options(client):
    """One declaration: the tool's arguments (types, bounds, descriptions) come from ScaffoldOptions."""
    from mint_migrate.render import ScaffoldOptions

    [tool] = [t for t in (await client.list_tools()).tools if t.name == "scaffold_train_py"]
    properties = tool.input_schema["properties"]
    assert set(properties) == (set(ScaffoldOptions.model_fields) - {"header"}) | {"output_path", "overwrite", "detail"}
    assert tool.input_schema["required"] == ["kind"]
    for name, field in ScaffoldOptions.model_fields.items():
        if name != "header" and field.description:
            assert properties[name]["description"] == field.description, name
    rank = next(s for s in properties["lora_rank"]["anyOf"] if s.get("type") == "integer")
    assert (rank["minimum"], rank["maximum"]) == (1, 1024)


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
    for tool in TOOLS:
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
    assert "LEARNING_RATE = 3e-05" in source and 'LOSS_FN = "ppo"' in source
    # Written files are named, not inlined: their full texts are resources (and detail='full' inlines them).
    companion = tmp_path / "rl" / "mint_run.py"
    assert result.structured_content["companion_path"] == str(companion)
    assert result.structured_content["source"] is None and result.structured_content["companion_source"] is None
    assert result.structured_content["resources"] == ["mint://workspace/rl/train.py", "mint://workspace/rl/mint_run.py"]
    for uri, path in zip(result.structured_content["resources"], (written, companion), strict=True):
        assert (await client.read_resource(uri)).contents[0].text == path.read_text()
    assert "def load_rows" in companion.read_text()

    again = await client.call_tool("scaffold_train_py", args)
    assert again.is_error and "already exists" in again.content[0].text
    # Overwrite rules hold for the companion as for train.py: a hand-edited one is kept unless asked.
    companion.write_text("# edited by hand")
    other = await client.call_tool("scaffold_train_py", {**args, "output_path": "rl/other.py"})
    assert other.is_error and "mint_run.py already exists" in other.content[0].text
    assert not (tmp_path / "rl" / "other.py").exists()
    forced = await client.call_tool("scaffold_train_py", {**args, "overwrite": True})
    assert not forced.is_error and "def load_rows" in companion.read_text()
    outside = await client.call_tool("scaffold_train_py", {**args, "output_path": "../escape.py"})
    assert outside.is_error and "outside the workspace root" in outside.content[0].text
    assert not (tmp_path.parent / "escape.py").exists()


@pytest.mark.anyio
async def test_scaffold_tool_rejects_out_of_range_tuning(client):
    result = await client.call_tool("scaffold_train_py", {"kind": "sft", "lora_rank": 0})
    assert result.is_error and "lora_rank" in result.content[0].text
