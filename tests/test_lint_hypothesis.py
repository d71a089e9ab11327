"""Lint never crashes: mutated corpus files and random token soup always give either findings
(possibly none) with sane locations, or a parse error with a location. With fix=True the
returned source always parses."""

from pathlib import Path

import libcst as cst
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mint_migrate.lint import RULES, lint_source

CORPUS = Path(__file__).parent / "lint_corpus"
SEEDS = [p.read_text(encoding="utf-8") for p in sorted(CORPUS.rglob("*.py"))]
TOKENS = [
    "import mint", "import tinker", "from mint import types", "\n", "\n    ", "    ", "(", ")", "[", "]", ":", ",",
    "=", ".", "*", "**", "await", "async def f():", "def g(tc):", "return", "for x in y:", "if x:", "else:",
    "tc", "sc", "fut", "forward_backward", "forward_backward_async", "sample", "sample_async", "result",
    "result()", "loss", "samples", "metrics", "Datum", "ModelInput.from_ints", "loss_fn_inputs",
    '"target_tokens"', '"weights"', '"mask"', "tokens[1:]", "tokens[:-1]", "AdamParams", "learning_rate=1e-6",
    "SamplingParams", "stop_token_ids=[1]", "create_training_client_from_state", "create_lora_training_client",
    "load_state", "asyncio.gather", "os.environ", '"TINKER_API_KEY"', '"sk-abcdefghijklmnopqrst"',
    '"https://mint.macaron.xin"', "AutoTokenizer.from_pretrained", "lambda", "#", '"""', "'", "\\", "{", "}",
    "@", "x", "1", "None", "with", "as", "yield", "global", ";", "->", ":=", "f'{x}'", "\t",
]


def check(source: str) -> None:
    report = lint_source(source, "fuzz.py", fix=True)
    if report.parse_error is not None:
        assert report.findings == [] and report.fixed_source is None
        assert report.parse_error_line is not None and report.parse_error_line >= 1
        assert report.parse_error_col is not None and report.parse_error_col >= 1
        return
    lines = source.count("\n") + 1
    for finding in report.findings:
        assert finding.id in RULES and finding.name == RULES[finding.id].name
        assert 1 <= finding.line <= lines and finding.col >= 1
        assert finding.message and finding.fix
    assert report.errors + report.warnings == len(report.findings)
    cst.parse_module(report.fixed_source)
    assert set(report.fixes_applied) <= {f.id for f in report.findings if f.fixable}


@st.composite
def mutated(draw) -> str:
    source = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["delete", "insert", "duplicate_line", "drop_line", "truncate", "splice"]))
        n = len(source)
        a = draw(st.integers(0, n))
        if op == "delete":
            source = source[:a] + source[a + draw(st.integers(1, 40)) :]
        elif op == "insert":
            source = source[:a] + draw(st.sampled_from(TOKENS)) + source[a:]
        elif op in ("duplicate_line", "drop_line"):
            lines = source.split("\n")
            i = draw(st.integers(0, len(lines) - 1))
            lines[i : i + 1] = [lines[i], lines[i]] if op == "duplicate_line" else []
            source = "\n".join(lines)
        elif op == "truncate":
            source = source[:a]
        else:
            other = draw(st.sampled_from(SEEDS))
            b = draw(st.integers(0, len(other)))
            source = source[:a] + other[b : b + draw(st.integers(1, 400))]
    return source


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_corpus_never_crashes(source):
    check(source)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(TOKENS), max_size=60).map(" ".join))
def test_token_soup_never_crashes(source):
    check(source)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=200))
def test_arbitrary_text_never_crashes(source):
    check(source)
