"""The skill pack against the Claude Code / Agent Skills formats (research/ecosystem.md section 3).

SKILL.md and commands/migrate.md frontmatter, .claude-plugin/plugin.json, .mcp.json; and
that what the docs tell an agent to run exists: every `mint-migrate ...` command line parses with
the real CLI parser, every MCP tool call uses the server's real tool names and parameters, every
link resolves, and the server starts from the exact command .mcp.json registers.
"""

import ast
import asyncio
import json
import re
import shlex
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from mint_migrate import __version__
from mint_migrate.cli import build_parser
from mint_migrate.server import create_server
from mint_migrate.tools import TOOLS as REGISTRY

ROOT = Path(__file__).resolve().parent.parent
SKILL = ROOT / "SKILL.md"
COMMAND = ROOT / "commands" / "migrate.md"
PLUGIN = ROOT / ".claude-plugin" / "plugin.json"
MCP_JSON = ROOT / ".mcp.json"
CHEATSHEET = ROOT / "mint_api_cheatsheet.md"

NAME_RULE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")  # <= 64 chars, no leading/trailing/double hyphen
SEMVER = re.compile(r"^\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?$")
# Agent Skills spec keys plus the Claude Code extensions (ecosystem.md 3.1).
SKILL_KEYS = {
    "name", "description", "license", "compatibility", "metadata", "allowed-tools",
    "argument-hint", "disable-model-invocation", "user-invocable", "disallowed-tools", "model",
    "effort", "context", "agent", "hooks", "paths",
}
COMMAND_KEYS = {"description", "allowed-tools", "model", "argument-hint", "disable-model-invocation"}
PLUGIN_KEYS = {
    "$schema", "name", "version", "description", "author", "homepage", "repository", "license",
    "keywords", "commands", "agents", "skills", "hooks", "mcpServers", "userConfig",
}
PLUGIN_PATH_KEYS = ("commands", "agents", "skills", "hooks", "mcpServers")
TOOLS = [tool.name for tool in REGISTRY]  # the tool registry is the one list (tests/test_tool_surface.py)
CLI_COMMANDS = [tool.command for tool in REGISTRY]
FRAMEWORK_NAMES = ["TRL", "verl", "OpenRLHF", "torchforge", "Tinker", "PyTorch"]


def frontmatter(path: Path) -> tuple[dict, str]:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n"), f"{path.name} must start with a --- frontmatter block"
    head, body = text[4:].split("\n---\n", 1)
    data = yaml.safe_load(head)
    assert isinstance(data, dict), f"{path.name}: frontmatter is not a mapping"
    return data, body


# --- SKILL.md -------------------------------------------------------------------------------


def test_skill_frontmatter_follows_the_skill_format():
    meta, _ = frontmatter(SKILL)
    assert set(meta) <= SKILL_KEYS, f"unknown keys: {set(meta) - SKILL_KEYS}"
    assert meta["name"] == "mint-migrate"
    assert len(meta["name"]) <= 64 and NAME_RULE.match(meta["name"])
    description = meta["description"]
    assert isinstance(description, str) and 50 < len(description) <= 1024
    assert "<" not in description and ">" not in description
    assert meta["argument-hint"] == "[framework_name or migration_question]"


def test_skill_description_says_what_and_when():
    description = frontmatter(SKILL)[0]["description"]
    assert "MinT" in description
    for framework in FRAMEWORK_NAMES:
        assert framework in description, framework
    assert re.search(r"\bUse (it|this skill) when\b", description), "the description must say when to use it"
    assert not re.match(r"(I|You)\b", description), "write the description in the third person"
    # not only migrations: any code that imports mint is the same knowledge (and what lint_script is for)
    assert re.search(r"writing, reviewing or debugging any code that imports mint", description)


def _headings() -> list[str]:
    return [line for line in frontmatter(SKILL)[1].splitlines() if line.startswith("## ")]


def _section(heading_word: str) -> str:
    body = frontmatter(SKILL)[1]
    start = body.index(next(h for h in _headings() if heading_word in h))
    end = body.find("\n## ", start + 1)
    return body[start : end if end != -1 else None]


def test_skill_is_short_and_walks_the_workflow_in_order():
    text = SKILL.read_text(encoding="utf-8")
    assert len(text.splitlines()) < 500
    headings = _headings()
    # migrate first (it traces every setting), map only what the plan left out; local checks and the
    # local smoke run before the port is finished; the paid run last, then the hand-over
    steps = ["Identify", "Migrate", "Map what the plan did not cover", "Lint", "Preflight for the local run",
             "Smoke run on mint-local", "Finish the port", "Run on MinT", "Hand over"]
    positions = [next(i for i, h in enumerate(headings) if step in h) for step in steps]
    assert positions == sorted(positions), headings
    assert "$ARGUMENTS" in frontmatter(SKILL)[1]


def test_preflight_before_the_local_smoke_run_targets_local():
    local = _section("Preflight for the local run")
    assert 'preflight_check(script_path="out/train.py", target="local")' in local
    assert "mint-migrate preflight out/train.py --target local" in local
    assert "not a failure" in local  # a missing key does not block the local run
    remote = _section("Run on MinT")
    assert 'target="remote"' in remote and "--target remote" in remote
    assert "consent" in next(h for h in _headings() if "Run on MinT" in h)


def test_the_finish_step_names_what_an_agent_must_check(tmp_path):
    finish = _section("Finish the port")
    for must in ("--reward", "MINT023", "LEARNING_RATE", "LORA_RANK", "Smoke again"):
        assert must in finish, must
    # the MIGRATION.md sections it names are the ones the report really writes
    from mint_migrate.migrate import migrate

    migrate(ROOT / "examples" / "trl" / "grpo_trl.py", [], output_dir="out", workspace=tmp_path, overwrite=False)
    report = (tmp_path / "out" / "MIGRATION.md").read_text(encoding="utf-8")
    for quoted in re.findall(r'"([A-Z][^"]+)"', finish):
        if quoted in ("Settings read from the inputs", "MinT choices", "What cannot move as-is"):
            assert f"## {quoted}" in report, quoted
    # and the constants it names are the ones the rendered script defines
    train = (tmp_path / "out" / "train.py").read_text(encoding="utf-8")
    for constant in re.findall(r"`([A-Z][A-Z_]+)`", finish):
        if constant != "MINT023":
            assert re.search(rf"^{constant} = ", train, re.M), constant


def test_map_is_asked_only_for_what_the_plan_did_not_cover():
    section = _section("Map what the plan did not cover")
    assert "only for the rest" in section and "every setting" not in section.lower().replace("each setting", "")


def test_skill_names_each_tool_and_its_cli_fallback():
    body = frontmatter(SKILL)[1]
    for tool in TOOLS:
        assert f"`{tool}" in body, tool
    for command in CLI_COMMANDS:
        assert f"`mint-migrate {command} " in body, command


def test_skill_covers_the_costly_pitfalls():
    body = frontmatter(SKILL)[1]
    for must in [
        "tokens[:-1]", "tokens[1:]", "weights[1:]",         # token alignment
        "10x a full",                                      # LoRA learning rate (mint_facts.LORA_LR_RULE)
        ".result()", "two awaits", "concurrent.futures.Future",  # futures
        "load_state_with_optimizer", "create_lora_training_client",  # resume recipe
        "stop=[", "stop_token_ids",                        # stop tokens
        'metrics["loss:sum"]',                              # no .loss
        "--resume latest", "checkpoints.jsonl",            # resuming a generated train.py
        "GRPO code overloads names", "Parallelise across groups", "as_completed",  # RL seed items
        "Watching a real run", "SLURM",
    ]:
        assert must in body, must


def test_links_resolve():
    for doc in (SKILL, CHEATSHEET):
        for target in re.findall(r"\]\(([^)#\s]+)\)", doc.read_text(encoding="utf-8")):
            if "://" not in target:
                assert (doc.parent / target).exists(), f"{doc.name} links to missing {target}"
    body = frontmatter(SKILL)[1]
    assert "](mint_api_cheatsheet.md)" in body and "](mint_api_reference.txt)" in body


# --- commands/migrate.md ------------------------------------------------------------------------


def test_tool_names_follow_claude_codes_naming():
    """Plugin tools are mcp__plugin_<plugin>_<server>__<tool>; hand-registered ones mcp__<server>__<tool>."""
    plugin = json.loads(PLUGIN.read_text(encoding="utf-8"))["name"]
    [server] = json.loads(MCP_JSON.read_text(encoding="utf-8"))["mcpServers"]
    body = frontmatter(SKILL)[1]
    assert f"`mcp__plugin_{plugin}_{server}__map_concept`" in body
    assert f"`mcp__{server}__map_concept`" in body
    for doc in (SKILL, COMMAND, ROOT / "README.md"):
        for name in re.findall(r"mcp__[\w-]+__\w+", doc.read_text(encoding="utf-8")):
            assert name.rsplit("__", 1)[1] in TOOLS or name.endswith("<tool>"), f"{doc.name}: {name}"
            assert name.startswith((f"mcp__plugin_{plugin}_{server}__", f"mcp__{server}__")), f"{doc.name}: {name}"


def test_skill_and_command_names_differ_and_the_readme_says_how_to_call_each():
    """A skill shadows a command of the same name, and plugin commands are /<plugin>:<name>."""
    skill = frontmatter(SKILL)[0]["name"]
    plugin = json.loads(PLUGIN.read_text(encoding="utf-8"))["name"]
    assert COMMAND.stem != skill
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"/{plugin}:{COMMAND.stem} trl" in readme  # plugin route
    assert f"/{skill} trl" in readme  # personal skill route


def test_command_frontmatter_and_arguments():
    meta, body = frontmatter(COMMAND)
    assert set(meta) <= COMMAND_KEYS, f"unknown keys: {set(meta) - COMMAND_KEYS}"
    assert isinstance(meta["description"], str) and 20 < len(meta["description"]) <= 250
    assert "<" not in meta["description"] and ">" not in meta["description"]
    assert meta["argument-hint"] == "[framework_name or migration_question]"
    assert "$ARGUMENTS" in body
    for tool in TOOLS:
        assert tool in body, tool


# --- what the docs tell an agent to run exists -------------------------------------------------

PLACEHOLDERS = {"FRAMEWORK": "verl", "[CONCEPT]": "GRPOConfig", "CONCEPT": "GRPOConfig", "SRC": "train.py", "FILE": "c.yaml"}


def _cli_lines() -> list[tuple[str, str]]:
    lines = []
    for doc in (SKILL, COMMAND):
        for span in re.findall(r"`mint-migrate ([^`]+)`", doc.read_text(encoding="utf-8")):
            lines.append((doc.name, span))
    return lines


def test_every_documented_cli_line_parses_with_the_real_cli():
    lines = _cli_lines()
    assert len(lines) >= 12
    parser = build_parser()
    seen = set()
    for doc, span in lines:
        argv = [PLACEHOLDERS.get(a, a) for a in shlex.split(span)]
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:
            assert exc.code == 0, f"{doc}: `mint-migrate {span}` does not parse (exit {exc.code})"
            continue
        seen.add(args.command)
    assert set(CLI_COMMANDS) <= seen


def _tool_calls(text: str) -> list[ast.Call]:
    calls = []
    for span in re.findall(r"`([a-z_]+\([^`]*\))`", text):
        try:
            node = ast.parse(span, mode="eval").body
        except SyntaxError:
            continue
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in TOOLS:
            calls.append(node)
    return calls


def test_every_documented_tool_call_matches_the_server_schema():
    tools = {t.name: t.input_schema for t in asyncio.run(create_server(ROOT).list_tools())}
    assert set(tools) == set(TOOLS)
    calls = _tool_calls(SKILL.read_text(encoding="utf-8")) + _tool_calls(COMMAND.read_text(encoding="utf-8"))
    assert {c.func.id for c in calls} == set(TOOLS), "every tool should be shown with its arguments"
    for call in calls:
        schema = tools[call.func.id]
        assert not call.args, f"{call.func.id}: MCP tools take keyword arguments only"
        for kw in call.keywords:
            assert kw.arg in schema["properties"], f"{call.func.id} has no parameter {kw.arg!r}"
            prop = schema["properties"][kw.arg]
            allowed = prop.get("enum") or next((a["enum"] for a in prop.get("anyOf", []) if "enum" in a), None)
            if allowed and isinstance(kw.value, ast.Constant):
                assert kw.value.value in allowed, f"{call.func.id}({kw.arg}={kw.value.value!r}) not in {allowed}"


# --- .claude-plugin/plugin.json and .mcp.json ----------------------------------------------------


def _paths(value) -> list[str]:
    return [value] if isinstance(value, str) else list(value) if isinstance(value, list) else []


def test_plugin_manifest():
    manifest = json.loads(PLUGIN.read_text(encoding="utf-8"))
    assert set(manifest) <= PLUGIN_KEYS, f"unknown keys: {set(manifest) - PLUGIN_KEYS}"
    assert NAME_RULE.match(manifest["name"]) and len(manifest["name"]) <= 64
    assert SEMVER.match(manifest["version"])
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert manifest["version"] == pyproject["project"]["version"] == __version__
    assert manifest["description"] and "<" not in manifest["description"]
    assert manifest["author"]["name"]
    for key in PLUGIN_PATH_KEYS:
        for path in _paths(manifest.get(key)):
            assert path.startswith("./"), f"{key}: {path} must be relative and start with ./"
            assert (ROOT / path).exists(), f"{key}: {path} does not exist"
    # It bundles the skill, the command and the MCP server.
    skill_dirs = _paths(manifest["skills"])
    assert any((ROOT / d / "SKILL.md").exists() for d in skill_dirs)
    assert any(p.endswith("commands/migrate.md") for p in _paths(manifest["commands"]))
    assert (ROOT / manifest["mcpServers"]).resolve() == MCP_JSON.resolve()


def test_mcp_json_registers_the_server():
    config = json.loads(MCP_JSON.read_text(encoding="utf-8"))
    assert list(config) == ["mcpServers"], "Claude Code reads only the mcpServers key"
    server = config["mcpServers"]["mint-migrate"]
    assert server.get("type", "stdio") == "stdio"
    # The plugin route installs nothing: python3 runs the launcher inside the plugin's own folder.
    assert server["command"] == "python3"
    launcher, *rest = server["args"]
    assert launcher.startswith("${CLAUDE_PLUGIN_ROOT}/")
    assert (ROOT / launcher.removeprefix("${CLAUDE_PLUGIN_ROOT}/")).is_file()
    assert build_parser().parse_args(rest).command == "serve"
    # Secrets never go in the file: any env value must be a ${VAR} reference to the user's environment.
    for value in server.get("env", {}).values():
        assert re.fullmatch(r"\$\{[A-Z_][A-Z0-9_]*(:-[^}]*)?\}", value), value


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.anyio
async def test_server_starts_from_the_readme_registration(tmp_path):
    """The pip route: `claude mcp add mint-migrate -- mint-migrate serve` (the plugin route has its
    own test, tests/test_plugin_install.py)."""
    from mcp import Client, StdioServerParameters

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "claude mcp add mint-migrate -- mint-migrate serve" in readme
    command = str(Path(sys.executable).parent / "mint-migrate")  # the venv's console script
    params = StdioServerParameters(command=command, args=["serve"], cwd=str(tmp_path))
    async with Client(params) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert names == set(TOOLS)
        prompts = {p.name for p in (await client.list_prompts()).prompts}
        assert "mint-migrate" in prompts


def test_marketplace_lists_this_plugin():
    """`/plugin marketplace add <repo>` reads .claude-plugin/marketplace.json; its entry must be this plugin."""
    market = json.loads((ROOT / ".claude-plugin" / "marketplace.json").read_text(encoding="utf-8"))
    manifest = json.loads(PLUGIN.read_text(encoding="utf-8"))
    assert NAME_RULE.match(market["name"]) and market["owner"]["name"]
    [entry] = market["plugins"]
    assert entry["name"] == manifest["name"] and entry["version"] == manifest["version"]
    assert entry["source"].startswith("./") and (ROOT / entry["source"] / ".claude-plugin" / "plugin.json").exists()
    assert entry["description"] and "<" not in entry["description"]


# --- facts the docs state come from mint_migrate/sdk_facts.py and the scaffold code ------------------

# The scaffold whose code the cheatsheet's "Throughput" subsection names (one place to change when
# the throughput machinery moves to a scaffold option).
THROUGHPUT_SCAFFOLD = {"kind": "grpo", "throughput": True}


def _cheatsheet_section(title: str) -> str:
    text = CHEATSHEET.read_text(encoding="utf-8")
    start = text.index(title)
    end = min(i for i in (text.find("\n### ", start + 1), text.find("\n## ", start + 1)) if i != -1)
    return text[start:end]


def test_throughput_names_are_the_scaffolds_code():
    from mint_migrate.render import ScaffoldOptions, render_scaffold

    source = render_scaffold(ScaffoldOptions(**THROUGHPUT_SCAFFOLD))
    section = _cheatsheet_section("### Throughput")
    names = [n for n in re.findall(r"`([A-Za-z_][A-Za-z0-9_]*|--[a-z-]+)`", section) if not n.startswith("MINT")]
    assert len(names) >= 20
    missing = [n for n in names if not re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", source)]
    assert not missing, f"the cheatsheet names scaffold code that the rendered GRPO scaffold lacks: {missing}"
    for flag in re.findall(r"`(--[a-z-]+)", section):
        assert f'"{flag}"' in source, flag


def test_loss_facts_in_the_docs_are_sdk_facts():
    from mint_migrate import sdk_facts

    listed = ", ".join(f"`{n}`" for n in sdk_facts.LOSS_NAMES[:-1]) + f" and `{sdk_facts.LOSS_NAMES[-1]}`"
    assert f"The built-in losses are exactly {listed}" in " ".join(frontmatter(SKILL)[1].split())
    losses = _cheatsheet_section("## 5. Built-in losses")
    for name in sdk_facts.LOSS_NAMES:
        assert f"`\"{name}\"`" in losses, name
    ppo, cispo = sdk_facts.PPO_CLIP, sdk_facts.CISPO_CLIP
    assert f"{ppo['clip_low_threshold']:g} / {ppo['clip_high_threshold']:g}" in losses
    assert f"{cispo['clip_low_threshold']:.1f} / {cispo['clip_high_threshold']:.1f}" in losses
    assert f"{sdk_facts.DRO_BETA:g}" in losses  # the beta mint-migrate sends


def test_no_doc_strikes_future_future_as_038():
    """tinker 0.22's training futures have .future(); only .coroutine() is 0.38 (tests/test_sdk_facts.py)."""
    docs = [SKILL, CHEATSHEET, COMMAND, ROOT / "docs" / "rules.md", *sorted((ROOT / "mint_migrate" / "concepts").glob("*.yaml"))]
    for doc in docs:
        text = doc.read_text(encoding="utf-8")
        assert "~~`future.future()`~~" not in text and "~~`.future()`~~" not in text, doc.name
    assert "`future()`" in CHEATSHEET.read_text(encoding="utf-8")
