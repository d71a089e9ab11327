"""map_concept / `mint-migrate map`: how a source framework's concept lands on MinT."""

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from mint_migrate.concepts import ConceptTable
from mint_migrate.frameworks import framework_list
from mint_migrate.tools.base import DETAIL_DESCRIPTION, MCP_ONLY, Cli, Detail, Env, Hints, ToolSpec, fit


class MapRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    framework: Annotated[str, Field(description=f"Source framework: {framework_list()}."), Cli(help=framework_list())]
    concept: Annotated[
        str | None,
        Field(description="A class, config key or CLI flag (e.g. 'GRPOConfig', 'rollout.n'); omit for the whole table."),
        Cli(help="a class, config key or flag; omit for the whole table"),
    ] = None
    detail: Annotated[Detail, Field(description=DETAIL_DESCRIPTION), MCP_ONLY] = "summary"


class ConceptResult(ConceptTable):
    omitted: list[str] = Field(default_factory=list, description="What this summary leaves out.")


def run(request: MapRequest, env: Env) -> ConceptTable:
    from mint_migrate.concepts import map_concept

    return map_concept(request.framework, request.concept)


def summary(table: ConceptTable, request: MapRequest, env: Env) -> ConceptResult:
    result = ConceptResult.model_validate(table.model_dump())
    if request.concept is None:
        # The whole table is a menu: each concept's name and MinT equivalent; one concept's example
        # and pitfalls are one more call away.
        for concept in result.concepts:
            concept.explanation = concept.before = concept.after = ""
            concept.pitfalls, concept.aliases = [], []
        result.omitted.append(f"explanation, before/after, pitfalls and aliases of each concept: "
                              f"map_concept(framework='{table.framework}', concept=ID) or detail='full'")
    return fit(result)


def text(table: ConceptTable, request: MapRequest) -> str:
    lines = [f"{table.title}", table.summary.strip(), ""]
    for c in table.concepts:
        lines.append(f"* {c.source}  ->  {c.mint}")
        if request.concept:
            lines += ["", c.explanation.strip(), "", "Before:", _indent(c.before), "After:", _indent(c.after)]
            lines += ["Pitfalls:"] + [f"  - {p}" for p in c.pitfalls]
    if not request.concept:
        lines += ["", f"Details: mint-migrate map {table.framework} CONCEPT"]
    return "\n".join(lines)


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.rstrip().splitlines())


TOOL = ToolSpec(
    name="map_concept",
    command="map",
    title="Map a framework concept to MinT",
    blurb="how a class, config key or flag of the source framework maps onto MinT, with before/after and pitfalls",
    description="How a source-framework concept maps onto MinT: the equivalent call, why, a before/after "
    "example and the pitfalls. With no concept, the whole table for that framework (each concept's name "
    "and MinT equivalent; ask for one concept for its example).",
    cli_help="show how a framework's concepts map onto MinT",
    request=MapRequest,
    result=ConceptResult,
    annotations=Hints(read_only=True, idempotent=True, open_world=False),
    run=run,
    summary=summary,
    full=lambda table, request, env: ConceptResult.model_validate(table.model_dump()),
    text=text,
)
