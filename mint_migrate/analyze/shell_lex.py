"""Shell lexing: a launch script's text -> simple commands made of words, following bash's rules.

Quoting (single quotes literal, double quotes expand, `\\` escapes and line continuations),
comments, redirections, the operators `;` `&&` `||` `|` `&`, function definitions (`name() {`),
and here-documents, whose bodies are kept with their lines (`read -r -d '' CMD <<EOF` stores a
whole command line in a variable), arrays (`ARGS=( ... )` over several lines, comments inside),
`(( expr ))` as one command, `[[ ... ]]` whose `&&` `||` `<` `>` and parentheses are its own words,
and a `case` clause's patterns. Words are kept as parts (literal text, `$VAR`, `${VAR:-default}`,
`${VAR##*/}`, `${ARGS[@]}`, `$((expr))`, `$(cmd)`, `$1` / `$@`), each with its line and whether it
was quoted, so that expansion (shell.py) can split unquoted expansions into words as bash does.
"""

import ast
import re
from dataclasses import dataclass, field

from mint_migrate import arithmetic
from mint_migrate.errors import MintMigrateError
from mint_migrate.pyparse import PythonSyntaxError, parse_ast

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PARAM = re.compile(r"(#?)([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!])(?:\[([^\]]*)\])?(?:(:?[-=+?])(.*))?\Z", re.S)
_TRANSFORM = re.compile(r"([A-Za-z_][A-Za-z0-9_]*|[0-9]+)(##|#|%%|%|//|/#|/%|/|\^\^|\^|,,|,|:(?=\s*-?\d))(.*)\Z", re.S)
_ARRAY_ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=\Z")
# words that may stand before `((` when it is an arithmetic command, not two subshells
_BEFORE_ARITH = {"if", "elif", "while", "until", "for", "then", "do", "else", "!"}


@dataclass
class Part:
    kind: str  # lit | var | arith | cmd | test (`(( expr ))` standing as a command: its text)
    text: str  # literal text, variable name (or positional digit / @ * #), arithmetic or command text
    quoted: bool
    line: int
    op: str | None = None  # `${x:-y}`: ":-"
    arg: str | None = None  # `${x:-y}`: "y"
    raw: str = ""  # as written (`${HOME}` stays `${HOME}`, `$HOME` stays `$HOME`)
    index: str | None = None  # `${a[@]}`: "@"; `${a[0]}`: "0" (an array element or all of them)
    length: bool = False  # `${#a}` / `${#a[@]}`: the length, not the value


@dataclass
class Word:
    parts: list[Part]
    line: int
    raw: str
    array: "list[Word] | None" = None  # `NAME=( words ... )`: the words between the parentheses


@dataclass
class HereDoc:
    marker: str
    quoted: bool  # <<'EOF': the body is literal
    strip_tabs: bool  # <<-EOF
    body: list[tuple[str, int]] = field(default_factory=list)  # (line text, line number)


@dataclass
class RawCommand:
    words: list[Word] = field(default_factory=list)
    conditional: bool = False  # runs only after `&&` / `||`: an `exit` here is a guard, not the end
    funcdef: bool = False  # `name() ...`: a function definition's head
    heredoc: HereDoc | None = None
    op: str | None = None  # the operator before it: "&&" / "||" (its status decides whether it runs)
    pattern: bool = False  # `a|b)` in a `case`: the words are the clause's patterns, not a command


@dataclass
class Lexer:
    text: str
    first_line: int
    label: str
    i: int = 0
    line: int = 0
    commands: list[RawCommand] = field(default_factory=list)
    pending: list[HereDoc] = field(default_factory=list)
    cases: int = 0  # open `case ... esac` blocks
    pattern_next: bool = False  # after `case x in` or `;;`: a clause's patterns come next

    def __post_init__(self) -> None:
        self.line = self.first_line

    def error(self, message: str) -> MintMigrateError:
        return MintMigrateError(f"{self.label}:{self.line}: cannot parse shell: {message}. Fix the quoting, "
                                "or pass the script's training command on its own.")

    def run(self) -> list[RawCommand]:
        self.line = self.first_line
        current = RawCommand()
        text, n = self.text, len(self.text)
        redirect_next = False
        while self.i < n:
            ch = text[self.i]
            if ch == "\n":
                current = self._end(current)
                self.line += 1
                self.i += 1
                self._read_heredocs()
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
            if self.pattern_next and not current.words:
                self.pattern_next = False
                if not re.match(r"esac(?![^\s;|&()<>])", text[self.i:]):
                    self._patterns()
                    continue
            if ch == "(" and text.startswith("((", self.i) and all(unquoted_text(w) in _BEFORE_ARITH for w in current.words):
                current.words.append(self._arith_command())
                continue
            if ch == "(" and self._function_head(current):
                current.funcdef = True
                self.i = text.index(")", self.i) + 1
                current = self._end(current)
                continue
            if ch in ";|&()":
                if ch == "&" and text.startswith("&>", self.i):  # &> file: a redirection
                    self.i += 2 + (text[self.i + 2: self.i + 3] == ">")
                    redirect_next = True
                    continue
                if self._in_test(current) and ch in "|&()":  # inside `[[ ]]` these are the test's own words
                    size = 2 if text.startswith(("||", "&&"), self.i) else 1
                    current.words.append(Word([Part("lit", text[self.i:self.i + size], False, self.line)], self.line,
                                              text[self.i:self.i + size]))
                    self.i += size
                    continue
                andor = text.startswith("||", self.i) or text.startswith("&&", self.i)
                op = text[self.i:self.i + 2] if andor else None
                clause_end = re.match(r";;&|;;|;&", text[self.i:self.i + 3]) if self.cases else None
                if clause_end:
                    self.pattern_next = True
                    self.i += len(clause_end.group(0)) - 1
                self.i += 2 if andor or text.startswith(";;", self.i) else 1
                current = self._end(current)
                current.conditional = andor
                current.op = op
                continue
            if ch in "<>" and self._in_test(current):  # `[[ $a < $b ]]`: a comparison, not a redirection
                current.words.append(Word([Part("lit", ch, False, self.line)], self.line, ch))
                self.i += 1
                continue
            if ch in "<>":
                if text.startswith("<<", self.i) and not text.startswith("<<<", self.i):
                    self.i += 2
                    self._heredoc_marker(current)
                    continue
                self.i += 1
                while self.i < n and text[self.i] in "<>&|":
                    self.i += 1
                if self.i < n and text[self.i] == "-" or (self.i < n and text[self.i].isdigit() and text[self.i - 1] == "&"):
                    self.i += 1
                    continue  # >&2, >&-: no target word
                redirect_next = True
                continue
            word = self.word()
            # `2>&1`, `1>log`: the digits were an fd, not a word
            if self.i < n and text[self.i] in "<>" and word.raw.isdigit():
                continue
            if redirect_next:
                redirect_next = False
                continue
            if self.i < n and text[self.i] == "(" and _ARRAY_ASSIGN.match(word.raw):
                word.array = self._array_words()
            current.words.append(word)
            plain = [unquoted_text(w) for w in current.words]
            if len(plain) == 3 and plain[0] == "case" and plain[2] == "in":  # the clauses follow
                self.cases += 1
                self.pattern_next = True
                current = self._end(current)
            elif plain == ["esac"] and self.cases:
                self.cases -= 1
        self._end(current)
        return self.commands

    def _patterns(self) -> None:
        """`(a|b*)`: a case clause's patterns, up to the closing parenthesis."""
        text, n = self.text, len(self.text)
        if text[self.i] == "(":
            self.i += 1
        words: list[Word] = []
        while self.i < n:
            ch = text[self.i]
            if ch in " \t\r|":
                self.i += 1
            elif ch == "\\" and text.startswith("\\\n", self.i):
                self.i += 2
                self.line += 1
            elif ch == ")":
                self.i += 1
                break
            elif ch in "\n;&(<>":
                break  # not a pattern bash would take: left to the commands around it
            else:
                words.append(self.word())
        self.commands.append(RawCommand(words, pattern=True))

    def _in_test(self, current: RawCommand) -> bool:
        """Inside `[[ ... ]]`, where `&&`, `||`, `<`, `>` and parentheses belong to the test."""
        plain = [unquoted_text(w) for w in current.words]
        return "[[" in plain and "]]" not in plain[plain.index("[["):]

    def _arith_command(self) -> Word:
        """`(( expr ))` as a command (a condition, or an update like `((i++))`)."""
        line, start = self.line, self.i
        end = self._balanced("(", ")", self.i)
        self.i = end + 1
        inner = self.text[start + 2:end - 1]
        return Word([Part("test", inner, False, line, raw=self.text[start:end + 1])], line, self.text[start:end + 1])

    def _array_words(self) -> list[Word]:
        """The words of `NAME=( ... )`: over several lines, with comment lines between them."""
        text, n = self.text, len(self.text)
        self.i += 1  # the opening parenthesis
        words: list[Word] = []
        while self.i < n:
            ch = text[self.i]
            if ch == "\n":
                self.line += 1
                self.i += 1
            elif ch in " \t\r":
                self.i += 1
            elif ch == "\\" and text.startswith("\\\n", self.i):
                self.i += 2
                self.line += 1
            elif ch == "#":
                while self.i < n and text[self.i] != "\n":
                    self.i += 1
            elif ch == ")":
                self.i += 1
                return words
            elif ch in ";|&(<>":
                raise self.error("unexpected operator inside an array")
            else:
                words.append(self.word())
        raise self.error("unterminated array '('")

    def _end(self, current: RawCommand) -> RawCommand:
        if current.words:
            self.commands.append(current)
            return RawCommand()
        return current

    def _function_head(self, current: RawCommand) -> bool:
        """`name() {` / `function name() {`: a name, then `()` with only blanks between."""
        words = current.words
        if not (len(words) == 1 or (len(words) == 2 and words[0].raw == "function")):
            return False
        if not NAME.fullmatch(words[-1].raw.replace("-", "_").replace(":", "_")):
            return False
        close = self.text.find(")", self.i)
        return close > 0 and not self.text[self.i + 1:close].strip()

    def _heredoc_marker(self, current: RawCommand) -> None:
        text = self.text
        strip_tabs = self.i < len(text) and text[self.i] == "-"
        if strip_tabs:
            self.i += 1
        while self.i < len(text) and text[self.i] in " \t":
            self.i += 1
        start = self.i
        word = self.word()
        quoted = any(c in text[start:self.i] for c in "'\"\\")
        marker = "".join(p.text for p in word.parts if p.kind == "lit") or word.raw
        doc = HereDoc(marker, quoted, strip_tabs)
        self.pending.append(doc)
        if current.heredoc is None:
            current.heredoc = doc

    def _read_heredocs(self) -> None:
        while self.pending:
            doc = self.pending.pop(0)
            while self.i < len(self.text):
                end = self.text.find("\n", self.i)
                end = len(self.text) if end < 0 else end
                body_line = self.text[self.i:end]
                number = self.line
                self.i = end + 1
                self.line += 1
                if (body_line.lstrip("\t") if doc.strip_tabs else body_line).rstrip("\r") == doc.marker:
                    break
                doc.body.append((body_line.lstrip("\t") if doc.strip_tabs else body_line, number))

    def word(self) -> Word:
        text, n = self.text, len(self.text)
        start, line = self.i, self.line
        parts: list[Part] = []
        lit: list[str] = []
        state = {"quoted": False, "line": line}

        def flush() -> None:
            if lit:
                parts.append(Part("lit", "".join(lit), state["quoted"], state["line"]))
                lit.clear()
            state["line"] = self.line

        while self.i < n:
            ch = text[self.i]
            if ch in " \t\r\n;|&()<>":
                break
            if ch == "\\":
                if self.i + 1 < n and text[self.i + 1] == "\n":
                    self.i += 2
                    self.line += 1
                    flush()
                    continue
                if self.i + 1 < n:
                    flush()
                    lit.append(text[self.i + 1])
                    state["quoted"] = True
                    flush()
                    state["quoted"] = False
                self.i += 2
                continue
            if ch == "'":
                end = text.find("'", self.i + 1)
                if end < 0:
                    raise self.error("unterminated single quote")
                flush()
                state["quoted"] = True
                chunk = text[self.i + 1:end]
                parts.append(Part("lit", chunk, True, self.line))
                self.line += chunk.count("\n")
                self.i = end + 1
                state["quoted"] = False
                state["line"] = self.line
                continue
            if ch == '"':
                flush()
                state["quoted"] = True
                self.i += 1
                parts.append(Part("lit", "", True, self.line))  # "" is a word even when empty
                self._double_quoted(parts, lit, flush, closing=True)
                state["quoted"] = False
                continue
            if ch == "$" and self.i + 1 < n and text[self.i + 1] == "'":  # $'...': ANSI-C quoting
                flush()
                begin = self.i
                chunk, self.i = _ansi_c(text, self.i + 2)
                if chunk is None:
                    raise self.error("unterminated $'...' quote")
                parts.append(Part("lit", chunk, True, self.line))
                self.line += text[begin:self.i].count("\n")
                state["line"] = self.line
                continue
            if ch in "$`":
                flush()
                parts.append(self._expansion(quoted=False))
                state["line"] = self.line
                continue
            lit.append(ch)
            self.i += 1
        flush()
        return Word(parts, line, text[start:self.i])

    def _double_quoted(self, parts: list[Part], lit: list[str], flush, *, closing: bool) -> None:
        """The inside of "...": `$` and backquotes expand, `\\` escapes only $ ` " \\ and newline."""
        text, n = self.text, len(self.text)
        while True:
            if self.i >= n:
                if closing:
                    raise self.error("unterminated double quote")
                break
            c = text[self.i]
            if c == '"' and closing:
                self.i += 1
                flush()
                break
            if c == "\\" and self.i + 1 < n and text[self.i + 1] in '$`"\\\n':
                if text[self.i + 1] == "\n":
                    self.line += 1
                    flush()
                else:
                    lit.append(text[self.i + 1])
                self.i += 2
                continue
            if c in "$`":
                flush()
                parts.append(self._expansion(quoted=True))
                flush()
                continue
            if c == "\n":
                lit.append(c)
                self.line += 1
                self.i += 1
                flush()
                continue
            lit.append(c)
            self.i += 1

    def heredoc_parts(self) -> list[Part]:
        """The whole text read as the body of an unquoted here-document (like double quotes, with
        no closing quote): `$` expands, `\\newline` joins lines."""
        self.line = self.first_line
        parts: list[Part] = []
        lit: list[str] = []
        state = {"line": self.line}

        def flush() -> None:
            if lit:
                parts.append(Part("lit", "".join(lit), True, state["line"]))
                lit.clear()
            state["line"] = self.line

        self._double_quoted(parts, lit, flush, closing=False)
        flush()
        return parts

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

    def _expansion(self, *, quoted: bool) -> Part:
        text, i, line = self.text, self.i, self.line
        if text[i] == "`":
            end = text.find("`", i + 1)
            if end < 0:
                raise self.error("unterminated backquote")
            self.i = end + 1
            return Part("cmd", text[i + 1:end], quoted, line, raw=text[i:end + 1])
        nxt = text[i + 1] if i + 1 < len(text) else ""
        if text.startswith("$((", i):
            end = self._balanced("(", ")", i + 1)
            self.i = end + 1
            return Part("arith", text[i + 3:end - 1], quoted, line, raw=text[i:end + 1])
        if nxt == "(":
            end = self._balanced("(", ")", i + 1)
            self.i = end + 1
            return Part("cmd", text[i + 2:end], quoted, line, raw=text[i:end + 1])
        if nxt == "{":
            end = self._balanced("{", "}", i + 1)
            self.i = end + 1
            body = text[i + 2:end]
            m = _PARAM.match(body)
            if m and not (m.group(1) and m.group(4)):  # `${#x:-y}` is not bash
                return Part("var", m.group(2), quoted, line, op=m.group(4), arg=m.group(5), raw=text[i:end + 1],
                            index=m.group(3), length=bool(m.group(1)))
            m = _TRANSFORM.match(body)
            if m:  # ${x##*/}, ${x%.*}, ${x//a/b}, ${x,,}, ${x:0:3}
                return Part("var", m.group(1), quoted, line, op=m.group(2), arg=m.group(3), raw=text[i:end + 1])
            return Part("cmd", body, quoted, line, raw=text[i:end + 1])  # ${!x}, ...: not resolved
        m = NAME.match(text, i + 1)
        if m:
            self.i = m.end()
            return Part("var", m.group(0), quoted, line, raw=text[i:m.end()])
        if nxt and nxt in "0123456789@*#?$!-":
            self.i = i + 2
            return Part("var", nxt, quoted, line, raw=text[i:i + 2])
        self.i = i + 1
        return Part("lit", "$", quoted, line)


def unquoted_text(word: Word) -> str | None:
    """A word's text when it is all unquoted literal (a keyword), else None."""
    if all(p.kind == "lit" and not p.quoted for p in word.parts):
        return "".join(p.text for p in word.parts)
    return None


# --- arithmetic ------------------------------------------------------------------------------------


class Unresolved(Exception):
    """A value that depends on something the script does not define."""


_COMPARE = {ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b,
            ast.GtE: lambda a, b: a >= b, ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b}
_ARITH_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Pow: "**", ast.Mod: "%", ast.FloorDiv: "/",
              ast.LShift: "<<", ast.RShift: ">>"}


def arith(expr: str, lookup) -> int:
    """Bash integer arithmetic: + - * / % ** and parentheses over numbers and variables, and the
    comparisons and logic of conditions (`iter > 0 && n != 2`: 1 or 0)."""
    expr = re.sub(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", r"\1", expr).replace("/", "//").replace("////", "//")
    expr = re.sub(r"!(?!=)", " not ", expr.replace("&&", " and ").replace("||", " or "))
    if len(expr) > 500:
        raise Unresolved()
    source = expr.strip()
    try:
        tree = parse_ast(source, mode="eval")
    except PythonSyntaxError as exc:
        raise Unresolved() from exc

    def ev(node: ast.AST) -> int:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name):
            text = lookup(node.id)
            if text is None or not re.fullmatch(r"\s*-?\d+\s*", text):
                raise Unresolved()
            return int(text)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            sign = "-" if isinstance(node.op, ast.USub) else "+"
            operand = node.operand
            between = source[node.col_offset + 1 : operand.col_offset] if node.lineno == operand.lineno == 1 else "("
            if isinstance(operand, ast.BinOp) and isinstance(operand.op, ast.Pow) and "(" not in between:
                # bash's unary minus binds tighter than **: `-2**2` is (-2)**2, `-(2**2)` is not
                return binary(ast.Pow, arithmetic.unary(sign, ev(operand.left), mode="bash"), ev(operand.right))
            return int(arithmetic.unary(sign, ev(operand), mode="bash"))
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITH_OPS:
            return binary(type(node.op), ev(node.left), ev(node.right))
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARE:
            return int(_COMPARE[type(node.ops[0])](ev(node.left), ev(node.comparators[0])))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return int(not ev(node.operand))
        if isinstance(node, ast.BoolOp):  # && and || stop at the first operand that decides
            for operand in node.values:
                truth = ev(operand) != 0
                if truth != isinstance(node.op, ast.And):
                    return int(truth)
            return int(isinstance(node.op, ast.And))
        raise Unresolved()

    def binary(op: type, left: int, right: int) -> int:
        try:  # bash's own semantics: 64-bit integers that wrap, `$((-7 % 3))` is -1
            return int(arithmetic.binary(_ARITH_OPS[op], left, right, mode="bash"))
        except (ArithmeticError, ValueError) as exc:
            raise Unresolved() from exc

    return ev(tree)


_ANSI_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f",
                 "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}


def _ansi_c(text: str, i: int) -> tuple[str | None, int]:
    """The text of a `$'...'` string from just after its opening quote (bash's escapes: \\n, \\t,
    \\', \\\\, \\xHH, \\NNN octal), and the index after its closing quote; None when it never closes."""
    out: list[str] = []
    n = len(text)
    while i < n:
        c = text[i]
        if c == "'":
            return "".join(out), i + 1
        if c == "\\" and i + 1 < n:
            nxt = text[i + 1]
            if nxt in _ANSI_ESCAPES:
                out.append(_ANSI_ESCAPES[nxt])
                i += 2
                continue
            if nxt == "x":
                digits = re.match(r"[0-9a-fA-F]{1,2}", text[i + 2:i + 4])
                if digits:
                    out.append(chr(int(digits.group(), 16)))
                    i += 2 + len(digits.group())
                    continue
            if nxt in "01234567":
                digits = re.match(r"[0-7]{1,3}", text[i + 1:i + 4])
                out.append(chr(int(digits.group(), 8)))
                i += 1 + len(digits.group())
                continue
            out.append(c)  # an unknown escape stays as written
            i += 1
            continue
        out.append(c)
        i += 1
    return None, i
