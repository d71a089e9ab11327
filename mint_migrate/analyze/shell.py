"""Shell launch scripts, run the way bash would run them, without running anything.

The lexer (shell_lex.py) gives simple commands made of words. Here they are expanded in script
order, so a variable means what it meant where the command ran: `$VAR`, `${VAR:-default}`,
`${VAR##*/}` and the other string transformations, positional parameters (`$1`, `${1:-8}`, `$@`),
`$((...))` arithmetic and `(( x = ... ))` updates; unquoted expansions are split
into words (`deepspeed --module $training_commands`), and every character keeps the line it was
written on, so a value is traced to the line that holds it (a flag in a here-document, the line
that set a variable). Arrays (`ARGS=( --flag v ... )` over several lines, `+=( ... )`) expand as
`"${ARGS[@]}"` into separate words, each keeping its own line. `read -d '' VAR <<EOF` stores the
here-document; functions run when they are called, with their arguments as positional parameters.
Conditions the script decides (`[ ]`, `[[ ]]`, `(( ))`, `case` over its own variables) take the
branch bash takes; a loop's body is followed for its first pass (the command a launcher runs first); a
condition that depends on the machine follows every branch, as before, except that a value only
the machine knows does not replace one the script states (`case` alike). An `exit`
ends the script only at the top level (inside a condition it is a guard). Anything that depends on
the environment, an unset positional parameter or a command substitution stays unresolved, kept
as written with the script's own variables put in (also inside `$(...)`), never guessed.

Commands are then unwrapped: env prefixes, `nohup`/`time`/`exec`, `python [-m] ...`, `torchrun`,
`deepspeed`, `accelerate launch`, `ray job submit -- ...`, `trl <cmd>`, and the target's arguments
split into flags (`--key value`, `--key=value`, multi-value), hydra overrides (`a.b=c`, `+a.b=c`)
and positionals.
"""

import fnmatch
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from mint_migrate.analyze.evidence import Level, Loc, Value
from mint_migrate.analyze.scalars import looks_numeric, parse_scalar
from mint_migrate.analyze.shell_lex import NAME, Lexer, Part, RawCommand, Unresolved, Word, arith, unquoted_text
from mint_migrate.errors import MintMigrateError

_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\+?)=")
_OVERRIDE = re.compile(r"([+~]{0,2})([A-Za-z_][\w\-/]*(?:\.[\w\-/]+)*)=")
_PYTHON = re.compile(r"python(\d+(\.\d+)?)?\Z")
_KEYWORDS = {"if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac",
             "function", "select", "{", "}", "!", "[[", "]]", "[", "]", "in", "return"}
# words that open, divide and close blocks when they start a command
_STRUCTURE = {"if", "then", "elif", "else", "fi", "while", "until", "for", "select", "do", "done", "case", "esac",
              "{", "}"}
_FILE_TESTS = {"-a", "-b", "-c", "-d", "-e", "-f", "-g", "-h", "-k", "-p", "-r", "-s", "-t", "-u", "-w", "-x", "-G",
               "-L", "-N", "-O", "-S", "-v", "-R"}
# `(( name = expr ))`, `name += expr`, `++name`, `name--`: an arithmetic update of one variable
_ARITH_UPDATE = re.compile(r"\s*(?:([A-Za-z_]\w*)\s*([-+*/%]?=)(?!=)\s*(.+?)|(?:(\+\+|--)\s*([A-Za-z_]\w*))"
                           r"|([A-Za-z_]\w*)\s*(\+\+|--))\s*", re.S)
_WRAPPERS = {"nohup", "time", "exec", "sudo", "nice", "stdbuf", "srun", "env", "mpirun", "mpiexec", "timeout",
             "taskset", "numactl"}
# A command substitution that starts a training run (its job id or output captured), not one that only
# asks the machine something (`$(python get_free_port.py)`, `$(date)`).
_LAUNCH_INSIDE = re.compile(r"\bray\s+job\s+submit\b|\b(torchrun|deepspeed)\b|\baccelerate\s+launch\b")
_WRAPPER_OPERAND = {"timeout", "taskset"}  # `timeout 3600 python ...`: one word before the program
# Container runners: the subcommands that run a command, and the options of theirs that take no value.
_DOCKER_BARE = {"--rm", "-i", "-t", "-it", "-ti", "-d", "--detach", "--interactive", "--tty", "--privileged", "--init",
                "--read-only"}
_APPTAINER_BARE = {"--nv", "--nvccli", "--rocm", "--cleanenv", "-e", "--containall", "-C", "--contain", "-c",
                   "--writable", "--writable-tmpfs", "--fakeroot", "--no-home"}
_CONTAINERS = {"docker": ({"run", "exec"}, _DOCKER_BARE), "podman": ({"run", "exec"}, _DOCKER_BARE),
               "nvidia-docker": ({"run", "exec"}, _DOCKER_BARE), "apptainer": ({"exec", "run"}, _APPTAINER_BARE),
               "singularity": ({"exec", "run"}, _APPTAINER_BARE)}
_ENV_RUNNERS = {"uv", "poetry", "pipenv", "conda", "pixi", "rye", "hatch"}  # `conda run -n env python ...`
_AUXILIARY = ("batch_inference", "inference", "generate", "preprocess", "prepare_data", "data_prep", "lm_eval",
              "evaluate", "eval_", "serve", "merge", "convert", "export", "download", "upload", "interactive_chat",
              "uvicorn", "gunicorn", "launch_server", "vllm.entrypoints")  # a judge or teacher server beside the run
_AUXILIARY_FOLDERS = {"eval", "evals", "evaluation", "evaluations", "benchmark", "benchmarks", "inference"}
_DECLARE = {"export", "declare", "local", "readonly", "typeset"}
# A value that is only a positional parameter (`"$3"`): "the caller's third argument", nothing more.
POSITIONAL_ONLY = re.compile(r"(\$(\d|\{\d+\}|@|\*|OPTARG|\{OPTARG\}))+")  # getopts' $OPTARG is one too
_PROGRAMS = {"torchrun", "deepspeed", "accelerate", "ray", "trl", *_ENV_RUNNERS, *_WRAPPERS, *_CONTAINERS}


def _launch_program(text: str | None) -> bool:
    """A word that starts a program a launch line runs (what a wrapper's options end at)."""
    name = (text or "").rsplit("/", 1)[-1]
    return name in _PROGRAMS or _PYTHON.match(name) is not None
_READ_OPTIONS_WITH_VALUE = {"-d", "-p", "-a", "-n", "-N", "-t", "-u", "-i"}
_MAX_CALL_DEPTH = 8

# Launcher options that take no value (everything else takes the next word unless written --k=v).
_BARE = {
    "torchrun": {"--standalone", "-m", "--module", "--no-python", "--no_python", "--run-path", "--run_path"},
    "deepspeed": {"--module", "--no_python", "--no_local_rank", "--force_multi", "--elastic_training",
                  "--bind_cores_to_rank", "--no_ssh_check", "--enable_each_rank_log"},
    "accelerate": {"-m", "--module", "--multi_gpu", "--use_deepspeed", "--use_fsdp", "--use_megatron_lm",
                   "--cpu", "--no_python", "--debug", "--quiet", "-q", "--tpu", "--same_network",
                   "--use_xpu", "--dynamo_use_fullgraph", "--dynamo_use_dynamic"},
}


# --- expansion -----------------------------------------------------------------------------------


@dataclass
class Text:
    """Expanded text whose every character remembers its line, and whether it stands for something
    unresolved (then it is the expansion as written, `$HOME`)."""

    chars: list[tuple[str, int, bool]] = field(default_factory=list)
    spans: list[tuple[int, int, int]] = field(default_factory=list)  # (start, end, line) of whole variables

    @property
    def resolved(self) -> bool:
        return not any(u for _, _, u in self.chars)

    @property
    def text(self) -> str | None:
        return "".join(c for c, _, _ in self.chars) if self.resolved else None

    @property
    def partial(self) -> str:
        return "".join(c for c, _, _ in self.chars)

    def line(self) -> int | None:
        """Where the value is written: the line that sets the variable it is made of, else the line
        every character came from, when they share one."""
        whole = [line for start, end, line in self.spans if start == 0 and end == len(self.chars)]
        if whole:
            return whole[0]
        lines = {line for _, line, _ in self.chars}
        return lines.pop() if len(lines) == 1 else None

    def add(self, text: str, line: int, unresolved: bool = False) -> None:
        self.chars.extend((c, line, unresolved) for c in text)

    def extend(self, other: "Text") -> None:
        self.chars.extend(other.chars)

    def extend_with_spans(self, other: "Text") -> None:
        """Append, keeping where whole variables inside `other` were written (array elements)."""
        start = len(self.chars)
        self.chars.extend(other.chars)
        self.spans.extend((a + start, b + start, line) for a, b, line in other.spans)

    def cut(self, start: int) -> "Text":
        """The characters from `start` on (for the value of `key=value`)."""
        return Text(list(self.chars[start:]), [(a - start, b - start, line) for a, b, line in self.spans if a >= start])


def _kept_line_breaks(tok: "Tok") -> str:
    """The text of a `bash -c "..."` body for the inner shell, with its lines kept: the outer shell
    joins `\\<newline>` inside double quotes, and the inner shell would join it just the same, so
    putting it back changes nothing the inner script means and lets each word cite its own line."""
    if tok.source is None:
        return tok.raw
    whole = {k for start, end, _ in tok.source.spans for k in range(start, end)}
    out: list[str] = []
    last = tok.line
    for k, (c, line, _) in enumerate(tok.source.chars):
        if k not in whole:
            if line > last and c != "\n" and (not out or out[-1] != "\n"):
                out.append("\\\n" * (line - last))
            last = max(last, line)
        out.append(c)
    return "".join(out)


@dataclass
class Tok:
    """A word after expansion: its text (None when it depends on something the script does not
    define), the line of its first character, and for `key=value` words the literal key."""

    text: str | None
    line: int
    raw: str  # the text with unresolved parts as written
    value_loc: Loc | None = None  # the line all its characters came from, when they share one
    key: str | None = None
    value_text: str | None = None
    key_value_loc: Loc | None = None
    partial: str | None = None
    value_partial: str | None = None
    literal_key: bool = False  # `NAME=...` written literally (an assignment), not produced by expansion
    source: Text | None = None  # the expanded characters with their lines (`bash -c "..."` re-reads them)



_TRANSFORMS = {"#", "##", "%", "%%", "/", "//", "/#", "/%", ",,", ",", "^^", "^", ":"}


def _glob_regex(pattern: str) -> re.Pattern:
    """A bash glob as a regular expression (`*` `?` `[...]`; the rest literal); `*` is greedy, as
    bash's longest match is."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if c == "*":
            out.append(".*")
        elif c == "?":
            out.append(".")
        elif c == "[" and "]" in pattern[i + 2:]:
            end = pattern.index("]", i + 2)
            body = pattern[i + 1:end]
            negate = body[:1] in ("!", "^")
            out.append("[" + "^" * negate + re.escape(body[negate:]).replace("\\-", "-") + "]")
            i = end + 1
            continue
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out), re.S)


# --- control flow --------------------------------------------------------------------------------


class _Exit(Exception):
    """`exit` at the top level: the script ends there."""


@dataclass
class _Node:
    kind: str  # cmd | if | loop | case | pattern (a case clause's) | group | func
    raw: RawCommand | None = None  # cmd
    branches: list[tuple[list["_Node"], list["_Node"]]] = field(default_factory=list)  # if: (condition, body)
    otherwise: list["_Node"] | None = None  # if: the else block
    name: str = ""  # loop: while | until | for | select; func: its name
    head: list["_Node"] = field(default_factory=list)  # loop: the condition, or `x in a b c`
    body: list["_Node"] = field(default_factory=list)  # loop, group
    commands: list[RawCommand] = field(default_factory=list)  # func: the body, run at each call


def _parse(items: list[tuple[str, object]], i: int, stops: set[str]) -> tuple[list[_Node], int, str | None]:
    """Blocks from a stream of commands and structure words, up to one of `stops` (not consumed; a
    block left open at the end of the text simply ends there)."""
    nodes: list[_Node] = []
    while i < len(items):
        kind, value = items[i]
        if kind in {"cmd", "pat"}:
            nodes.append(_Node("cmd" if kind == "cmd" else "pattern", raw=value))
            i += 1
            continue
        if kind == "func":
            name, body = value
            nodes.append(_Node("func", name=name, commands=body))
            i += 1
            continue
        if value in stops:
            return nodes, i, value
        i += 1
        if value == "if":
            node = _Node("if")
            while True:
                condition, i, stop = _parse(items, i, stops | {"then"})
                i += stop == "then"
                body, i, stop = _parse(items, i, stops | {"elif", "else", "fi"})
                node.branches.append((condition, body))
                if stop not in {"elif", "else", "fi"}:
                    break
                i += 1
                if stop == "fi":
                    break
                if stop == "else":
                    node.otherwise, i, stop = _parse(items, i, stops | {"fi"})
                    i += stop == "fi"
                    break
            nodes.append(node)
        elif value in {"while", "until", "for", "select"}:
            head, i, stop = _parse(items, i, stops | {"do"})
            i += stop == "do"
            body, i, stop = _parse(items, i, stops | {"done"})
            i += stop == "done"
            nodes.append(_Node("loop", name=value, head=head, body=body))
        elif value in {"case", "{"}:
            closer = "esac" if value == "case" else "}"
            body, i, stop = _parse(items, i, stops | {closer})
            i += stop == closer
            nodes.append(_Node("case" if value == "case" else "group", body=body))
        # a stray `then` / `do` / `fi` / `done` outside its block: skipped
    return nodes, i, None


def _arith_status(expr: str, lookup) -> bool | None:
    """`(( expr ))` as a condition: true when the value is not 0."""
    try:
        return arith(expr, lookup) != 0
    except Unresolved:
        return None


def _is_pattern(word: Word) -> bool:
    """`[[ $a == b* ]]`, `case` clauses: an unquoted glob is a pattern, a quoted one is literal."""
    return any(p.kind == "lit" and not p.quoted and any(c in p.text for c in "*?[") for p in word.parts)


@dataclass
class _Operand:
    text: str | None  # None: only the machine knows it
    op: str | None  # the word as an unquoted literal (an operator is only ever that)
    pattern: bool


class _NotATest(Exception):
    """Test syntax this reader does not follow."""


class _TestParser:
    """`[ ]` / `[[ ]]` expressions in three-valued logic: True, False, or None when an operand or a
    file test depends on the machine."""

    def __init__(self, operands: list[_Operand], *, double: bool):
        self.ops = operands
        self.i = 0
        self.double = double

    def run(self) -> bool | None:
        if not self.ops:
            return False
        value = self._or()
        if self.i != len(self.ops):
            raise _NotATest()
        return value

    def _peek(self) -> str | None:
        return self.ops[self.i].op if self.i < len(self.ops) else None

    def _or(self) -> bool | None:
        value = self._and()
        while self._peek() in ({"||"} if self.double else {"-o"}):
            self.i += 1
            right = self._and()
            value = True if value is True or right is True else (None if None in (value, right) else False)
        return value

    def _and(self) -> bool | None:
        value = self._not()
        while self._peek() in ({"&&"} if self.double else {"-a"}):
            self.i += 1
            right = self._not()
            value = False if value is False or right is False else (None if None in (value, right) else True)
        return value

    def _not(self) -> bool | None:
        if self._peek() == "!" and self.i + 1 < len(self.ops):
            self.i += 1
            value = self._not()
            return None if value is None else not value
        return self._primary()

    def _primary(self) -> bool | None:
        if self.i >= len(self.ops):
            raise _NotATest()
        if self._peek() == "(":
            self.i += 1
            value = self._or()
            if self._peek() != ")":
                raise _NotATest()
            self.i += 1
            return value
        left = self.ops[self.i]
        after = self.ops[self.i + 1].op if self.i + 1 < len(self.ops) else None
        if after in _BINARY and self.i + 2 < len(self.ops):
            right = self.ops[self.i + 2]
            self.i += 3
            return _binary(left.text, after, right, double=self.double)
        if left.op in _FILE_TESTS | {"-z", "-n"} and self.i + 1 < len(self.ops) and after not in {"&&", "||", "-a", "-o", ")"}:
            operand = self.ops[self.i + 1].text
            self.i += 2
            if left.op in {"-z", "-n"} and operand is not None:
                return (operand == "") == (left.op == "-z")
            return None  # files, variables set in the environment: the machine's
        self.i += 1
        return None if left.text is None else left.text != ""


_BINARY = {"=", "==", "!=", "=~", "<", ">", "-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-nt", "-ot", "-ef"}


def _binary(left: str | None, op: str, right: _Operand, *, double: bool) -> bool | None:
    if left is None or right.text is None or op in {"-nt", "-ot", "-ef"}:
        return None
    if op in {"=", "==", "!="}:
        same = fnmatch.fnmatchcase(left, right.text) if double and right.pattern else left == right.text
        return same != (op == "!=")
    if op == "=~":
        if len(right.text) > 200 or len(left) > 2000:
            return None
        try:
            return re.search(right.text, left) is not None
        except re.error:
            return None
    if op in {"<", ">"}:
        return (left < right.text) if op == "<" else (left > right.text)
    try:
        a, b = int(left.strip()), int(right.text.strip())
    except ValueError:
        return None
    return {"-eq": a == b, "-ne": a != b, "-lt": a < b, "-le": a <= b, "-gt": a > b, "-ge": a >= b}[op]


# --- commands ------------------------------------------------------------------------------------


@dataclass
class Arg:
    name: str  # normalised: flag without dashes, override key without +/~ prefixes
    written: str  # the flag or key as written
    value: Value | None  # None when unresolved
    kind: str  # "flag" | "override" | "positional"
    raw: str = ""  # the value's text as written (quotes removed), kept when it cannot be resolved
    loc: Loc | None = None  # where the value is written
    items: list[str] | None = None  # a flag given several words (`--train_files $D/a.jsonl $D/b.jsonl`), as written
    at: Loc | None = None  # where the flag or key itself is written (`loc` follows a variable to its assignment)

    def literal(self, level: Level) -> Value | None:
        """The value as written, unexpanded (`$HOME/data/train.parquet`), for path-like settings
        whose unresolved part is still worth showing."""
        if self.value is not None:
            return self.value
        if self.items is not None and self.loc is not None:
            return Value(list(self.items), self.loc, level)
        if not self.raw or self.loc is None:
            return None
        text = self.raw.strip()
        return Value(parse_scalar(text) if text.startswith("[") and text.endswith("]") else self.raw, self.loc, level)

    def setting_literal(self, level: Level) -> Value | None:
        """`literal`, for a setting the plan shows (a model, a dataset): not when the value is only a
        positional parameter (`"$3"` says nothing but "the caller's third argument")."""
        value = self.literal(level)
        if value is not None and self.value is None and POSITIONAL_ONLY.fullmatch(self.raw.strip()):
            return None
        return value


@dataclass
class Command:
    loc: Loc
    program: str  # python | torchrun | deepspeed | accelerate | ray | trl
    module: str | None
    script: str | None
    subcommand: str | None
    launcher_args: list[Arg]
    args: list[Arg]
    env: dict[str, Value]
    text: str
    world_size: Value | None = None
    launchers: list[str] = field(default_factory=list)

    @property
    def target(self) -> str:
        return self.module or self.script or self.program

    @property
    def target_parts(self) -> list[str]:
        """The target as dotted parts: `-m training.trl.grpo` and `training/trl/grpo.py` both give
        ["training", "trl", "grpo"]; the last is what the entry point is named."""
        return self.target.removesuffix(".py").replace("/", ".").split(".")

    @property
    def auxiliary(self) -> bool:
        """A command a launcher runs around the training (data preparation, generation, evaluation,
        export): its flags are not the training run's settings."""
        target = (self.module or self.script or "").lower()
        folders = [part.lower() for part in self.target_parts[:-1]]  # `src/eval/runner.py`, `-m bench.evals.run`
        return any(word in target for word in _AUXILIARY) or any(part in _AUXILIARY_FOLDERS for part in folders)

    def flags(self) -> list[Arg]:
        return [a for a in self.args if a.kind == "flag"]

    def overrides(self) -> list[Arg]:
        return [a for a in self.args if a.kind == "override"]



class ShellScript:
    """A parsed launch script (or a usage command quoted in a docstring)."""

    def __init__(self, text: str, label: str, *, first_line: int = 1, level: Level = Level.COMMAND,
                 sources: Callable[[str], tuple[str, str] | None] | None = None):
        self.label = label
        self.level = level
        # `source common.sh`: the (text, label) of a file the inputs hold, found by the path written.
        # Its lines are numbered from a block of their own (_SOURCED_LINES per file) so every
        # character still knows the file it came from.
        self._sources = sources
        self._labels = [label]
        self.variables: dict[str, Value] = {}
        self.commands: list[Command] = []
        self.unresolved: list[tuple[Loc, str]] = []
        self.stray_flags: list[Loc] = []
        self.exports: dict[str, Value] = {}
        # `VLLM_ATTENTION_BACKEND=XFORMERS ray start --head`: the environment given to a command that trains
        # nothing here (a launch keeps its own, Command.env)
        self.command_env: dict[str, Value] = {}
        self.partial: dict[str, str] = {}  # variables that could not be resolved, as far as they expand
        self._texts: dict[str, Text] = {}  # each variable's characters with their lines
        self._functions: dict[str, list[RawCommand]] = {}
        self._arrays: dict[str, list[Text]] = {}  # `NAME=( ... )`: each element with its lines
        self._uncertain = 0  # inside a block whose condition the script does not decide
        try:
            self._exec(self._nodes(Lexer(text, first_line, label).run()), None, 0, 0)
        except _Exit:
            pass

    @property
    def included(self) -> list[str]:
        """The labels of the files this script ran in itself (`source`) or as a child (`bash x.sh`)."""
        return self._labels[1:]

    def _at(self, line: int) -> Loc:
        """Where a line is: in this script, or in a file it sources."""
        k, number = divmod(line, _SOURCED_LINES)
        return Loc(self._labels[k], number) if 0 < k < len(self._labels) else Loc(self.label, line)

    def _line_of(self, name: str, default: int) -> int:
        """The (block-numbered, see _SOURCED_LINES) line where variable `name` was set; `default` when
        it has no line. Loc holds the file's own number, which would read as this script's line."""
        known = self.variables.get(name)
        if known is None or known.loc is None:
            return default
        k = self._labels.index(known.loc.path) if known.loc.path in self._labels[1:] else 0
        return k * _SOURCED_LINES + known.loc.line

    # -- control flow --

    def _nodes(self, commands: list[RawCommand]) -> list["_Node"]:
        """The commands as blocks: `if` / loops / groups hold their own commands."""
        items: list[tuple[str, object]] = []
        i = 0
        while i < len(commands):
            raw = commands[i]
            head = _literal(raw.words[0])
            if raw.funcdef or (head == "function" and len(raw.words) >= 2):
                name, body, i = self._define(commands, i)
                items.append(("func", (name, body)))
                continue
            i += 1
            if raw.pattern:
                items.append(("pat", raw))
                continue
            words = list(raw.words)
            while words and unquoted_text(words[0]) in _STRUCTURE:
                items.append(("kw", unquoted_text(words.pop(0))))
            if words:
                op = raw.op if len(words) == len(raw.words) else None
                items.append(("cmd", RawCommand(words, raw.conditional, raw.funcdef, raw.heredoc, op=op)))
        return _parse(items, 0, set())[0]

    def _exec(self, nodes: list["_Node"], positional: list[Text] | None, calls: int, depth: int) -> bool | None:
        """Run blocks the way bash would; returns the last command's status where it is known."""
        status: bool | None = None
        for node in nodes:
            if node.kind == "func":
                self._functions[node.name] = node.commands
                continue
            if node.kind == "cmd":
                # `a && b` / `a || b`: b runs on a's status, when the test before it is decided
                if (node.raw.op == "&&" and status is False) or (node.raw.op == "||" and status is True):
                    continue
                status = self._simple(node.raw, positional, calls, depth)
                continue
            status = None
            if node.kind == "group":
                self._exec(node.body, positional, calls, depth + 1)
            elif node.kind == "if":
                self._if(node, positional, calls, depth)
            elif node.kind == "case":
                self._case(node, positional, calls, depth)
            elif node.kind == "pattern":
                continue
            else:
                self._loop(node, positional, calls, depth)
        return status

    def _maybe(self, nodes: list["_Node"], positional: list[Text] | None, calls: int, depth: int,
               certain: bool) -> None:
        """A block whose condition may not hold: a value it would make unknown does not replace a
        known one (the first run of a launcher, with nothing on the machine yet)."""
        self._uncertain += not certain
        try:
            self._exec(nodes, positional, calls, depth + 1)
        finally:
            self._uncertain -= not certain

    def _if(self, node: "_Node", positional: list[Text] | None, calls: int, depth: int) -> None:
        decided = True  # every condition so far was known to be false
        for condition, body in node.branches:
            status = self._exec(condition, positional, calls, depth + 1)
            if status is False:
                continue
            self._maybe(body, positional, calls, depth, certain=decided and status is True)
            if status is True:
                return
            decided = False
        if node.otherwise is not None:
            self._maybe(node.otherwise, positional, calls, depth, certain=decided)

    def _case(self, node: "_Node", positional: list[Text] | None, calls: int, depth: int) -> None:
        """`case $x in a|b) ...;; *) ...;; esac`: the first clause whose pattern matches, when the
        script knows x; every clause otherwise (argument parsers: `case $1 in`), as before."""
        body = node.body
        subject: str | None = None
        head = body[0].raw.words if body and body[0].kind == "cmd" else []
        if len(head) == 2 and unquoted_text(head[1]) == "in":
            fields = self._expand(head[0].parts, positional, split=False)
            subject = fields[0].text if fields else ""
            body = body[1:]
        clauses: list[tuple[list[Word], list[_Node]]] = []
        for child in body:
            if child.kind == "pattern":
                clauses.append((child.raw.words, []))
            elif clauses:
                clauses[-1][1].append(child)
            else:
                clauses.append(([], [child]))  # commands before any pattern: followed, as before
        decided = subject is not None
        for patterns, nodes in clauses:
            matched = self._matches(subject, patterns, positional) if decided else None
            if matched is False:
                continue
            self._maybe(nodes, positional, calls, depth, certain=decided and matched is True)
            if matched is True:
                return
            decided = False

    def _matches(self, subject: str, patterns: list[Word], positional: list[Text] | None) -> bool | None:
        if not patterns:
            return None
        for word in patterns:
            fields = self._expand(word.parts, positional, split=False)
            text = fields[0].text if fields else ""
            if text is None:
                return None
            if fnmatch.fnmatchcase(subject, text) if _is_pattern(word) else subject == text:
                return True
        return False

    def _loop(self, node: "_Node", positional: list[Text] | None, calls: int, depth: int) -> None:
        """A loop's body is followed for its first pass: the command a launcher runs first."""
        if node.name in {"while", "until"}:
            status = self._exec(node.head, positional, calls, depth + 1)
            if status is not None and node.name == "until":
                status = not status
        else:
            status = self._first_item(node, positional)
        if status is not False:
            self._maybe(node.body, positional, calls, depth, certain=status is True)

    def _first_item(self, node: "_Node", positional: list[Text] | None) -> bool | None:
        """`for x in a b c`: x is `a` on the first pass; False when the list is known to be empty."""
        words = node.head[0].raw.words if len(node.head) == 1 and node.head[0].kind == "cmd" else []
        if len(words) == 1 and words[0].parts and words[0].parts[0].kind == "test":  # for ((i=0; i<n; i++))
            init, _, rest = words[0].parts[0].text.partition(";")
            m = re.fullmatch(r"\s*([A-Za-z_]\w*)\s*=([^=].*)", init)
            if m is None:
                return None
            try:
                value = Text()
                value.add(str(arith(m.group(2), self._lookup)), words[0].line)
            except Unresolved:
                return None
            self._set(m.group(1), value, self._at(words[0].line))
            return _arith_status(rest.partition(";")[0], self._lookup) if rest.strip() else True
        name = _literal(words[0]) if words else None
        if name is None or not NAME.fullmatch(name):
            return None
        if len(words) >= 2 and _literal(words[1]) == "in":
            items = [t for w in words[2:] for t in self._fields(w, positional)]
        elif positional is not None:
            items = positional
        else:
            return None
        if not items:  # `for x in; do`: no pass; an expansion that came to nothing may be the machine's
            return False if len(words) == 2 else None
        if items[0].text is None or re.search(r"\{[^{}]*(,|\.\.)[^{}]*\}", items[0].text):
            return None  # the machine's list, or a brace expansion (`{1..3}`) this reader does not make
        self._set(name, Text(list(items[0].chars), list(items[0].spans)), self._at(words[0].line))
        return True

    def _simple(self, raw: RawCommand, positional: list[Text] | None, calls: int, depth: int) -> bool | None:
        """One simple command; its status when it is a test the script decides (`[ ]`, `[[ ]]`,
        `(( ))`, `true`, an assignment), else None."""
        words = list(raw.words)
        negate = False
        while words and unquoted_text(words[0]) == "!":
            negate = not negate
            words.pop(0)
        if not words:
            return None
        if unquoted_text(words[0]) in {"[", "[[", "test"} or words[0].parts and words[0].parts[0].kind == "test":
            status = self._test(words, positional)
            return status if status is None or not negate else not status
        while words and _literal(words[0]) in _KEYWORDS:
            words.pop(0)
        if not words:
            return None
        first = _literal(words[0])
        if first == "exit" and depth <= 0 and not raw.conditional and calls == 0:
            raise _Exit()
        if first == "let" and len(words) > 1:  # `let i++ total=n*8`: each argument an update
            status = None
            for word in words[1:]:
                fields = self._expand(word.parts, positional, split=False)
                status = self._arith_command(fields[0].text or "?", word.line) if fields else None
            return status if status is None or not negate else not status
        if first in {"true", ":", "false"} and len(words) == 1:
            return (first != "false") != negate
        if first in self._functions and calls < _MAX_CALL_DEPTH:
            args = [t for w in words[1:] for t in self._fields(w, positional)]
            self._exec(self._nodes(self._functions[first]), args, calls + 1, 0)
            return None
        if first == "read" and raw.heredoc is not None:
            self._read(words, raw, positional)
            return None
        if first in {"source", "."} and len(words) >= 2:
            self._source(words, positional, calls)
            return None
        if self._child_script(words, positional, calls):
            return None
        if first == "eval" and len(words) >= 2:
            self._eval(words, positional)
            return None
        assigns_only = all(_assignment(w) for w in words)
        self._command(words, positional)
        return True if assigns_only and not negate else None

    def _source(self, words: list[Word], positional: list[Text] | None, calls: int) -> None:
        """`source common.sh [args]`: the file runs here, in this shell, when the inputs hold it."""
        found = self._script_file(words[1], positional, calls)
        if found is None:
            return
        args = [t for w in words[2:] for t in self._fields(w, positional)] if len(words) > 2 else positional
        self._exec(found, args, calls + 1, 0)

    def _script_file(self, word: Word, positional: list[Text] | None, calls: int) -> list["_Node"] | None:
        """The commands of a script the inputs hold, found by the path written, with lines of their own."""
        fields = self._fields(word, positional)
        written = fields[0].text if len(fields) == 1 else None
        found = self._sources(written) if self._sources is not None and written else None
        if found is None or found[1] in self._labels or calls >= _MAX_CALL_DEPTH:
            return None
        text, label = found
        self._labels.append(label)
        offset = (len(self._labels) - 1) * _SOURCED_LINES
        try:
            return self._nodes(Lexer(text, offset + 1, label).run())
        except MintMigrateError:
            return None  # a file we cannot read: its variables stay unknown

    def _child_script(self, words: list[Word], positional: list[Text] | None, calls: int) -> bool:
        """`bash scripts/train.sh [args]` (or `sh`, or `./scripts/train.sh`): a script the inputs hold
        runs as a child shell: it sees what this one exported, and what it sets stays its own."""
        env = []  # `CUDA_VISIBLE_DEVICES=0,1 bash train.sh`: the child's environment, not this shell's
        while len(words) > 1 and _assignment(words[0]) is not None:
            env, words = [*env, words[0]], words[1:]
        first = _literal(words[0]) or ""
        if first.rsplit("/", 1)[-1] in {"bash", "sh", "zsh"} and len(words) >= 2 \
                and not (_literal(words[1]) or "-").startswith("-"):
            words = words[1:]
        elif not first.endswith((".sh", ".bash")):
            return False
        found = self._script_file(words[0], positional, calls)
        if found is None:
            return False
        saved = (self.variables, self._texts, self._arrays, self.partial, self._functions, self.exports)
        self.variables = {name: value for name, value in self.variables.items() if name in self.exports}
        self._texts = {name: text for name, text in self._texts.items() if name in self.exports}
        self._arrays, self.partial, self._functions = {}, {}, {}
        self.exports = dict(self.exports)
        for word in env:
            self._assign(word, positional)
            name = _assignment(word)
            if name in self.variables:
                self.exports[name] = self.variables[name]
        try:
            self._exec(found, [t for w in words[1:] for t in self._fields(w, positional)], calls + 1, 0)
        finally:
            self.variables, self._texts, self._arrays, self.partial, self._functions, self.exports = saved
        return True

    def _eval(self, words: list[Word], positional: list[Text] | None) -> None:
        """`eval "$header" "$training_args"`: the arguments joined by blanks, read as a command
        again. What the variables held is already expanded, so this splits it into words, removes
        its quotes and stops where a pipe or a redirection begins (`2>&1 | tee train.log`)."""
        joined = Text()
        for k, field_ in enumerate(t for w in words[1:] for t in self._fields(w, positional)):
            if k:
                joined.add(" ", words[0].line)
            joined.extend_with_spans(field_)
        toks = [self._tok(word, words[0], literal_key=False) for word in _eval_words(joined)]
        env: dict[str, Value] = {}
        while toks and toks[0].key is not None and toks[0].literal_key is False and NAME.fullmatch(toks[0].key):
            env[toks[0].key] = self._value_of(toks.pop(0))  # `eval "VAR=1 python train.py"`
        if toks and not self._inline_script(toks, positional):
            command = self._launch(toks, env, launchers=[])
            if command is not None:
                self.commands.append(command)

    def _test(self, words: list[Word], positional: list[Text] | None) -> bool | None:
        """`[ ... ]`, `test ...`, `[[ ... ]]` and `(( ... ))` over what the script has set: true,
        false, or None when it depends on the machine (files, the environment, arguments)."""
        if words[0].parts[0].kind == "test":
            return self._arith_command(words[0].parts[0].text, words[0].line) if len(words) == 1 else None
        head = unquoted_text(words[0])
        closer = {"[": "]", "[[": "]]"}.get(head)
        body = words[1:]
        if closer is not None:
            if not body or unquoted_text(body[-1]) != closer:
                return None
            body = body[:-1]
        operands: list[_Operand] = []
        for word in body:
            op = unquoted_text(word)
            if head == "[[":
                fields = self._expand(word.parts, positional, split=False)
                operands.append(_Operand(fields[0].text if fields else "", op, _is_pattern(word)))
            else:
                fields = self._fields(word, positional)
                operands.extend(_Operand(f.text, op if len(fields) == 1 else None, False) for f in fields)
        try:
            return _TestParser(operands, double=head == "[[").run()
        except _NotATest:
            return None

    def _arith_command(self, expr: str, line: int) -> bool | None:
        """`(( expr ))` / `let expr`: a condition, or an update (`((i++))`, `((total = n * 8))`)."""
        m = _ARITH_UPDATE.fullmatch(expr)
        if m is None:
            return _arith_status(expr, self._lookup)
        name = m.group(1) or m.group(5) or m.group(6)
        old = self._lookup(name)
        if old is None and (m.group(1) is None or m.group(2) != "="):
            return None  # an update of a value the script does not set
        try:
            if m.group(1):  # name op= expr
                op = m.group(2)[:-1]
                value = arith(f"({old}) {op} ({m.group(3)})" if op else m.group(3), self._lookup)
            else:  # ++name / name++ / --name / name--
                step = 1 if "+" in (m.group(4) or m.group(7)) else -1
                value = arith(f"{old} + {step}", self._lookup)
        except Unresolved:
            return None
        text = Text()
        text.add(str(value), line)
        self._set(name, text, self._at(line))
        if m.group(6):  # i++: the status is the value before
            return value - step != 0
        return value != 0

    def _define(self, commands: list[RawCommand], i: int) -> tuple[str, list[RawCommand], int]:
        """`name() { ...; }` / `function name { ...; }`: the name, the body kept for the calls, and
        the index after it."""
        head = commands[i]
        names = [_literal(w) for w in head.words]
        name = names[1] if names[0] == "function" else names[0]
        rest = head.words[2:] if names[0] == "function" else []
        body: list[RawCommand] = []
        depth = 0
        j = i + 1
        if rest and _literal(rest[0]) == "{":
            depth = 1
            if rest[1:]:
                body.append(RawCommand(rest[1:]))
        while j < len(commands):
            words = list(commands[j].words)
            j += 1
            if _literal(words[0]) == "{":
                depth += 1
                words = words[1:]
                if depth == 1:
                    if words:
                        body.append(RawCommand(words, commands[j - 1].conditional, heredoc=commands[j - 1].heredoc))
                    continue
            elif _literal(words[0]) == "}":
                depth -= 1
                if depth <= 0:
                    break
                continue
            if depth == 0:  # `f() ( ... )` or a one-line body we do not follow
                j -= 1
                break
            previous = commands[j - 1]
            body.append(RawCommand(words, previous.conditional, previous.funcdef, previous.heredoc))
        return name, body, j

    def _read(self, words: list[Word], raw: RawCommand, positional: list[Text] | None) -> None:
        """`read [-r] -d '' NAME <<EOF`: NAME holds the here-document (its first line without -d '')."""
        names, whole, i = [], False, 1
        while i < len(words):
            text = _literal(words[i])
            if text in _READ_OPTIONS_WITH_VALUE:
                if text == "-d" and i + 1 < len(words) and _literal(words[i + 1]) == "":
                    whole = True
                i += 2
                continue
            if text is not None and text.startswith("-"):
                i += 1
                continue
            if text is not None and NAME.fullmatch(text):
                names.append((text, words[i].line))
            i += 1
        if not names:
            return
        doc = raw.heredoc
        lines = doc.body if whole else doc.body[:1]
        if not lines:
            value = Text()
        elif doc.quoted:
            value = Text()
            for k, (text, number) in enumerate(lines):  # `\` + newline joins lines, as read does
                joined = text.endswith("\\")
                value.add((text[:-1] if joined else text) + ("" if joined or k == len(lines) - 1 else "\n"), number)
        else:
            body = "\n".join(t for t, _ in lines)
            value = self._expand(Lexer(body, lines[0][1], self.label).heredoc_parts(), positional, split=False)[0]
        # read strips the leading and trailing blanks, and `\` + newline joins lines (without -r)
        chars = value.chars
        while chars and chars[0][0] in " \t\n":
            chars.pop(0)
        while chars and chars[-1][0] in " \t\n":
            chars.pop()
        name, line = names[0]
        self._set(name, value, self._at(line))

    def _export(self, name: str) -> None:
        """What the launcher hands its children, kept as written where only the machine knows it
        (`${SLURM_JOB_NUM_NODES}`, `$(scontrol show hostnames ...)`)."""
        value = self.variables[name]
        if value.value is None:
            value = Value(self._texts[name].partial, value.loc, value.level)
        self.exports[name] = value

    # -- expansion --

    def _lookup(self, name: str) -> str | None:
        value = self.variables.get(name)
        return None if value is None else value.value

    def _set(self, name: str, value: Text, loc: Loc) -> None:
        text = value.text
        known = self.variables.get(name)
        if self._uncertain and text is None and known is not None and known.value is not None:
            # `if [ -f $LOG ]; then iter=$(cat $LOG); fi`: the branch may not run; keep what the script says
            self.unresolved.append((loc, f"{name}={value.partial}"))
            return
        if name in self._arrays:  # `NAME=x` on an array sets its first element
            self._arrays[name][:1] = [value]
        if text is None:
            self.unresolved.append((loc, f"{name}={value.partial}"))
            self.partial[name] = value.partial
        else:
            self.partial.pop(name, None)
        # a variable copied whole from another keeps the original definition line
        where = self._at(value.line()) if value.line() is not None and text else loc
        self.variables[name] = Value(text, where, self.level)
        self._texts[name] = value

    def _assign(self, word: Word, positional: list[Text] | None) -> None:
        """`NAME=value`, `NAME+=value`, `NAME=( words )`, `NAME+=( words )`."""
        name = _assignment(word)
        loc = self._at(word.line)
        append = _ASSIGN.match(word.parts[0].text).group(2) == "+"
        if word.array is not None:
            elements = [t for w in word.array for t in self._fields(w, positional)]
            if append:
                elements = self._arrays.get(name, [self._texts[name]] if name in self._texts else []) + elements
            first = elements[0] if elements else Text()
            self._set(name, Text(list(first.chars), list(first.spans)), loc)
            self._arrays[name] = elements
            return
        after = _after_equals(word)
        if len(after) == 1 and after[0].kind == "cmd" and _LAUNCH_INSIDE.search(after[0].text):
            # a training launch whose output a variable captures (`JOB_ID=$(ray job submit ... -- python -m ...)`)
            # runs all the same
            self._run_text(after[0].text, after[0].line, positional)
        fields = self._expand(after, positional, split=False)
        value = fields[0] if fields else Text()
        for more in fields[1:]:  # `x="$x ${files[@]}"`: an assignment joins an array's elements with blanks
            value.add(" ", word.line)
            value.extend_with_spans(more)
        if append and name in self._texts:
            value = Text(self._texts[name].chars + value.chars, list(self._texts[name].spans))
        self._set(name, value, loc)

    def _run_text(self, text: str, line: int, positional: list[Text] | None) -> None:
        """A script written inside another command's words (`bash -c "..."`, `$(...)`), run here: its
        lines are the lines it is written on. One we cannot read has nothing to follow."""
        try:
            commands = Lexer(text, line, self.label).run()
        except MintMigrateError:
            return
        self._exec(self._nodes(commands), positional, 1, 0)

    def _elements(self, name: str, positional: list[Text] | None) -> list[Text] | None:
        """An array's elements (a plain variable is an array of one)."""
        if name in self._arrays:
            return self._arrays[name]
        if name in {"@", "*"}:
            return positional
        value = self._texts.get(name)
        return None if value is None else [value]

    def _param(self, part: Part, positional: list[Text] | None) -> Text | None:
        """The value of `$name` / `$1` / `$#`, or None when the script does not say."""
        name = part.text
        if name.isdigit():
            if name == "0":
                return None  # the path it was started as: the machine's (`$(dirname "$0")` stays as written)
            index = int(name) - 1
            return positional[index] if positional is not None and index < len(positional) else None
        if name == "#":
            if positional is None:
                return None
            out = Text()
            out.add(str(len(positional)), part.line)
            return out
        return self._texts.get(name)

    def _expand(self, parts: list[Part], positional: list[Text] | None, *, split: bool,
                argument: bool = False) -> list[Text]:
        """Expand word parts into fields: unquoted expansions are split on blanks when `split`.
        `argument`: the word is a command's argument (`--model "$MODEL_PATH"`), where a quoted
        variable the script leaves empty is a value left for the user, kept as written."""
        fields: list[Text] = [Text()]
        keep = [False]  # a field made of quoted parts stays even when empty

        def add_split(value: Text) -> None:
            for c, line, unresolved in value.chars:
                if c in " \t\n" and not unresolved:
                    if fields[-1].chars or keep[-1]:
                        fields.append(Text())
                        keep.append(False)
                    continue
                fields[-1].chars.append((c, line, unresolved))

        for part in parts:
            if part.kind == "lit":
                fields[-1].add(part.text, part.line)
                keep[-1] = keep[-1] or part.quoted
                continue
            if part.kind == "var" and part.index in {"@", "*"} and not part.length:
                elements = self._elements(part.text, positional)
                if elements is None:
                    fields[-1].add(part.raw, part.line, unresolved=True)
                    keep[-1] = True
                    continue
                if part.quoted and part.index == "*":  # "${a[*]}": one word
                    joined = Text()
                    for k, value in enumerate(elements):
                        if k:
                            joined.add(" ", part.line)
                        joined.extend_with_spans(value)
                    fields[-1].extend_with_spans(joined)
                    keep[-1] = True
                    continue
                if part.quoted and not elements and [p.text for p in parts if p is not part] == [""]:
                    return []  # "${a[@]}" of an empty array: no word at all
                for k, value in enumerate(elements):  # each element its own word, with its own lines
                    if k and (fields[-1].chars or keep[-1]):
                        fields.append(Text())
                        keep.append(part.quoted)
                    if part.quoted:
                        fields[-1].extend_with_spans(value)
                        keep[-1] = True
                    else:
                        add_split(value)
                continue
            if part.kind == "var" and part.text in "@*" and len(part.text) == 1:
                if positional is None:
                    self.unresolved.append((self._at(part.line), part.raw))  # the caller's extra arguments
                    continue
                for k, value in enumerate(positional):
                    if k:
                        fields.append(Text())
                        keep.append(part.quoted)
                    fields[-1].extend(value)
                continue
            value = self._part_value(part, positional)
            if value is not None and not value.chars and (_placeholder_prefix(parts, part) or (
                    argument and part.quoted and part.kind == "var" and part.op is None and not part.text.isdigit()
                    and part.text in self.variables and all(p is part or (p.kind == "lit" and not p.text)
                                                            for p in parts))):
                # `HDFS_MODEL_PATH=""  # to be replaced` ... `$HDFS_MODEL_PATH/Qwen2.5-7B`: the user's to fill,
                # cited where the script leaves it empty
                fields[-1].add(self._written(part, positional), self._line_of(part.text, part.line), unresolved=True)
                keep[-1] = True
                continue
            if value is None:
                fields[-1].add(self._written(part, positional), part.line, unresolved=True)
                keep[-1] = True
            elif split and not part.quoted:
                count, start = len(fields), len(fields[-1].chars)
                add_split(value)
                if len(fields) == count and part.kind == "var" and part.text in self.variables \
                        and self.variables[part.text].loc is not None:  # not split: still the variable's text
                    fields[-1].spans.append((start, len(fields[-1].chars), self._line_of(part.text, part.line)))
            else:
                start = len(fields[-1].chars)
                fields[-1].extend(value)
                if part.kind == "var" and part.text in self.variables and self.variables[part.text].loc is not None:
                    fields[-1].spans.append((start, len(fields[-1].chars), self._line_of(part.text, part.line)))
                keep[-1] = keep[-1] or part.quoted
        every_argument = [p for p in parts if p.kind == "var" and p.text in "@*" and len(p.text) == 1]
        if not positional and every_argument and all(p in every_argument or (p.kind == "lit" and not p.text) for p in parts):
            return [f for f in fields if f.chars]  # `"$@"` with no arguments (or the caller's, unknown): no word
        return [f for f, k in zip(fields, keep, strict=True) if f.chars or k]

    def _part_value(self, part: Part, positional: list[Text] | None) -> Text | None:
        if part.kind == "arith":
            try:
                value = arith(part.text, self._lookup)
            except Unresolved:
                return None
            out = Text()
            out.add(str(value), part.line)
            return out
        if part.kind == "cmd":
            return self._path_command(part, positional)
        if part.kind != "var":
            return None
        if part.index is not None or part.length:
            return self._indexed(part, positional)
        value = self._param(part, positional)
        if part.op is None:
            return value
        if part.op in _TRANSFORMS:
            return self._transformed(part, value, positional)
        unset = value is None or (part.op.startswith(":") and not value.chars)
        if part.op.lstrip(":") in {"-", "="} and unset:
            if value is None and not part.arg and not part.text.isdigit():
                return None  # `${MODEL_PATH:-}`: the environment's value, which only the machine knows
            return self._word_text(part.arg or "", part.line, positional)
        if part.op.lstrip(":") == "+":
            return Text() if unset else self._word_text(part.arg or "", part.line, positional)
        return value

    def _word_text(self, text: str, line: int, positional: list[Text] | None) -> Text | None:
        """The text of `${x:-text}`'s text, expanded as one word."""
        if not text:
            return Text()
        try:
            words = Lexer(text, line, self.label).word().parts
        except MintMigrateError:
            return None
        fields = self._expand(words, positional, split=False)
        return fields[0] if fields else Text()

    def _transformed(self, part: Part, value: Text | None, positional: list[Text] | None) -> Text | None:
        """`${x#p}` `${x##p}` `${x%p}` `${x%%p}` (trim a glob), `${x/p/r}` `${x//p/r}` (replace),
        `${x,,}` `${x^^}` (case), `${x:offset:length}`: pure string functions of a known value; the
        characters that stay keep their lines (`${MODEL_PATH##*/}` cites MODEL_PATH's line)."""
        if value is None or value.text is None:
            return None
        op, arg, chars = part.op, part.arg or "", value.chars
        if op == ":":
            m = re.fullmatch(r"\s*(-?\d+)\s*(?::\s*(-?\d+)\s*)?", arg)
            if m is None:
                return None
            start = int(m.group(1))
            start = max(len(chars) + start, 0) if start < 0 else min(start, len(chars))
            if m.group(2) is None:
                return Text(chars[start:])
            length = int(m.group(2))
            end = start + length if length >= 0 else len(chars) + length
            return Text(chars[start:end]) if end >= start else None
        if op in {",,", ",", "^^", "^"}:
            change = str.lower if op[0] == "," else str.upper
            upto = len(chars) if len(op) == 2 else 1
            return Text([(change(c) if k < upto else c, line, u) for k, (c, line, u) in enumerate(chars)])
        pattern_text, _, replacement = arg.partition("/") if op[0] == "/" else (arg, "", "")
        pattern = self._word_text(pattern_text, part.line, positional)
        if pattern is None or pattern.text is None:
            return None
        regex = _glob_regex(pattern.text)
        text = value.text
        if op in {"#", "##"}:
            cuts = range(len(text) + 1) if op == "#" else range(len(text), -1, -1)
            k = next((k for k in cuts if regex.fullmatch(text[:k])), 0)
            return Text(chars[k:])
        if op in {"%", "%%"}:
            cuts = range(len(text), -1, -1) if op == "%" else range(len(text) + 1)
            k = next((k for k in cuts if regex.fullmatch(text[k:])), len(text))
            return Text(chars[:k])
        new = self._word_text(replacement, part.line, positional)
        if new is None or new.text is None:
            return None
        anchored = {"/#": "^(?:", "/%": "(?:"}.get(op, "(?:") + regex.pattern + (")$" if op == "/%" else ")")
        out, last = Text(), 0
        for m in re.finditer(anchored, text):
            if m.end() == m.start():
                continue
            out.chars.extend(chars[last:m.start()])
            out.extend(new)
            last = m.end()
            if op != "//":
                break
        out.chars.extend(chars[last:])
        return out

    def _indexed(self, part: Part, positional: list[Text] | None) -> Text | None:
        """`${a[0]}`, `${a[-1]}`, `${a[$i]}`, `${#a[@]}`, `${#x}` (and `${a[@]}` inside one word)."""
        elements = self._elements(part.text, positional) if part.index is not None else None
        if part.index is None:  # ${#x}
            value = self._param(part, positional)
            if value is None or value.text is None:
                return None
            out = Text()
            out.add(str(len(value.text)), part.line)
            return out
        if elements is None:
            return None
        out = Text()
        if part.index in {"@", "*"}:
            if part.length:
                out.add(str(len(elements)), part.line)
                return out
            for k, value in enumerate(elements):
                if k:
                    out.add(" ", part.line)
                out.extend_with_spans(value)
            return out
        try:
            index = arith(part.index, self._lookup)
        except Unresolved:
            return None
        value = elements[index] if -len(elements) <= index < len(elements) else Text()
        if part.length:
            if value.text is None:
                return None
            out.add(str(len(value.text)), part.line)
            return out
        return value

    def _written(self, part: Part, positional: list[Text] | None) -> str:
        """An expansion only the machine can make, as written, with the script's own variables put
        in (also inside `$(...)`: `$(cd "$SCRIPT_DIR/.." && pwd)` -> `$(cd "$(dirname "$0")/.." && pwd)`)."""
        if part.kind == "var" and part.op is not None and part.op.lstrip(":") in {"-", "="} and not part.arg:
            return f"${part.text}"  # `${MODEL_PATH:-}` says no more than `$MODEL_PATH`
        if part.kind != "cmd" or not part.raw.startswith(("$(", "`")):
            return part.raw
        opener, closer = ("$(", ")") if part.raw.startswith("$(") else ("`", "`")
        return opener + self._substituted(part.text, part.line, positional) + closer

    def _substituted(self, text: str, line: int, positional: list[Text] | None) -> str:
        out: list[str] = []
        lexer = Lexer(text, line, self.label)
        i, double = 0, False
        while i < len(text):
            c = text[i]
            if c == "\\":
                out.append(text[i:i + 2])
                i += 2
                continue
            if c == "'" and not double:
                end = text.find("'", i + 1)
                end = len(text) - 1 if end < 0 else end
                out.append(text[i:end + 1])
                i = end + 1
                continue
            if c == '"':
                double = not double
            if c in "$`":
                lexer.i = i
                try:
                    inner = lexer._expansion(quoted=double)
                except MintMigrateError:
                    out.append(text[i:])
                    break
                if lexer.i <= i:
                    out.append(c)
                    i += 1
                    continue
                value = None if inner.kind == "lit" else self._part_value(inner, positional)
                out.append(inner.text if inner.kind == "lit" else
                           value.partial if value is not None else self._written(inner, positional))
                i = lexer.i
                continue
            out.append(c)
            i += 1
        return "".join(out)

    def _path_command(self, part: Part, positional: list[Text] | None) -> Text | None:
        """`$(basename $MODEL_PATH)` / `$(dirname ...)`: launchers name runs and folders after their
        model this way, and both are pure string functions of a resolved path. Any other command is
        never run (its text stays as written)."""
        head, _, rest = part.text.strip().partition(" ")
        rest = rest.strip()
        if head not in ("basename", "dirname") or len(rest.split()) != 1 or any(c in rest for c in "|;&`<>("):
            return None
        try:
            words = Lexer(rest, part.line, self.label).word().parts
        except MintMigrateError:
            return None
        fields = self._expand(words, positional, split=False)
        if len(fields) != 1 or fields[0].text is None or not fields[0].text:
            return None
        path = fields[0].text.rstrip("/") or "/"
        out = Text()
        if head == "basename":
            out.add(path.rsplit("/", 1)[-1], part.line)
        else:
            out.add((path.rsplit("/", 1)[0] or "/") if "/" in path else ".", part.line)
        return out

    def _fields(self, word: Word, positional: list[Text] | None, *, argument: bool = False) -> list[Text]:
        return self._expand(word.parts, positional, split=True, argument=argument)

    def _tok(self, value: Text, word: Word, *, literal_key: bool) -> Tok:
        text = value.text
        first_line = value.chars[0][1] if value.chars else word.line
        line = value.line()
        tok = Tok(text, first_line, value.partial, self._at(line) if line is not None else None, source=value)
        if text is None:
            tok.partial = value.partial
        equals = next((k for k, (c, _, unresolved) in enumerate(value.chars) if c == "=" and not unresolved), None)
        if equals is not None:
            tok.key = value.cut(0).partial[:equals]
            tok.literal_key = literal_key
            rest = value.cut(equals + 1)
            tok.value_text = rest.text
            rest_line = rest.line()
            tok.key_value_loc = self._at(rest_line) if rest_line is not None else None
            if rest.text is None:
                tok.value_partial = rest.partial
        return tok

    # -- commands --

    def _command(self, words: list[Word], positional: list[Text] | None) -> None:
        # leading NAME=value words: variables (alone) or the command's environment; not split
        env: dict[str, Value] = {}
        assignments: list[tuple[str, Text, Loc]] = []
        leading: list[Word] = []
        while words and _assignment(words[0]):
            word = words.pop(0)
            leading.append(word)
            name = _assignment(word)
            value = self._expand(_after_equals(word), positional, split=False) if word.array is None else []
            assignments.append((name, value[0] if value else Text(), self._at(word.line)))
        if not words:
            for word in leading:
                self._assign(word, positional)
            return
        for name, value, loc in assignments:  # what only the machine knows is kept as written, as for exports
            line = value.line()
            env[name] = Value(value.partial if value.text is None else value.text,
                              self._at(line) if line is not None and value.text else loc, self.level)
        head = _literal(words[0])
        if head in _DECLARE:
            options = {_literal(w) for w in words[1:] if (_literal(w) or "").startswith("-")}
            for word in words[1:]:
                name = _assignment(word)
                if name is None:
                    if "-a" in options and NAME.fullmatch(_literal(word) or "") and _literal(word) not in self._arrays:
                        self._arrays[_literal(word)] = []  # `declare -a NAME`: an empty array
                    continue
                self._assign(word, positional)
                if head == "export" and name in self.variables:
                    self._export(name)
            for word in words[1:] if head == "export" else []:
                if (name := _literal(word)) in self.variables:  # `NNODES=...` then `export NNODES`
                    self._export(name)
            return
        toks = [self._tok(field, word, literal_key=bool(_assignment(word)))
                for word in words for field in self._fields(word, positional, argument=True)]
        if not toks:
            return
        if self._inline_script(toks, positional):
            return
        if (toks[0].text or "").startswith("--") and self.commands:
            self.stray_flags.append(self._at(toks[0].line))
        command = self._launch(toks, env, launchers=[])
        if command is not None:
            self.commands.append(command)
        else:
            self.command_env.update(env)

    def _inline_script(self, toks: list[Tok], positional: list[Text] | None) -> bool:
        """`[srun ...] bash -c "..."`: the string is a script of its own, run here (its lines are
        the lines it is written on; what the outer shell expanded stays expanded)."""
        toks, _ = self._unwrapped(toks, None)
        if len(toks) < 3 or (toks[0].text or "").rsplit("/", 1)[-1] not in {"bash", "sh", "zsh"}:
            return False
        if toks[1].text != "-c":
            return False
        body = toks[2]
        self._run_text(_kept_line_breaks(body), body.line, positional)
        return True

    def _value_of(self, tok: Tok) -> Value:
        loc = self._at(tok.line)
        if tok.value_text is None:
            self.unresolved.append((loc, tok.raw))
            return Value(tok.value_partial or "", loc, self.level)  # kept as written, as for exports
        return Value(tok.value_text, tok.key_value_loc or loc, self.level)


    def _unwrapped(self, toks: list[Tok], env: dict[str, Value] | None) -> tuple[list[Tok], bool]:
        """The command under its wrappers (`srun -w "$node" nohup ...`, `conda run -n env ...`,
        `docker run ... IMAGE ...`), their `VAR=value` words put in `env` (None: only looking); True
        when an environment runner runs a script itself (`uv run train.py`)."""
        while toks:
            head = (toks[0].text or "").rsplit("/", 1)[-1]
            if head in _CONTAINERS and len(toks) >= 2 and toks[1].text in _CONTAINERS[head][0]:
                toks = self._in_container(toks[2:], env, _CONTAINERS[head][1])
                continue
            if head not in _WRAPPERS and not (head in _ENV_RUNNERS and len(toks) >= 2 and toks[1].text == "run"):
                break
            toks = toks[2:] if head in _ENV_RUNNERS else toks[1:]
            option = False  # the token before was an option that may take the next word (`srun -w "$node"`)
            while toks and ((toks[0].text or "").startswith("-") or toks[0].key is not None
                            or (option and not _launch_program(toks[0].text))):
                if head in _ENV_RUNNERS and toks[0].text in ("-m", "--module"):  # `uv run ... -m pkg.train`
                    return [Tok("python", toks[0].line, "python"), *toks], False
                option = (toks[0].text or "").startswith("-") and "=" not in (toks[0].text or "")
                if toks[0].key is not None and env is not None:
                    env[toks[0].key] = self._value_of(toks[0])
                toks = toks[1:]
            if head in _WRAPPER_OPERAND and toks and not _launch_program(toks[0].text):
                toks = toks[1:]
            if head in _ENV_RUNNERS and toks and (toks[0].text or "").endswith(".py"):
                return toks, True
        return toks, False

    def _in_container(self, toks: list[Tok], env: dict[str, Value] | None, bare: set[str]) -> list[Tok]:
        """What `docker run [options] IMAGE [command]` (or `apptainer exec ... IMAGE command`) runs:
        the command after the image, behind `--entrypoint`'s program; `-e K=V` is its environment."""
        entrypoint: list[Tok] = []
        while toks and (toks[0].text or toks[0].raw).startswith("-"):
            name, given, inline = (toks[0].text or toks[0].raw).partition("=")
            if given or name in bare or len(toks) < 2:
                value, line, toks = (inline if given else None), toks[0].line, toks[1:]
            else:
                value, line, toks = toks[1].text, toks[1].line, toks[2:]
                if name == "--entrypoint" and value:
                    entrypoint = [Tok(value, line, value)]
            if name in {"-e", "--env"} and value and "=" in value and env is not None:
                key, _, setting = value.partition("=")
                env[key] = Value(setting, self._at(line), self.level)
        return entrypoint + toks[1:]  # past the image (docker exec: the container)

    def _launch(self, toks: list[Tok], env: dict[str, Value], launchers: list[str]) -> Command | None:
        toks, runs_script = self._unwrapped(toks, env)
        if runs_script:
            return self._python(toks, self._at(toks[0].line), env, launchers)  # `uv run train.py`
        if not toks or toks[0].text is None:
            return None
        program = toks[0].text.rsplit("/", 1)[-1]
        start = self._at(toks[0].line)
        rest = toks[1:]
        if _PYTHON.match(program):
            return self._python(rest, start, env, launchers)
        if program == "torchrun":
            return self._launcher("torchrun", rest, start, env, launchers)
        if program == "deepspeed":
            return self._launcher("deepspeed", rest, start, env, launchers)
        if program == "accelerate" and rest and rest[0].text == "launch":
            return self._launcher("accelerate", rest[1:], start, env, launchers)
        if program == "ray" and len(rest) >= 2 and rest[0].text == "job" and rest[1].text == "submit":
            texts = [t.text for t in rest]
            if "--" in texts:
                return self._launch(rest[texts.index("--") + 1:], env, launchers + ["ray"])
            return None
        if program == "trl" and rest and rest[0].text and not rest[0].text.startswith("-"):
            return self._finish("trl", None, None, rest[0].text, [], rest[1:], start, env, launchers)
        return None

    def _python(self, toks: list[Tok], start: Loc, env: dict[str, Value], launchers: list[str]) -> Command | None:
        i = 0
        while i < len(toks):
            text = _located(toks[i]) or ""
            if text == "-m" and i + 1 < len(toks):
                module = toks[i + 1].text or ""
                rest = toks[i + 2:]
                if module in {"torch.distributed.run", "torch.distributed.launch"}:
                    return self._launcher("torchrun", rest, start, env, launchers)
                if module in {"accelerate.commands.launch"}:
                    return self._launcher("accelerate", rest, start, env, launchers)
                if module == "deepspeed.launcher.runner":
                    return self._launcher("deepspeed", rest, start, env, launchers)
                return self._finish("python", module, None, None, [], rest, start, env, launchers)
            if text == "-c":
                return None  # inline code: nothing to follow
            if text in {"-X", "-W"}:
                i += 2
                continue
            if text.startswith("-") and text != "-":
                i += 1
                continue
            if text.endswith(".py") or _located(toks[i]) is not None:
                return self._finish("python", None, text, None, [], toks[i + 1:], start, env, launchers)
            return None
        return None

    def _launcher(self, program: str, toks: list[Tok], start: Loc, env: dict[str, Value],
                  launchers: list[str]) -> Command | None:
        bare = _BARE[program]
        options: list[Arg] = []
        as_module = False
        i = 0
        while i < len(toks):
            tok = toks[i]
            text = tok.text if tok.text is not None else tok.raw
            if not text.startswith("-"):
                break
            if text in {"-m", "--module"}:
                as_module = True
                i += 1
                continue
            if "=" in text:
                options.append(self._flag_arg(tok, text.split("=", 1)[0], tok.value_text, tok.key_value_loc,
                                              self._at(tok.line)))
                i += 1
                continue
            takes_value = text not in bare and i + 1 < len(toks) and not (toks[i + 1].raw or "").endswith(".py")
            if takes_value:
                options.append(self._flag_arg(toks[i + 1], text, toks[i + 1].text, toks[i + 1].value_loc,
                                              self._at(tok.line)))
                i += 2
            else:
                loc = self._at(tok.line)
                options.append(Arg(_norm(text), text, Value(True, loc, self.level), "flag", loc=loc))
                i += 1
        if i >= len(toks) or _located(toks[i]) is None:
            return None
        target = _located(toks[i])
        rest = toks[i + 1:]
        if program == "torchrun" and target in {"python", "python3"}:
            return None
        module = target if as_module or not target.endswith(".py") else None
        script = None if module else target
        command = self._finish(program, module, script, None, options, rest, start, env, launchers)
        command.world_size = _world_size(program, options)
        return command

    def _flag_arg(self, tok: Tok, flag: str, text: str | None, var_loc: Loc | None, at: Loc) -> Arg:
        loc = var_loc or self._at(_written_line(tok) if text is None else tok.line)
        raw = tok.raw.split("=", 1)[1] if tok.raw.startswith("-") and "=" in tok.raw else tok.raw
        if text is None and (tok.value_partial if tok.raw.startswith("-") and "=" in tok.raw else tok.partial):
            raw = tok.value_partial if tok.raw.startswith("-") and "=" in tok.raw else tok.partial
        if text is None:
            self.unresolved.append((self._at(tok.line), tok.raw))
            return Arg(_norm(flag), flag, None, "flag", _unquote(raw), loc, at=at)
        value = parse_scalar(text)
        if value is None:  # argparse hands the script the word itself (`--report_to none`); hydra's `k=null` is None
            value = text
        return Arg(_norm(flag), flag, Value(value, loc, self.level), "flag", _unquote(raw), loc, at=at)

    def _finish(self, program: str, module: str | None, script: str | None, sub: str | None,
                launcher_args: list[Arg], toks: list[Tok], start: Loc, env: dict[str, Value],
                launchers: list[str]) -> Command:
        args = self._args(toks)
        target = f"-m {module}" if module and program == "python" else (module or script or "")
        shown = " ".join(x for x in (*launchers, program, target, sub or "") if x)
        return Command(start, program, module, script, sub, launcher_args, args, env, shown,
                       launchers=launchers + [program])

    def _args(self, toks: list[Tok]) -> list[Arg]:
        args: list[Arg] = []
        i = 0
        while i < len(toks):
            tok = toks[i]
            raw_text = tok.text if tok.text is not None else tok.raw
            if _is_flag(raw_text):
                if "=" in raw_text and tok.key is not None:
                    args.append(self._flag_arg(tok, tok.key, tok.value_text, tok.key_value_loc, self._at(tok.line)))
                    i += 1
                    continue
                values: list[Tok] = []
                j = i + 1
                while j < len(toks) and not _is_flag(toks[j].text if toks[j].text is not None else toks[j].raw) \
                        and not _is_override(toks[j]):
                    values.append(toks[j])
                    j += 1
                if not values:
                    loc = self._at(tok.line)
                    args.append(Arg(_norm(raw_text), raw_text, Value(True, loc, self.level), "flag", loc=loc))
                elif len(values) == 1:
                    args.append(self._flag_arg(values[0], raw_text, values[0].text, values[0].value_loc, self._at(tok.line)))
                else:
                    if any(v.text is None for v in values):
                        self.unresolved.append((self._at(tok.line), " ".join(v.raw for v in values)))
                        written = [v.text if v.text is not None else (v.partial or v.raw) for v in values]
                        args.append(Arg(_norm(raw_text), raw_text, None, "flag", " ".join(written),
                                        values[0].value_loc or self._at(_written_line(values[0])), items=written))
                    else:
                        items = [parse_scalar(v.text) for v in values]
                        if not (all(isinstance(x, str) for x in items)
                                or all(isinstance(x, int | float) and not isinstance(x, bool) for x in items)):
                            items = [v.text for v in values]  # `--x 1 -`: one type per list, as written
                        loc = self._at(values[0].line)
                        args.append(Arg(_norm(raw_text), raw_text, Value(items, loc, self.level), "flag", loc=loc))
                i = j
                continue
            if _is_override(tok):
                m = _OVERRIDE.match(tok.key + "=")
                loc = tok.key_value_loc or self._at(tok.line)
                raw = tok.value_partial or (_unquote(tok.raw.split("=", 1)[1]) if "=" in tok.raw else "")
                if tok.value_text is None:
                    self.unresolved.append((self._at(tok.line), tok.raw))
                    args.append(Arg(m.group(2), tok.key, None, "override", raw, loc, at=self._at(tok.line)))
                else:
                    args.append(Arg(m.group(2), tok.key, Value(parse_scalar(tok.value_text), loc, self.level),
                                    "override", raw, loc, at=self._at(tok.line)))
                i += 1
                continue
            loc = tok.value_loc or self._at(tok.line)
            args.append(Arg("", "", None if tok.text is None else Value(tok.text, loc, self.level), "positional",
                            tok.raw))
            i += 1
        return args


# `$(dirname "$0")`, `$(cd "$(dirname "$0")/.." && pwd)`: the script's own folder (and below it)
# The script's own folder: `$(dirname "$0")`, `$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)`.
_SELF = r'(?:\$\{?0\}?|\$\{BASH_SOURCE(?:\[0\])?\}|\$BASH_SOURCE)'
_OWN_DIR = re.compile(rf'\$\(\s*dirname\s+"?{_SELF}"?\s*\)'
                      rf'|\$\(\s*cd\s+"?\$\(\s*dirname\s+"?{_SELF}"?\s*\)(/[^"$`()]*)?"?\s*(?:&&|;)\s*pwd(?:\s+-P)?\s*\)')


_SOURCED_LINES = 10_000_000  # line numbers of the k-th sourced file start at k * this


def _eval_words(text: Text) -> list[Text]:
    """The words `eval` reads from already expanded text: split on blanks outside quotes, quotes
    removed, redirections (`>log`, `2>&1`) and their targets left out, up to the first pipe or
    command separator."""
    words: list[Text] = []
    current: Text | None = None
    quote = ""
    skip_target = False  # the next word is a redirection's target
    chars = text.chars
    k = 0

    def finish() -> None:
        nonlocal current, skip_target
        if current is not None and not skip_target:
            words.append(current)
        elif current is not None:
            skip_target = False
        current = None

    while k < len(chars):
        c, line, unresolved = chars[k]
        k += 1
        if not unresolved and quote:
            if c == quote:
                quote = ""
            else:
                current.chars.append((c, line, unresolved))
            continue
        if not unresolved and c in "'\"":
            quote = c
            current = current or Text()
            continue
        if not unresolved and c in " \t\n":
            finish()
            continue
        if not unresolved and c in "<>":
            if current is not None and current.partial.isdigit():
                current = None  # `2>&1`: the 2 names a stream, it is no word
            finish()
            while k < len(chars) and chars[k][0] in "<>&|" and not chars[k][2]:
                k += 1
            if k < len(chars) and chars[k - 1][0] == "&" and chars[k][0].isdigit():
                k += 1  # `>&1`: a stream, not a file word
            else:
                skip_target = True
            continue
        if not unresolved and c in ";|&":
            finish()
            return words
        current = current or Text()
        current.chars.append((c, line, unresolved))
    finish()
    return words


def _written_line(tok: Tok) -> int:
    """Where a partly unresolved word is written: the line of its first character this script
    spells out itself (`$DATA/train/cot.jsonl`: the line holding `/train/cot.jsonl`), not the line
    that set the unknown variable in front of it."""
    if tok.source is None:
        return tok.line
    return next((line for _c, line, unresolved in tok.source.chars if not unresolved), tok.line)


def _placeholder_prefix(parts: list[Part], part: Part) -> bool:
    """An empty variable that starts a path (`$ROOT/data/train.parquet`), or that is the whole value of
    an override (`model.path=$MODEL`): what the script leaves for its user to fill. Expanding it to ""
    would turn a relative path into a root one, or a model into no model."""
    i = next(k for k, p in enumerate(parts) if p is part)
    before = parts[i - 1] if i > 0 else None
    after = parts[i + 1] if i + 1 < len(parts) else None
    if not (part.kind == "var" and part.op is None and part.index is None and not part.length
            and not part.text.isdigit()):
        return False
    starts_a_path = after is not None and after.kind == "lit" and after.text.startswith("/")
    # `model.path=$MODEL` after `MODEL=""`: an override set to nothing is a value left for the user
    whole_override = after is None and before is not None and before.kind == "lit" and before.text.endswith("=") \
        and i == 1
    return starts_a_path or whole_override


_UNKNOWN_ROOT = re.compile(r"^(\$\{?\w+\}?|\$\(\s*pwd\s*\))/")  # `$ROOT/`, `$(pwd)/`; never `$(dirname $MODEL)/`


def _located(tok: Tok) -> str | None:
    """A command's program or script as a path to look for: its text, or a path the script builds
    from its own folder (`python $(dirname "$0")/train.py`): that folder is `.` from the script, the
    folder files are looked for from. The value itself stays as written (`$0` is the machine's)."""
    if tok.text is not None:
        return tok.text
    m = _OWN_DIR.match(tok.raw)
    if m is not None:
        path = "." + (m.group(1) or "") + tok.raw[m.end():]
        return None if any(c in path for c in "$`") else path
    # `python $PROJECT_DIR/src/trainers/kto_trainer.py` (PROJECT_DIR=$(pwd), or the machine's): the
    # script's path below the folder only the machine knows, looked for like any other script
    written = tok.partial or tok.raw
    rest = _UNKNOWN_ROOT.sub("", written)
    if rest != written and rest.endswith(".py") and not any(c in rest for c in "$`"):
        return rest
    return None


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _is_flag(text: str) -> bool:
    return text.startswith("-") and len(text) > 1 and not looks_numeric(text)


def _is_override(tok: Tok) -> bool:
    """`a.b=c`, `+a.b=c`, `++a=c`: a hydra-style `key=value` word (not a flag, not an env prefix)."""
    return tok.key is not None and not tok.key.startswith("-") and bool(_OVERRIDE.fullmatch(tok.key + "="))


def _norm(flag: str) -> str:
    """`--per-device-train-batch-size` -> `per_device_train_batch_size`; dots are kept."""
    return flag.lstrip("-").replace("-", "_")


def _world_size(program: str, options: list[Arg]) -> Value | None:
    def get(*names: str) -> Value | None:
        for arg in options:
            if arg.name in names and arg.value is not None and isinstance(arg.value.value, int):
                return arg.value
        return None

    if program == "torchrun":
        per_node, nodes = get("nproc_per_node"), get("nnodes")
    elif program == "deepspeed":
        per_node, nodes = get("num_gpus"), get("num_nodes")
    else:
        per_node, nodes = get("num_processes"), None  # accelerate counts all processes
    if per_node is None:
        return None
    total = per_node.value * (nodes.value if nodes else 1)
    return per_node.with_value(total)


_LAUNCH_START = re.compile(
    r"\s*(?:\$\s+)?((?:[A-Z_][A-Z0-9_]*=\S*\s+)*"
    r"(?:nohup\s+|time\s+)?(?:[~.\w-]*/)*(?:python[\d.]*|torchrun|deepspeed|accelerate\s+launch|trl\s+\w+|ray\s+job\s+submit|uv\s+run)\b.*)"
)


def commands_in_text(text: str, label: str, first_line: int, level: Level = Level.EXAMPLE) -> list[Command]:
    """Launch commands quoted in prose (a docstring or comment): each line that starts a launch,
    with its backslash continuations, parsed on its own; prose around it is skipped, and a block
    that does not parse is skipped too (documentation is not a script)."""
    lines = text.split("\n")
    commands: list[Command] = []
    i = 0
    while i < len(lines):
        line = lines[i].lstrip("# ").rstrip() if lines[i].lstrip().startswith("#") else lines[i]
        m = _LAUNCH_START.match(line)
        if not m and not _chained_launch(line):
            i += 1
            continue
        block, start = [m.group(1) if m else line.strip()], i
        while block[-1].rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
            nxt = lines[i]
            block.append(nxt.lstrip()[1:].lstrip() if nxt.lstrip().startswith("#") else nxt)
        i += 1
        try:
            script = ShellScript("\n".join(block), label, first_line=first_line + start, level=level)
        except MintMigrateError:
            continue
        commands.extend(script.commands)
    return commands


def _chained_launch(line: str) -> bool:
    """`source .bashrc; conda activate env; python train.py lr=1e-4`: a launch after set-up commands
    on one line (the set-up commands are no launches; the parser keeps only the launch)."""
    return any(_LAUNCH_START.match(line[m.end():]) for m in re.finditer(r";|&&", line))


def _literal(word: Word) -> str | None:
    """A word's text when it is all literal (keywords, command names), else None."""
    if all(p.kind == "lit" for p in word.parts):
        return "".join(p.text for p in word.parts)
    return None


def _assignment(word: Word) -> str | None:
    """`NAME=...` / `NAME+=...` written literally: the name; else None."""
    first = word.parts[0] if word.parts else None
    if first is None or first.kind != "lit" or first.quoted:
        return None
    m = _ASSIGN.match(first.text)
    return m.group(1) if m else None


def _after_equals(word: Word) -> list[Part]:
    first = word.parts[0]
    rest = first.text.split("=", 1)[1]
    return ([Part("lit", rest, False, first.line)] if rest else []) + word.parts[1:]
