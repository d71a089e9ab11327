"""Shell launch scripts: real command-line parsing, with variables and `$((...))` arithmetic.

A small lexer follows bash's quoting rules (single quotes literal, double quotes expand, `\\`
escapes and line continuations, comments, heredocs, redirections, `;` `&&` `||` `|` `&`). Words are
kept as parts (literal text, `$VAR`, `${VAR:-default}`, `$((expr))`, `$(cmd)`) and expanded in
script order, so a variable means what it meant where the command ran. A value that came whole
from a variable is traced to the line that defined it; anything that depends on the environment,
a positional parameter or a command substitution is left unresolved, never guessed.

Commands are then unwrapped: env prefixes, `nohup`/`time`/`exec`, `python [-m] ...`, `torchrun`,
`deepspeed`, `accelerate launch`, `ray job submit -- ...`, `trl <cmd>`, and the target's arguments
split into flags (`--key value`, `--key=value`, multi-value), hydra overrides (`a.b=c`, `+a.b=c`)
and positionals.
"""

import ast
import operator
import re
from dataclasses import dataclass, field

from mcp_server.analyze.evidence import Level, Loc, Value
from mcp_server.analyze.scalars import looks_numeric, parse_scalar
from mcp_server.errors import MintMigrateError
from mcp_server.pyparse import PythonSyntaxError, parse_ast

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\+?)=")
_OVERRIDE = re.compile(r"([+~]{0,2})([A-Za-z_][\w\-/]*(?:\.[\w\-/]+)*)=")
_PYTHON = re.compile(r"python(\d+(\.\d+)?)?\Z")
_KEYWORDS = {"if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac",
             "function", "select", "{", "}", "!", "[[", "]]", "[", "]", "in", "return", "exit"}
_WRAPPERS = {"nohup", "time", "exec", "sudo", "nice", "stdbuf", "srun", "env"}
_DECLARE = {"export", "declare", "local", "readonly", "typeset"}

# Launcher options that take no value (everything else takes the next word unless written --k=v).
_BARE = {
    "torchrun": {"--standalone", "-m", "--module", "--no-python", "--no_python", "--run-path", "--run_path"},
    "deepspeed": {"--module", "--no_python", "--no_local_rank", "--force_multi", "--elastic_training",
                  "--bind_cores_to_rank", "--no_ssh_check", "--enable_each_rank_log"},
    "accelerate": {"-m", "--module", "--multi_gpu", "--use_deepspeed", "--use_fsdp", "--use_megatron_lm",
                   "--cpu", "--no_python", "--debug", "--quiet", "-q", "--tpu", "--same_network",
                   "--use_xpu", "--dynamo_use_fullgraph", "--dynamo_use_dynamic"},
}


# --- lexing ----------------------------------------------------------------------------------------


@dataclass
class Word:
    parts: list[tuple]  # ("lit", text) | ("var", name, default|None) | ("arith", expr) | ("cmd", text) | ("special", ch)
    line: int
    raw: str


@dataclass
class _Lexer:
    text: str
    first_line: int
    label: str
    i: int = 0
    line: int = 0
    commands: list[list[Word]] = field(default_factory=list)
    heredocs: list[str] = field(default_factory=list)

    def error(self, message: str) -> MintMigrateError:
        return MintMigrateError(f"{self.label}:{self.line}: cannot parse shell: {message}. Fix the quoting, "
                                "or pass the script's training command on its own.")

    def run(self) -> list[list[Word]]:
        self.line = self.first_line
        current: list[Word] = []
        text, n = self.text, len(self.text)
        redirect_next = False
        while self.i < n:
            ch = text[self.i]
            if ch == "\n":
                self._end(current)
                current = []
                self.line += 1
                self.i += 1
                self._skip_heredocs()
                continue
            if ch in " \t\r":
                self.i += 1
                continue
            if ch == "\\" and self.i + 1 < n and text[self.i + 1] == "\n":
                self.i += 2
                self.line += 1
                continue
            if ch == "#":
                while self.i < n and text[self.i] != "\n":
                    self.i += 1
                continue
            if ch in ";|&()":
                if ch == "&" and text.startswith("&>", self.i):  # &> file: a redirection
                    self.i += 2 + (text[self.i + 2: self.i + 3] == ">")
                    redirect_next = True
                    continue
                if ch == "|" and text.startswith("||", self.i) or ch == "&" and text.startswith("&&", self.i):
                    self.i += 1
                self.i += 1
                self._end(current)
                current = []
                continue
            if ch in "<>":
                if text.startswith("<<", self.i) and not text.startswith("<<<", self.i):
                    self.i += 2
                    self._heredoc_marker()
                    continue
                self.i += 1
                while self.i < n and text[self.i] in "<>&|":
                    self.i += 1
                if self.i < n and text[self.i] == "-" or (self.i < n and text[self.i].isdigit() and text[self.i - 1] == "&"):
                    self.i += 1
                    continue  # >&2, >&-: no target word
                redirect_next = True
                continue
            word = self._word()
            # `2>&1`, `1>log`: the digits were an fd, not a word
            if self.i < n and text[self.i] in "<>" and word.raw.isdigit():
                continue
            if redirect_next:
                redirect_next = False
                continue
            current.append(word)
        self._end(current)
        return self.commands

    def _end(self, words: list[Word]) -> None:
        if words:
            self.commands.append(words)

    def _heredoc_marker(self) -> None:
        text = self.text
        if self.i < len(text) and text[self.i] == "-":
            self.i += 1
        while self.i < len(text) and text[self.i] in " \t":
            self.i += 1
        word = self._word()
        self.heredocs.append("".join(p[1] for p in word.parts if p[0] == "lit") or word.raw)

    def _skip_heredocs(self) -> None:
        while self.heredocs:
            marker = self.heredocs.pop(0)
            while self.i < len(self.text):
                end = self.text.find("\n", self.i)
                end = len(self.text) if end < 0 else end
                body_line = self.text[self.i:end]
                self.i = end + 1
                self.line += 1
                if body_line.strip() == marker.strip("'\""):
                    break

    def _word(self) -> Word:
        text, n = self.text, len(self.text)
        start, line = self.i, self.line
        parts: list[tuple] = []
        lit: list[str] = []

        def flush() -> None:
            if lit:
                parts.append(("lit", "".join(lit)))
                lit.clear()

        while self.i < n:
            ch = text[self.i]
            if ch in " \t\r\n;|&()<>":
                break
            if ch == "\\":
                if self.i + 1 < n and text[self.i + 1] == "\n":
                    self.i += 2
                    self.line += 1
                    continue
                if self.i + 1 < n:
                    lit.append(text[self.i + 1])
                self.i += 2
                continue
            if ch == "'":
                end = text.find("'", self.i + 1)
                if end < 0:
                    raise self.error("unterminated single quote")
                chunk = text[self.i + 1:end]
                lit.append(chunk)
                self.line += chunk.count("\n")
                self.i = end + 1
                continue
            if ch == '"':
                self.i += 1
                while True:
                    if self.i >= n:
                        raise self.error("unterminated double quote")
                    c = text[self.i]
                    if c == '"':
                        self.i += 1
                        break
                    if c == "\\" and self.i + 1 < n and text[self.i + 1] in '$`"\\\n':
                        if text[self.i + 1] == "\n":
                            self.line += 1
                        else:
                            lit.append(text[self.i + 1])
                        self.i += 2
                        continue
                    if c in "$`":
                        flush()
                        parts.append(self._expansion())
                        continue
                    if c == "\n":
                        self.line += 1
                    lit.append(c)
                    self.i += 1
                continue
            if ch in "$`":
                flush()
                parts.append(self._expansion())
                continue
            lit.append(ch)
            self.i += 1
        flush()
        return Word(parts, line, text[start:self.i])

    def _balanced(self, open_: str, close: str, start: int) -> int:
        depth, j, text = 0, start, self.text
        while j < len(text):
            if text[j] == open_:
                depth += 1
            elif text[j] == close:
                depth -= 1
                if depth == 0:
                    return j
            elif text[j] == "\n":
                self.line += 1
            j += 1
        raise self.error(f"unbalanced '{open_}'")

    def _expansion(self) -> tuple:
        text, i = self.text, self.i
        if text[i] == "`":
            end = text.find("`", i + 1)
            if end < 0:
                raise self.error("unterminated backquote")
            self.i = end + 1
            return ("cmd", text[i + 1:end])
        nxt = text[i + 1] if i + 1 < len(text) else ""
        if text.startswith("$((", i):
            end = self._balanced("(", ")", i + 1)
            self.i = end + 1
            return ("arith", text[i + 3:end - 1])
        if nxt == "(":
            end = self._balanced("(", ")", i + 1)
            self.i = end + 1
            return ("cmd", text[i + 2:end])
        if nxt == "{":
            end = self._balanced("{", "}", i + 1)
            self.i = end + 1
            body = text[i + 2:end]
            m = re.match(r"([A-Za-z_][A-Za-z0-9_]*)(?::?[-=](.*))?\Z", body, re.S)
            if m:
                return ("var", m.group(1), m.group(2))
            return ("cmd", body)  # ${#x}, ${x/a/b}, ...: not resolved
        m = _NAME.match(text, i + 1)
        if m:
            self.i = m.end()
            return ("var", m.group(0), None)
        if nxt and nxt in "0123456789@*#?$!-":
            self.i = i + 2
            return ("special", nxt)
        self.i = i + 1
        return ("lit", "$")


# --- expansion -----------------------------------------------------------------------------------


class _Unresolved(Exception):
    pass


_ARITH_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Pow: operator.pow,
              ast.Mod: operator.mod, ast.FloorDiv: operator.floordiv, ast.LShift: operator.lshift,
              ast.RShift: operator.rshift}


def _arith(expr: str, lookup) -> int:
    """Bash integer arithmetic: + - * / % ** and parentheses over numbers and variables."""
    expr = re.sub(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", r"\1", expr).replace("/", "//").replace("////", "//")
    try:
        tree = parse_ast(expr.strip(), mode="eval")
    except PythonSyntaxError as exc:
        raise _Unresolved() from exc

    def ev(node: ast.AST) -> int:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name):
            text = lookup(node.id)
            if text is None or not re.fullmatch(r"\s*-?\d+\s*", text):
                raise _Unresolved()
            return int(text)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            value = ev(node.operand)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITH_OPS:
            left, right = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.FloorDiv | ast.Mod) and right == 0:
                raise _Unresolved()
            if isinstance(node.op, ast.FloorDiv):  # bash truncates toward zero
                return int(left / right) if (left < 0) != (right < 0) else left // right
            return _ARITH_OPS[type(node.op)](left, right)
        raise _Unresolved()

    return ev(tree)


@dataclass
class Tok:
    """A word after expansion: its text (None when it depends on something the script does not
    define) and, when the whole value came from one variable, where that variable was set."""

    text: str | None
    line: int
    raw: str
    value_loc: Loc | None = None
    key: str | None = None  # for `key=value` words: the literal key
    value_text: str | None = None
    key_value_loc: Loc | None = None
    partial: str | None = None  # the text with unresolved parts kept as written
    value_partial: str | None = None


# --- commands ------------------------------------------------------------------------------------


@dataclass
class Arg:
    name: str  # normalised: flag without dashes, override key without +/~ prefixes
    written: str  # the flag or key as written
    value: Value | None  # None when unresolved
    kind: str  # "flag" | "override" | "positional"
    raw: str = ""  # the value's text as written (quotes removed), kept when it cannot be resolved
    loc: Loc | None = None  # where the value is written

    def literal(self, level: Level) -> Value | None:
        """The value as written, unexpanded (`$HOME/data/train.parquet`), for path-like settings
        whose unresolved part is still worth showing."""
        if self.value is not None:
            return self.value
        if not self.raw or self.loc is None:
            return None
        return Value(self.raw, self.loc, level)


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

    def flags(self) -> list[Arg]:
        return [a for a in self.args if a.kind == "flag"]

    def overrides(self) -> list[Arg]:
        return [a for a in self.args if a.kind == "override"]


class ShellScript:
    """A parsed launch script (or a usage command quoted in a docstring)."""

    def __init__(self, text: str, label: str, *, first_line: int = 1, level: Level = Level.COMMAND):
        self.label = label
        self.level = level
        self.variables: dict[str, Value] = {}
        self.commands: list[Command] = []
        self.unresolved: list[tuple[Loc, str]] = []
        self.stray_flags: list[Loc] = []
        self.exports: dict[str, Value] = {}
        self.partial: dict[str, str] = {}  # variables that could not be resolved, as far as they expand
        for words in _Lexer(text, first_line, label).run():
            self._command(words)

    # -- expansion --

    def _lookup(self, name: str) -> str | None:
        value = self.variables.get(name)
        return None if value is None else value.value

    def _expand_parts(self, parts: list[tuple], line: int, *, partial: bool = False) -> tuple[str | None, Loc | None]:
        """Expand word parts; returns (text or None, Loc of the variable when the text is exactly one).

        With `partial`, what cannot be resolved is kept as written (`$HOME/data`) instead of failing."""
        out: list[str] = []
        try:
            for part in parts:
                kind = part[0]
                try:
                    if kind == "lit":
                        out.append(part[1])
                    elif kind == "var":
                        value = self.variables.get(part[1])
                        if value is not None and value.value is not None:
                            out.append(value.value)
                        elif part[2] is not None:
                            text, _ = self._expand_parts(_Lexer(part[2], line, self.label)._word().parts, line,
                                                         partial=partial)
                            if text is None:
                                raise _Unresolved()
                            out.append(text)
                        else:
                            raise _Unresolved()
                    elif kind == "arith":
                        out.append(str(_arith(part[1], self._lookup)))
                    else:
                        raise _Unresolved()
                except _Unresolved:
                    if not partial:
                        raise
                    out.append(self._as_written(part))
        except (_Unresolved, MintMigrateError):
            return None, None
        loc = None
        if len(parts) == 1 and parts[0][0] == "var" and parts[0][1] in self.variables:
            loc = self.variables[parts[0][1]].loc
        return "".join(out), loc

    def _as_written(self, part: tuple) -> str:
        kind = part[0]
        if kind == "var":
            return self.partial.get(part[1], f"${part[1]}")
        if kind == "arith":
            return f"$(({part[1]}))"
        if kind == "cmd":
            return f"$({part[1]})"
        if kind == "special":
            return f"${part[1]}"
        return part[1]

    def _tok(self, word: Word) -> Tok:
        text, loc = self._expand_parts(word.parts, word.line)
        tok = Tok(text, word.line, word.raw, loc)
        if text is None:
            tok.partial, _ = self._expand_parts(word.parts, word.line, partial=True)
        first = word.parts[0] if word.parts else None
        if first and first[0] == "lit" and "=" in first[1]:
            key, rest = first[1].split("=", 1)
            value_parts = ([("lit", rest)] if rest else []) + word.parts[1:]
            tok.key = key
            tok.value_text, tok.key_value_loc = self._expand_parts(value_parts, word.line)
            if tok.value_text is None:
                tok.value_partial, _ = self._expand_parts(value_parts, word.line, partial=True)
            if not value_parts:
                tok.value_text = ""
        return tok

    # -- commands --

    def _command(self, words: list[Word]) -> None:
        toks = [self._tok(w) for w in words]
        words_tok = list(toks)
        env: dict[str, Value] = {}
        # leading NAME=value words: variables (alone) or the command's environment
        while toks and toks[0].key is not None and _ASSIGN.fullmatch(toks[0].key + "="):
            tok = toks.pop(0)
            env[tok.key.rstrip("+")] = self._value_of(tok)
        if not toks:
            self.variables.update(env)
            for tok in words_tok:
                if tok.key is not None and tok.value_partial is not None:
                    self.partial[tok.key.rstrip("+")] = tok.value_partial
            return
        head = toks[0].text or ""
        if head in _DECLARE:
            for tok in toks[1:]:
                if tok.key is not None and _NAME.fullmatch(tok.key):
                    self.variables[tok.key] = self._value_of(tok)
                    if tok.value_partial is not None:
                        self.partial[tok.key] = tok.value_partial
                    if head == "export":
                        self.exports[tok.key] = self.variables[tok.key]
            return
        while toks and (toks[0].text in _KEYWORDS):
            toks.pop(0)
        if not toks:
            return
        if (toks[0].text or "").startswith("--") and self.commands:
            self.stray_flags.append(Loc(self.label, toks[0].line))
        command = self._launch(toks, env, launchers=[])
        if command is not None:
            self.commands.append(command)

    def _value_of(self, tok: Tok) -> Value:
        loc = Loc(self.label, tok.line)
        if tok.value_text is None:
            self.unresolved.append((loc, tok.raw))
        # a variable copied whole from another keeps the original definition line
        return Value(tok.value_text, tok.key_value_loc or loc, self.level)

    def _launch(self, toks: list[Tok], env: dict[str, Value], launchers: list[str]) -> Command | None:
        while toks and (toks[0].text or "").rsplit("/", 1)[-1] in _WRAPPERS:
            toks = toks[1:]
            while toks and ((toks[0].text or "").startswith("-") or toks[0].key is not None):
                if toks[0].key is not None:
                    env[toks[0].key] = self._value_of(toks[0])
                toks = toks[1:]
        if len(toks) >= 2 and toks[0].text in {"uv", "poetry", "pipenv"} and toks[1].text == "run":
            toks = toks[2:]
        if not toks or toks[0].text is None:
            return None
        program = toks[0].text.rsplit("/", 1)[-1]
        start = Loc(self.label, toks[0].line)
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
            text = toks[i].text or ""
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
            if text.endswith(".py") or toks[i].text is not None:
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
            text = tok.text or ""
            if not text.startswith("-"):
                break
            if text in {"-m", "--module"}:
                as_module = True
                i += 1
                continue
            if "=" in text:
                options.append(self._flag_arg(tok, text.split("=", 1)[0], tok.value_text, tok.key_value_loc))
                i += 1
                continue
            takes_value = text not in bare and i + 1 < len(toks) and not (toks[i + 1].text or "").endswith(".py")
            if takes_value:
                options.append(self._flag_arg(toks[i + 1], text, toks[i + 1].text, toks[i + 1].value_loc))
                i += 2
            else:
                loc = Loc(self.label, tok.line)
                options.append(Arg(_norm(text), text, Value(True, loc, self.level), "flag", loc=loc))
                i += 1
        if i >= len(toks) or toks[i].text is None:
            return None
        target = toks[i].text
        rest = toks[i + 1:]
        if program == "torchrun" and target in {"python", "python3"}:
            return None
        module = target if as_module or not target.endswith(".py") else None
        script = None if module else target
        command = self._finish(program, module, script, None, options, rest, start, env, launchers)
        command.world_size = _world_size(program, options)
        return command

    def _flag_arg(self, tok: Tok, flag: str, text: str | None, var_loc: Loc | None) -> Arg:
        loc = var_loc or Loc(self.label, tok.line)
        raw = tok.raw.split("=", 1)[1] if tok.raw.startswith("-") and "=" in tok.raw else tok.raw
        if text is None and (tok.value_partial if tok.raw.startswith("-") and "=" in tok.raw else tok.partial):
            raw = tok.value_partial if tok.raw.startswith("-") and "=" in tok.raw else tok.partial
        if text is None:
            self.unresolved.append((Loc(self.label, tok.line), tok.raw))
            return Arg(_norm(flag), flag, None, "flag", _unquote(raw), Loc(self.label, tok.line))
        return Arg(_norm(flag), flag, Value(parse_scalar(text), loc, self.level), "flag", _unquote(raw), loc)

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
                    args.append(self._flag_arg(tok, tok.key, tok.value_text, tok.key_value_loc))
                    i += 1
                    continue
                values: list[Tok] = []
                j = i + 1
                while j < len(toks) and not _is_flag(toks[j].text if toks[j].text is not None else toks[j].raw) \
                        and not _is_override(toks[j]):
                    values.append(toks[j])
                    j += 1
                if not values:
                    loc = Loc(self.label, tok.line)
                    args.append(Arg(_norm(raw_text), raw_text, Value(True, loc, self.level), "flag", loc=loc))
                elif len(values) == 1:
                    args.append(self._flag_arg(values[0], raw_text, values[0].text, values[0].value_loc))
                else:
                    if any(v.text is None for v in values):
                        self.unresolved.append((Loc(self.label, tok.line), " ".join(v.raw for v in values)))
                        args.append(Arg(_norm(raw_text), raw_text, None, "flag"))
                    else:
                        items = [parse_scalar(v.text) for v in values]
                        loc = Loc(self.label, values[0].line)
                        args.append(Arg(_norm(raw_text), raw_text, Value(items, loc, self.level), "flag", loc=loc))
                i = j
                continue
            if _is_override(tok):
                m = _OVERRIDE.match(tok.key + "=")
                loc = tok.key_value_loc or Loc(self.label, tok.line)
                raw = tok.value_partial or (_unquote(tok.raw.split("=", 1)[1]) if "=" in tok.raw else "")
                if tok.value_text is None:
                    self.unresolved.append((Loc(self.label, tok.line), tok.raw))
                    args.append(Arg(m.group(2), tok.key, None, "override", raw, Loc(self.label, tok.line)))
                else:
                    args.append(Arg(m.group(2), tok.key, Value(parse_scalar(tok.value_text), loc, self.level),
                                    "override", raw, loc))
                i += 1
                continue
            loc = tok.value_loc or Loc(self.label, tok.line)
            args.append(Arg("", "", None if tok.text is None else Value(tok.text, loc, self.level), "positional",
                            tok.raw))
            i += 1
        return args


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
    r"(?:nohup\s+|time\s+)?(?:python[\d.]*|torchrun|deepspeed|accelerate\s+launch|trl\s+\w+|ray\s+job\s+submit|uv\s+run)\b.*)"
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
        if not m:
            i += 1
            continue
        block, start = [m.group(1)], i
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
