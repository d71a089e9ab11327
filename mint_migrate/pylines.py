"""Start lines of libcst nodes, computed in one cheap code-generation pass (for the Python index).

libcst's PositionProvider records full ranges (line and column, start and end) for every node,
whitespace included, and costs about four times the parse itself: on a 500-line script that alone
would eat most of the 200 ms analysis budget. The analysis only needs the start line of the nodes
that have a syntactic position, so this state counts newlines while the module regenerates its
code, and records the line where each node's syntactic position starts (the same start line
PositionProvider reports). If libcst's internals ever change shape, it falls back to the provider.
"""

from dataclasses import dataclass, field

import libcst as cst


class _Start:
    __slots__ = ("state", "node", "start_node")

    def __init__(self, state: "_LineState", node: cst.CSTNode, start_node: cst.CSTNode | None):
        self.state, self.node, self.start_node = state, node, start_node

    def __enter__(self) -> None:
        self.state.starts[self.node] = self.state.line

    def __exit__(self, *exc: object) -> bool:
        if self.start_node is not None:
            starts = self.state.starts
            starts[self.node] = starts.get(self.start_node, starts[self.node])
        return False


try:
    from libcst._nodes.internal import CodegenState

    @dataclass
    class _LineState(CodegenState):
        line: int = 1
        starts: dict = field(default_factory=dict)

        def add_indent_tokens(self) -> None:
            self.tokens.extend(self.indent_tokens)

        def add_token(self, value: str) -> None:
            self.tokens.append(value)
            self.line += value.count("\n")

        def record_syntactic_position(self, node, *, start_node=None, end_node=None):
            return _Start(self, node, start_node)

except ImportError:  # pragma: no cover - only if libcst reorganises its internals
    _LineState = None


def node_lines(module: cst.Module) -> dict[cst.CSTNode, int]:
    """{node: 1-based start line} for every node with a syntactic position."""
    if _LineState is not None:
        try:
            state = _LineState(default_indent=module.default_indent, default_newline=module.default_newline)
            module._codegen(state)
            return state.starts
        except (AttributeError, TypeError):  # pragma: no cover
            pass
    from libcst.metadata import MetadataWrapper, PositionProvider

    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    return {node: pos.start.line for node, pos in positions.items()}
