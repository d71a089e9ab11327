"""Setup traps: imports, environment variables, endpoints, keys and tokenizers (api_facts §1.1,
§1.3, §1.4, §2.10)."""

import re

import libcst as cst

from mint_migrate.lint.context import (
    LintContext,
    argument,
    dotted,
    env_name_of_call,
    env_name_of_subscript,
    has_star_kwargs,
    keyword,
    mask_secret,
    string_value,
)
from mint_migrate.lint.registry import Rule, register

TINKER_TO_MINT_ENV = {"TINKER_API_KEY": "MINT_API_KEY", "TINKER_BASE_URL": "MINT_BASE_URL"}
ENDPOINT_RE = re.compile(r"https?://(mint[\w.-]*\.macaron\.(?:xin|im)|tinker\.thinkingmachines\.dev)\b[^\s\"'<>()\[\],;]*")
URL_RE = re.compile(r"^https?://\S+$")
KEY_RE = re.compile(r"(?<![\w-])(?:sk|tml)-[A-Za-z0-9][A-Za-z0-9_-]{15,}")
PLACEHOLDER_WORDS = ("your", "xxxx", "example", "placeholder", "dummy", "fake", "test", "redacted", "local", "changeme")
KEY_ENV = {"MINT_API_KEY", "TINKER_API_KEY"}
URL_ENV = {"MINT_BASE_URL", "TINKER_BASE_URL"}
LOCAL_PATH_PREFIXES = ("/", "./", "../", "~", ".")

register(
    Rule(
        id="MINT040",
        name="import-tinker-before-mint",
        severity="error",
        family="setup",
        summary="`import tinker` with no `import mint` before it: no MinT patches, wrong endpoint.",
        what="The first `import tinker` / `from tinker... import ...` in a file that has not "
        "imported `mint` earlier (`import mint`, `from mint import ...`, `import mint as tinker`).",
        why="`import mint` is what points tinker at MinT: it copies `MINT_API_KEY`/`MINT_BASE_URL` "
        "into tinker's variables and patches tinker's key check for `sk-` keys (incompletely in the "
        "PyPI wheel 0.2.0: with a server that does not advertise JWT auth, `ServiceClient()` still "
        "rejects an `sk-` key; preflight checks it). Without it a bare tinker client talks to "
        "Tinker's endpoint and rejects MinT keys.",
        fix="Import mint first: `import mint as tinker` is the smallest change; new code should "
        "`import mint` and use `mint.ServiceClient(...)`.",
        bad="import tinker\nfrom tinker import types",
        good="import mint as tinker\nfrom tinker import types",
        autofix="Rewrites `import tinker` to `import mint as tinker` (`import tinker as t` to "
        "`import mint as t`); for any other tinker import inserts `import mint` on the line before.",
    )
)
register(
    Rule(
        id="MINT041",
        name="tinker-env-name",
        severity="warning",
        family="setup",
        summary="`TINKER_API_KEY` / `TINKER_BASE_URL` read where `MINT_*` is meant.",
        what="`os.environ[...]`, `os.environ.get(...)`, `os.getenv(...)`, `os.environ.setdefault(...)` "
        "or `in os.environ` with `TINKER_API_KEY` or `TINKER_BASE_URL`, in a file that imports mint or "
        "tinker. A TINKER_ read that backs up the MINT_ read of the same variable "
        "(`os.environ.get(\"MINT_BASE_URL\") or os.environ[\"TINKER_BASE_URL\"]`) is not flagged.",
        why="MinT's documented variables are `MINT_API_KEY` and `MINT_BASE_URL`; `import mint` copies "
        "them into the TINKER_ names only if they are set. A script that checks or sets the TINKER_ "
        "names works on one machine and fails on the next, or sends a MinT key to Tinker.",
        fix="Read `MINT_API_KEY` / `MINT_BASE_URL` and pass them explicitly: "
        "`mint.ServiceClient(base_url=os.environ.get(\"MINT_BASE_URL\"))`.",
        bad="api_key = os.environ[\"TINKER_API_KEY\"]",
        good="api_key = os.environ[\"MINT_API_KEY\"]",
        autofix="Renames the variable in reads (`os.environ[...]` loads, `.get`, `getenv`, `in`); "
        "assignments and `setdefault` stay findings, since renaming a write after `import mint` "
        "changes what tinker sees.",
    )
)
register(
    Rule(
        id="MINT042",
        name="hard-coded-endpoint",
        severity="warning",
        family="setup",
        summary="A MinT/Tinker endpoint written into the code.",
        what="A MinT or Tinker service URL in a string (`https://mint*.macaron.xin|im`, "
        "`tinker.thinkingmachines.dev`), a URL literal passed as `base_url=` to `ServiceClient`, or "
        "one assigned to `MINT_BASE_URL`/`TINKER_BASE_URL`, in a file that imports mint or tinker. The "
        "fallback default of an environment "
        "lookup (`os.environ.get(\"MINT_BASE_URL\", \"https://...\")`) and docstrings are not flagged.",
        why="MinT's endpoints differ between the SDK, its README and its docs, and by region "
        "(global, China, a local mint-local); a hard-coded one sends a run to the wrong place and "
        "cannot be switched without editing code.",
        fix="Read the endpoint from `MINT_BASE_URL`: `mint.ServiceClient(base_url=os.environ.get(\"MINT_BASE_URL\"))`.",
        bad="service_client = mint.ServiceClient(base_url=\"https://mint.macaron.xin\")",
        good="service_client = mint.ServiceClient(base_url=os.environ.get(\"MINT_BASE_URL\"))",
    )
)
register(
    Rule(
        id="MINT043",
        name="api-key-in-source",
        severity="error",
        family="setup",
        summary="An API key written into the source (security).",
        what="A string or comment holding something shaped like a MinT/Tinker key (`sk-...`, "
        "`tml-...`, 16+ characters), or any non-placeholder literal passed as `api_key=` or "
        "assigned to `MINT_API_KEY`/`TINKER_API_KEY`. Placeholders (`sk-your-key`, `...test...`) "
        "are not flagged. The finding shows only `sk-...` and the last four characters.",
        why="Keys in code end up in git history, logs, notebooks and bug reports; anyone who sees "
        "one can train and sample on your account.",
        fix="Delete the key from the file, rotate it, and read it from the environment "
        "(`MINT_API_KEY`, e.g. via a `.env` file that is git-ignored).",
        bad="service_client = mint.ServiceClient(api_key=\"sk-3f9a...e41c\")",
        good="service_client = mint.ServiceClient()  # reads MINT_API_KEY",
    )
)
register(
    Rule(
        id="MINT044",
        name="tokenizer-from-hub",
        severity="warning",
        family="setup",
        summary="A tokenizer loaded from the Hugging Face Hub without `local_files_only`.",
        what="`AutoTokenizer.from_pretrained(...)` (or another `*Tokenizer.from_pretrained`) in a file "
        "that imports mint or tinker, without `local_files_only=True`, unless the name is a local path or the file sets "
        "`HF_HUB_OFFLINE=1` / `TRANSFORMERS_OFFLINE=1`.",
        why="A MinT run needs only the tokenizer on the client. A Hub download at start-up fails "
        "offline, behind firewalls or in mainland China (which needs `HF_ENDPOINT`), and can "
        "silently pick up a newer revision than the one the model was trained with.",
        fix="Download the snapshot once (`huggingface-cli download MODEL --include 'tokenizer*'`) and "
        "load it with `local_files_only=True`, falling back to `training_client.get_tokenizer()`.",
        bad="tokenizer = AutoTokenizer.from_pretrained(args.base_model)",
        good="tokenizer = AutoTokenizer.from_pretrained(args.base_model, local_files_only=True)",
    )
)


def _env_reads(expr: cst.BaseExpression) -> list[tuple[str, cst.BaseExpression]]:
    """(variable, key node) for each environment read that `expr` is, or that the operands of
    `a or b or ...` are."""
    if isinstance(expr, cst.BooleanOperation):
        return _env_reads(expr.left) + _env_reads(expr.right)
    if isinstance(expr, cst.Call):
        name = env_name_of_call(expr)
        key = argument(expr, 0, "key")
        return [(name, key)] if name and key is not None else []
    name = env_name_of_subscript(expr)
    if name is not None:
        return [(name, expr.slice[0].slice.value)]
    return []


def _is_placeholder(secret: str) -> bool:
    body = secret.split("-", 1)[-1].lower()
    return any(word in body for word in PLACEHOLDER_WORDS) or len(set(body.replace("-", ""))) <= 3


class SetupRules(cst.BatchableCSTVisitor):
    """Reports MINT040-MINT044."""

    def __init__(self, ctx: LintContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.mint_imported = False
        self.reported_import = False
        self.line: cst.SimpleStatementLine | None = None
        self.writes: set[int] = set()  # os.environ[...] subscripts that are assigned or deleted
        self.exempt_urls: set[int] = set()  # env-lookup defaults and docstrings
        self.key_values: set[int] = set()  # literals given as api_key= or to MINT_API_KEY
        self.fallbacks: set[int] = set()  # TINKER_ reads that back up a MINT_ read of the same variable

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self.line = node
        if len(node.body) == 1 and isinstance(node.body[0], cst.Expr):
            value = node.body[0].value
            if isinstance(value, (cst.SimpleString, cst.ConcatenatedString)):
                self.exempt_urls.add(id(value))
                if isinstance(value, cst.ConcatenatedString):
                    self.exempt_urls.update(id(p) for p in (value.left, value.right))

    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine) -> None:
        self.line = None

    def visit_SimpleStatementSuite(self, node: cst.SimpleStatementSuite) -> None:
        self.line = None  # `if x: import tinker` has no line of its own to insert before

    # --- MINT040 ------------------------------------------------------------------------

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            top = (dotted(alias.name) or "").split(".")[0]
            if top == "mint":
                self.mint_imported = True
            elif top == "tinker":
                self._tinker_import(node, alias)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None:
            return
        top = (dotted(node.module) or "").split(".")[0]
        if top == "mint":
            self.mint_imported = True
        elif top == "tinker":
            self._tinker_import(node, None)

    def _tinker_import(self, node: cst.CSTNode, alias: cst.ImportAlias | None) -> None:
        if self.mint_imported or self.reported_import:
            return
        self.reported_import = True
        simple = alias is not None and isinstance(alias.name, cst.Name)
        if simple:
            message = "`import tinker` without mint: MinT's key handling and endpoint are not applied."

            def edit(a: cst.CSTNode) -> cst.CSTNode:
                asname = a.asname or cst.AsName(name=cst.Name("tinker"))
                return a.with_changes(name=cst.Name("mint"), asname=asname)

            self.ctx.report("MINT040", node, message, "Use `import mint as tinker`.", edit=edit, edit_node=alias)
        else:
            line = self.line

            def edit(stmt: cst.CSTNode) -> cst.FlattenSentinel:
                bridge = cst.parse_statement("import mint  # noqa: F401  (applies MinT's patches to tinker)\n")
                bridge = bridge.with_changes(leading_lines=stmt.leading_lines)
                return cst.FlattenSentinel([bridge, stmt.with_changes(leading_lines=())])

            self.ctx.report(
                "MINT040",
                node,
                "tinker is imported before mint: MinT's key handling and endpoint are not applied.",
                "Add `import mint` before this line.",
                edit=edit if line is not None else None,
                edit_node=line,
            )
        self.mint_imported = True  # one finding per file: fixing the first import fixes the rest

    # --- MINT041 / MINT042 / MINT043: environment -----------------------------------------

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self.writes.add(id(node.target))

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            name = env_name_of_subscript(target.target)
            if name in KEY_ENV:
                self.key_values.add(id(node.value))
            if name in URL_ENV:
                self._url_literal(node.value)

    def visit_Del(self, node: cst.Del) -> None:
        self.writes.add(id(node.target))

    def visit_Subscript(self, node: cst.Subscript) -> None:
        name = env_name_of_subscript(node)
        if name in TINKER_TO_MINT_ENV:
            key = node.slice[0].slice.value
            self._env_name(key, name, read=id(node) not in self.writes)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        # "TINKER_API_KEY" in os.environ
        for target in node.comparisons:
            if isinstance(target.operator, (cst.In, cst.NotIn)) and dotted(target.comparator) in ("os.environ", "environ"):
                name = string_value(node.left)
                if name in TINKER_TO_MINT_ENV:
                    self._env_name(node.left, name, read=True)

    def visit_Call(self, node: cst.Call) -> None:
        env = env_name_of_call(node)
        if env is not None:
            default = argument(node, 1, "default")
            setdefault = (dotted(node.func) or "").endswith("setdefault")
            if default is not None and not setdefault:
                self.exempt_urls.add(id(default))
            if env in TINKER_TO_MINT_ENV.values() and default is not None:
                self.fallbacks.update(id(key) for name, key in _env_reads(default) if TINKER_TO_MINT_ENV.get(name) == env)
            if env in TINKER_TO_MINT_ENV:
                self._env_name(argument(node, 0, "key"), env, read=not setdefault)
            if setdefault and default is not None:
                if env in KEY_ENV:
                    self.key_values.add(id(default))
                if env in URL_ENV:
                    self._url_literal(default)
        api_key = keyword(node, "api_key")
        if api_key is not None:
            self.key_values.add(id(api_key.value))
        base_url = keyword(node, "base_url")
        if base_url is not None and self.ctx.sdk_symbol(node.func, "ServiceClient"):
            self._url_literal(base_url.value)
        self._tokenizer(node)

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        # `os.environ.get("MINT_BASE_URL") or os.environ["TINKER_BASE_URL"]`: the TINKER_ name is
        # an explicit fallback (what `import mint` defaulted), not a MINT_ name written wrong.
        reads = _env_reads(node)
        names = {name for name, _ in reads}
        for name, key in reads:
            if name in TINKER_TO_MINT_ENV and TINKER_TO_MINT_ENV[name] in names:
                self.fallbacks.add(id(key))

    def _env_name(self, key: cst.BaseExpression | None, name: str, read: bool) -> None:
        if key is None or id(key) in self.fallbacks or not self.ctx.uses_sdk:
            return
        new = TINKER_TO_MINT_ENV[name]
        fixable = read and isinstance(key, cst.SimpleString)
        self.ctx.report(
            "MINT041",
            key,
            f"`{name}` is tinker's variable; MinT's is `{new}`"
            + ("" if read else " (this write is not renamed automatically: after `import mint` tinker reads "
               f"{name}, so set {new} before the import instead)") + ".",
            f"Use `{new}`.",
            edit=(lambda s: s.with_changes(value=s.value.replace(name, new, 1))) if fixable else None,
        )

    def _url_literal(self, value: cst.BaseExpression) -> None:
        text = string_value(value)
        if text is not None and self.ctx.uses_sdk and URL_RE.match(text.strip()):
            self.ctx.report(
                "MINT042",
                value,
                f"Endpoint `{text.strip()}` is hard-coded.",
                "Read it from MINT_BASE_URL: `base_url=os.environ.get(\"MINT_BASE_URL\")`.",
            )

    # --- strings and comments: endpoints and keys ---------------------------------------

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        text = string_value(node)
        if text is None:
            return
        self._strings(node, text)

    def visit_FormattedStringText(self, node: cst.FormattedStringText) -> None:
        self._strings(node, node.value)

    def visit_Comment(self, node: cst.Comment) -> None:
        self._keys(node, node.value)

    def _strings(self, node: cst.CSTNode, text: str) -> None:
        if id(node) not in self.exempt_urls and self.ctx.uses_sdk:
            match = ENDPOINT_RE.search(text)
            if match:
                self.ctx.report(
                    "MINT042",
                    node,
                    f"Endpoint `{match.group(0)}` is hard-coded.",
                    "Read it from MINT_BASE_URL: `base_url=os.environ.get(\"MINT_BASE_URL\")`.",
                )
        if not self._keys(node, text) and id(node) in self.key_values:
            secret = text.strip()
            if len(secret) >= 8 and not _is_placeholder(secret) and " " not in secret:
                self._key_finding(node, secret)

    def _keys(self, node: cst.CSTNode, text: str) -> bool:
        for match in KEY_RE.finditer(text):
            if not _is_placeholder(match.group(0)):
                self._key_finding(node, match.group(0))
                return True
        return False

    def _key_finding(self, node: cst.CSTNode, secret: str) -> None:
        self.ctx.report(
            "MINT043",
            node,
            f"API key literal `{mask_secret(secret)}` in source.",
            "Delete it, rotate the key, and read MINT_API_KEY from the environment.",
        )

    # --- MINT044 ------------------------------------------------------------------------

    def _tokenizer(self, node: cst.Call) -> None:
        if not isinstance(node.func, cst.Attribute) or node.func.attr.value != "from_pretrained":
            return
        owner = node.func.value
        owner_name = owner.attr.value if isinstance(owner, cst.Attribute) else getattr(owner, "value", "")
        if not isinstance(owner_name, str) or "Tokenizer" not in owner_name:
            return
        if self.ctx.hub_offline or has_star_kwargs(node) or not self.ctx.uses_sdk:
            return
        flag = keyword(node, "local_files_only")
        if flag is not None and not (isinstance(flag.value, cst.Name) and flag.value.value == "False"):
            return
        source = string_value(argument(node, 0, "pretrained_model_name_or_path"))
        if source is not None and source.startswith(LOCAL_PATH_PREFIXES):
            return
        self.ctx.report(
            "MINT044",
            node,
            "The tokenizer is fetched from the Hugging Face Hub at start-up; offline or firewalled runs "
            "fail here, and a newer revision can slip in.",
            "Pass `local_files_only=True` (download the snapshot once), falling back to "
            "`training_client.get_tokenizer()`.",
        )


def visitor(ctx: LintContext) -> SetupRules:
    return SetupRules(ctx)
