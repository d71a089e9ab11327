"""Shell launch scripts, run the way bash would run them, without running anything.

The lexer (shell_lex.py) gives simple commands made of words. Here they are expanded in script
order, so a variable means what it meant where the command ran: `$VAR`, `${VAR:-default}`,
positional parameters (`$1`, `${1:-8}`, `$@`), `$((...))` arithmetic; unquoted expansions are split
into words (`deepspeed --module $training_commands`), and every character keeps the line it was
written on, so a value is traced to the line that holds it (a flag in a here-document, the line
that set a variable). `read -d '' VAR <<EOF` stores the here-document; functions run when they
are called, with their arguments as positional parameters; `if` / `case` / loops run their
commands in order; an `exit` ends the script only at the top level (inside a condition it is a
guard). Anything that depends on the environment, an unset positional parameter or a command
substitution stays unresolved, kept as written, never guessed.

Commands are then unwrapped: env prefixes, `nohup`/`time`/`exec`, `python [-m] ...`, `torchrun`,
`deepspeed`, `accelerate launch`, `ray job submit -- ...`, `trl <cmd>`, and the target's arguments
split into flags (`--key value`, `--key=value`, multi-value), hydra overrides (`a.b=c`, `+a.b=c`)
and positionals.
"""

import re
from dataclasses import dataclass, field

from mint_migrate.analyze.evidence import Level, Loc, Value
from mint_migrate.analyze.scalars import looks_numeric, parse_scalar
from mint_migrate.analyze.shell_lex import NAME, Lexer, Part, RawCommand, Unresolved, Word, arith
from mint_migrate.errors import MintMigrateError

_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\+?)=")
_OVERRIDE = re.compile(r"([+~]{0,2})([A-Za-z_][\w\-/]*(?:\.[\w\-/]+)*)=")
_PYTHON = re.compile(r"python(\d+(\.\d+)?)?\Z")
_OPENERS = {"if", "while", "until", "for", "case", "select"}
_CLOSERS = {"fi", "done", "esac"}
_KEYWORDS = {"if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac",
             "function", "select", "{", "}", "!", "[[", "]]", "[", "]", "in", "return"}
_WRAPPERS = {"nohup", "time", "exec", "sudo", "nice", "stdbuf", "srun", "env"}
_DECLARE = {"export", "declare", "local", "readonly", "typeset"}
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
        text = self.raw.strip()
        return Value(parse_scalar(text) if text.startswith("[") and text.endswith("]") else self.raw, self.loc, level)


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
        self._texts: dict[str, Text] = {}  # each variable's characters with their lines
        self._functions: dict[str, list[RawCommand]] = {}
        self._run(Lexer(text, first_line, label).run(), None, 0)

    # -- control flow --

    def _run(self, commands: list[RawCommand], positional: list[Text] | None, calls: int) -> bool:
        """Run commands in order; False when an `exit` at the top level ended the script."""
        depth = 0
        i = 0
        while i < len(commands):
            raw = commands[i]
            head = _literal(raw.words[0])
            if raw.funcdef or (head == "function" and len(raw.words) >= 2):
                i = self._define(commands, i)
                continue
            words = list(raw.words)
            while words and _literal(words[0]) in _KEYWORDS:
                word = _literal(words.pop(0))
                depth += (word in _OPENERS) - (word in _CLOSERS)
            i += 1
            if not words:
                continue
            first = _literal(words[0])
            if first == "exit" and depth <= 0 and not raw.conditional and calls == 0:
                return False
            if first in self._functions and calls < _MAX_CALL_DEPTH:
                args = [t for w in words[1:] for t in self._fields(w, positional)]
                if not self._run(self._functions[first], args, calls + 1):
                    return False
                continue
            if first == "read" and raw.heredoc is not None:
                self._read(words, raw, positional)
                continue
            self._command(words, positional)
        return True

    def _define(self, commands: list[RawCommand], i: int) -> int:
        """`name() { ...; }` / `function name { ...; }`: keep the body for the calls; returns the
        index after it."""
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
        self._functions[name] = body
        return j

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
        self._set(name, value, Loc(self.label, line))

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
        if text is None:
            self.unresolved.append((loc, f"{name}={value.partial}"))
            self.partial[name] = value.partial
        else:
            self.partial.pop(name, None)
        # a variable copied whole from another keeps the original definition line
        where = Loc(self.label, value.line()) if value.line() is not None and text else loc
        self.variables[name] = Value(text, where, self.level)
        self._texts[name] = value

    def _param(self, part: Part, positional: list[Text] | None) -> Text | None:
        """The value of `$name` / `$1` / `$#`, or None when the script does not say."""
        name = part.text
        if name.isdigit():
            if name == "0":
                out = Text()
                out.add(self.label, part.line)
                return out
            index = int(name) - 1
            return positional[index] if positional is not None and index < len(positional) else None
        if name == "#":
            if positional is None:
                return None
            out = Text()
            out.add(str(len(positional)), part.line)
            return out
        return self._texts.get(name)

    def _expand(self, parts: list[Part], positional: list[Text] | None, *, split: bool) -> list[Text]:
        """Expand word parts into fields: unquoted expansions are split on blanks when `split`."""
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
            if part.kind == "var" and part.text in "@*" and len(part.text) == 1:
                if positional is None:
                    self.unresolved.append((Loc(self.label, part.line), part.raw))  # the caller's extra arguments
                    continue
                for k, value in enumerate(positional):
                    if k:
                        fields.append(Text())
                        keep.append(part.quoted)
                    fields[-1].extend(value)
                continue
            value = self._part_value(part, positional)
            if value is None:
                fields[-1].add(part.raw, part.line, unresolved=True)
                keep[-1] = True
            elif split and not part.quoted:
                add_split(value)
            else:
                start = len(fields[-1].chars)
                fields[-1].extend(value)
                if part.kind == "var" and part.text in self.variables and self.variables[part.text].loc is not None:
                    fields[-1].spans.append((start, len(fields[-1].chars), self.variables[part.text].loc.line))
                keep[-1] = keep[-1] or part.quoted
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
        value = self._param(part, positional)
        if part.op is None:
            return value
        unset = value is None or (part.op.startswith(":") and not value.chars)
        if part.op.lstrip(":") in {"-", "="} and unset:
            default = Lexer(part.arg or "", part.line, self.label)
            try:
                words = default.word().parts if part.arg else []
            except MintMigrateError:
                return None
            fields = self._expand(words, positional, split=False)
            return fields[0] if fields else Text()
        if part.op.lstrip(":") == "+":
            return Text() if unset else None
        return value

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

    def _fields(self, word: Word, positional: list[Text] | None) -> list[Text]:
        return self._expand(word.parts, positional, split=True)

    def _tok(self, value: Text, word: Word, *, literal_key: bool) -> Tok:
        text = value.text
        first_line = value.chars[0][1] if value.chars else word.line
        line = value.line()
        tok = Tok(text, first_line, value.partial, Loc(self.label, line) if line is not None else None, source=value)
        if text is None:
            tok.partial = value.partial
        equals = next((k for k, (c, _, unresolved) in enumerate(value.chars) if c == "=" and not unresolved), None)
        if equals is not None:
            tok.key = value.cut(0).partial[:equals]
            tok.literal_key = literal_key
            rest = value.cut(equals + 1)
            tok.value_text = rest.text
            rest_line = rest.line()
            tok.key_value_loc = Loc(self.label, rest_line) if rest_line is not None else None
            if rest.text is None:
                tok.value_partial = rest.partial
        return tok

    # -- commands --

    def _command(self, words: list[Word], positional: list[Text] | None) -> None:
        # leading NAME=value words: variables (alone) or the command's environment; not split
        env: dict[str, Value] = {}
        assignments: list[tuple[str, Text, Loc]] = []
        while words and _assignment(words[0]):
            word = words.pop(0)
            name = _assignment(word)
            value = self._expand(_after_equals(word), positional, split=False)
            assignments.append((name, value[0] if value else Text(), Loc(self.label, word.line)))
        if not words:
            for name, value, loc in assignments:
                self._set(name, value, loc)
            return
        for name, value, loc in assignments:
            line = value.line()
            env[name] = Value(value.text, Loc(self.label, line) if line is not None and value.text else loc, self.level)
        head = _literal(words[0])
        if head in _DECLARE:
            for word in words[1:]:
                name = _assignment(word)
                if name is None:
                    continue
                value = self._expand(_after_equals(word), positional, split=False)
                self._set(name, value[0] if value else Text(), Loc(self.label, word.line))
                if head == "export":
                    self._export(name)
            for word in words[1:] if head == "export" else []:
                if (name := _literal(word)) in self.variables:  # `NNODES=...` then `export NNODES`
                    self._export(name)
            return
        toks = [self._tok(field, word, literal_key=bool(_assignment(word)))
                for word in words for field in self._fields(word, positional)]
        if not toks:
            return
        if self._inline_script(toks, positional):
            return
        if (toks[0].text or "").startswith("--") and self.commands:
            self.stray_flags.append(Loc(self.label, toks[0].line))
        command = self._launch(toks, env, launchers=[])
        if command is not None:
            self.commands.append(command)

    def _inline_script(self, toks: list[Tok], positional: list[Text] | None) -> bool:
        """`[srun ...] bash -c "..."`: the string is a script of its own, run here (its lines are
        the lines it is written on; what the outer shell expanded stays expanded)."""
        i = 0
        while i < len(toks) and (toks[i].text or "").rsplit("/", 1)[-1] in _WRAPPERS:
            i += 1
            while i < len(toks) and (toks[i].raw.startswith("-") or toks[i].key is not None):
                i += 1
        if i + 2 >= len(toks) or (toks[i].text or "").rsplit("/", 1)[-1] not in {"bash", "sh", "zsh"}:
            return False
        if toks[i + 1].text != "-c":
            return False
        body = toks[i + 2]
        try:
            commands = Lexer(_kept_line_breaks(body), body.line, self.label).run()
        except MintMigrateError:
            return True  # an inline script we cannot read: nothing to follow
        self._run(commands, positional, 1)
        return True

    def _value_of(self, tok: Tok) -> Value:
        loc = Loc(self.label, tok.line)
        if tok.value_text is None:
            self.unresolved.append((loc, tok.raw))
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
            text = tok.text if tok.text is not None else tok.raw
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
            takes_value = text not in bare and i + 1 < len(toks) and not (toks[i + 1].raw or "").endswith(".py")
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
            return Arg(_norm(flag), flag, None, "flag", _unquote(raw), loc)
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
                    args.append(Arg(m.group(2), tok.key, None, "override", raw, loc))
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
