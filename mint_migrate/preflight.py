"""Preflight: is this machine, SDK, endpoint and script ready for a MinT run?

It knows the target. `remote` (the default) is a run on MinT: credentials, the endpoint, the
served models and the tokenizer matter. `local` is a smoke run on mint-local, which needs no key
and no endpoint (the smoke run starts the backend and sets both) but does need the backend's
packages; only the checks that apply run, so a missing MINT_API_KEY never fails a local preflight.

Each check is ok / warn / fail with a message and a fix. Nothing here imports the SDK (importing
mint patches tinker and rewrites environment variables in this process, and takes seconds): the
installed packages are read from their metadata and source files. The endpoint is asked over
plain HTTP with short timeouts, so an offline machine or a closed port fails in seconds. The API
key is never shown: only its prefix and last four characters.
"""

import ast
import importlib.metadata
import importlib.util
import os
import sys
import time
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

import httpx
from pydantic import BaseModel, Field

from mint_migrate import sdk_facts, userfiles
from mint_migrate.dotenv import setting
from mint_migrate.endpoint import Endpoint, display_url, is_loopback
from mint_migrate.errors import MintMigrateError
from mint_migrate.lint.context import mask_secret
from mint_migrate.pyindex import PyIndex, string_value
from mint_migrate.pyparse import PythonSyntaxError, parse_ast
from mint_migrate.render import COMPANION, imports_companion, with_companion
from mint_migrate.workspace import read_text_checked

MINT_DEFAULT_BASE_URL = sdk_facts.MINT_DEFAULT_BASE_URL  # what mindlab-toolkit 0.2.0 falls back to
PINNED_TINKER = sdk_facts.TINKER_VERSION
PINNED_TOOLKIT = sdk_facts.MINDLAB_TOOLKIT_VERSION
MAX_COOKBOOK = tuple(int(part) for part in sdk_facts.TINKER_COOKBOOK_MAX_VERSION.split("."))
HTTP_TIMEOUT = httpx.Timeout(3.0, connect=2.0)
# Used only when the endpoint cannot be asked; get_server_capabilities is the authority.
DOCUMENTED_MODELS = sdk_facts.MINT_DOCUMENTED_MODELS
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model")
BASE_MODEL_DESTS = ("base_model", "model_name", "model", "model_name_or_path", "base_model_name")
AUTH_FIX = (
    "Install the fixed toolkit from source (pip install 'git+https://github.com/MindLab-Research/mindlab-toolkit'; "
    "its _auth.py patches all three tinker call sites), or, after `import mint` and before creating the "
    "client, also replace the provider the holder builds directly: "
    "`import tinker._client, tinker.lib.internal_client_holder as ich; "
    "from mint.mint import MintApiKeyAuthProvider; "
    "ich.ApiKeyAuthProvider = tinker._client.ApiKeyAuthProvider = "
    "lambda api_key=None: MintApiKeyAuthProvider(api_key or os.environ['TINKER_API_KEY'])`."
)


class PreflightCheck(BaseModel):
    name: str
    status: Literal["ok", "warn", "fail"]
    message: str
    fix: str | None = None


Target = Literal["local", "remote"]
# The `local` extra's packages, by import name: what mint-local needs to start.
MINT_LOCAL_MODULES = ("torch", "transformers", "safetensors", "tokenizers", "uvicorn", "starlette")


class PreflightReport(BaseModel):
    ok: bool
    target: Target = Field(default="remote", description="local: a smoke run on mint-local; remote: a run on MinT.")
    checks: list[PreflightCheck] = Field(default_factory=list)
    base_url: str | None = Field(default=None, description="The endpoint that was checked (MINT_BASE_URL).")
    base_model: str | None = Field(default=None, description="The script's base model, when a script was given.")
    supported_models: list[str] | None = Field(default=None, description="What the endpoint said it serves.")


def run_preflight(script_path: Path | None = None, *, target: Target = "remote") -> PreflightReport:
    """Run the checks that apply to `target`; `script_path` adds the script's checks (base model,
    tokenizer and lint for remote; lint for local)."""
    if script_path is not None:
        script_path = Path(script_path)
        userfiles.require_regular(script_path, "give the train.py inside it")  # a folder is not "No such file"
    if target == "local":
        return _local(script_path)
    checks: list[PreflightCheck] = [_python(), _toolkit(), _tinker(), _cookbook()]
    base_url, url_check = _base_url(script_path)
    key, key_check = _api_key(script_path)
    checks += [url_check, key_check]

    endpoint = _Endpoint(base_url, key) if base_url and url_check.status != "fail" else None
    health = endpoint.health() if endpoint else _not_checked("endpoint-health", base_url)
    capabilities: list[str] | None = None
    if endpoint and health.status == "ok":
        caps_check, capabilities = endpoint.capabilities()
    else:
        caps_check = _not_checked("endpoint-capabilities", base_url, health_failed=endpoint is not None)
    checks += [health, caps_check]
    checks.insert(3, _sk_key_bug(key, endpoint if health.status == "ok" else None, _passes_sk_keys(script_path)))

    model: str | None = None
    if script_path is not None:
        found = script_base_model(script_path)
        model = found[0] if found else None
        checks.append(_base_model_check(script_path, found, capabilities, base_url))
        checks.append(_tokenizer_check(model, capabilities, base_url))
        checks += _script_checks(script_path)
    return PreflightReport(
        ok=all(c.status != "fail" for c in checks),
        target="remote",
        checks=checks,
        base_url=display_url(base_url) if base_url else None,
        base_model=model,
        supported_models=capabilities,
    )


def _local(script_path: Path | None) -> PreflightReport:
    """A smoke run on mint-local: the SDK and the backend's packages; no key, no endpoint."""
    sk_bug = PreflightCheck(
        name="sk-key-bug", status="ok",
        message="Does not apply to mint-local, which enables JWT auth (where mint's patch accepts sk- keys). "
        "Run preflight --target remote before a run on MinT.",
    )
    checks = [_python(), _toolkit(), _tinker(), sk_bug, _cookbook(), _mint_local()]
    if script_path is not None:
        checks += _script_checks(script_path)
    return PreflightReport(ok=all(c.status != "fail" for c in checks), target="local", checks=checks)


def _mint_local() -> PreflightCheck:
    missing = [m for m in MINT_LOCAL_MODULES if importlib.util.find_spec(m) is None]  # found, not imported
    if missing:
        return PreflightCheck(
            name="mint-local", status="fail",
            message=f"mint-local cannot start: {', '.join(missing)} not installed (the smoke run needs them; "
            "MINT_BASE_URL and MINT_API_KEY do not matter for target=local).",
            fix="pip install torch==2.13.0 && pip install 'mint-migrate[local,sdk]'  (torch first and pinned: an "
            "open range pulls a multi-GB CUDA build)",
        )
    return PreflightCheck(
        name="mint-local", status="ok",
        message="mint-local's packages are installed; the smoke run starts it on a loopback port and sets "
        "MINT_BASE_URL / MINT_API_KEY itself, so neither is needed.",
    )


# --- Python and packages ------------------------------------------------------------------


def _python() -> PreflightCheck:
    version = ".".join(map(str, sys.version_info[:3]))
    if sys.version_info >= (3, 11):  # noqa: UP036 - run from a checkout, any Python may get here
        return PreflightCheck(name="python", status="ok", message=f"Python {version}")
    return PreflightCheck(
        name="python",
        status="fail",
        message=f"Python {version}; mindlab-toolkit needs 3.11 or newer.",
        fix="Create the environment with Python 3.11+ (e.g. `uv venv -p 3.11`).",
    )


def _installed(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _toolkit() -> PreflightCheck:
    version = _installed("mindlab-toolkit")
    if version is None:
        return PreflightCheck(
            name="mindlab-toolkit",
            status="fail",
            message="mindlab-toolkit is not installed (`import mint` will fail).",
            fix=f"pip install mindlab-toolkit=={PINNED_TOOLKIT}",
        )
    if version != PINNED_TOOLKIT:
        return PreflightCheck(
            name="mindlab-toolkit",
            status="warn",
            message=f"mindlab-toolkit {version} installed; these checks and mint-migrate's rules are written for {PINNED_TOOLKIT}.",
            fix=f"pip install mindlab-toolkit=={PINNED_TOOLKIT} unless you need {version}.",
        )
    return PreflightCheck(name="mindlab-toolkit", status="ok", message=f"mindlab-toolkit {version}")


def _tinker() -> PreflightCheck:
    version = _installed("tinker")
    if version is None:
        return PreflightCheck(
            name="tinker",
            status="fail",
            message=f"tinker is not installed; mindlab-toolkit {PINNED_TOOLKIT} needs tinker=={PINNED_TINKER}.",
            fix=f"pip install tinker=={PINNED_TINKER}",
        )
    if version != PINNED_TINKER:
        return PreflightCheck(
            name="tinker",
            status="fail",
            message=f"tinker {version} installed; mindlab-toolkit {PINNED_TOOLKIT} is pinned to tinker=={PINNED_TINKER} "
            "and the call shapes differ (futures, client factories, losses).",
            fix=f"pip install tinker=={PINNED_TINKER}",
        )
    return PreflightCheck(name="tinker", status="ok", message=f"tinker {version} (the version MinT pins)")


def _version_tuple(version: str) -> tuple[int, ...]:
    parts = []
    for piece in version.split("."):
        digits = "".join(ch for ch in piece if ch.isdigit()) if piece[:1].isdigit() else ""
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def _cookbook() -> PreflightCheck:
    version = _installed("tinker-cookbook")
    if version is None:
        return PreflightCheck(name="tinker-cookbook", status="ok", message="tinker-cookbook not installed (optional).")
    if _version_tuple(version) <= MAX_COOKBOOK:
        return PreflightCheck(name="tinker-cookbook", status="ok", message=f"tinker-cookbook {version} (<= {sdk_facts.TINKER_COOKBOOK_MAX_VERSION}, works with tinker {PINNED_TINKER})")
    return PreflightCheck(
        name="tinker-cookbook",
        status="fail",
        message=f"tinker-cookbook {version} installed; only <= {sdk_facts.TINKER_COOKBOOK_MAX_VERSION} works with "
        f"tinker {PINNED_TINKER} (later releases need tinker >= 0.22.3 and use the 0.38 API).",
        fix=f"pip install tinker-cookbook=={sdk_facts.TINKER_COOKBOOK_MAX_VERSION}  (or uninstall it if the script "
        "does not use it)",
    )


# --- the sk- key bug in the installed wheel -----------------------------------------------


def _package_dir(name: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(name)  # a top-level package: found, not imported
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _parse_py(path: Path) -> ast.Module | None:
    try:
        return parse_ast(userfiles.read_text(path), str(path))
    except (OSError, PythonSyntaxError, UnicodeDecodeError):
        return None


def toolkit_replaces_api_key_provider(mint_dir: Path) -> Path | None:
    """The installed mint file that replaces tinker's ApiKeyAuthProvider (as the GitHub source
    does), or None when the auth patch covers only resolve_auth_provider (the PyPI 0.2.0 wheel)."""
    for path in sorted(mint_dir.rglob("*.py")):
        tree = _parse_py(path)
        if tree is None:
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Attribute) and t.attr == "ApiKeyAuthProvider" for t in targets):
                    return path
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "setattr" and len(node.args) >= 2:
                name = node.args[1]
                if isinstance(name, ast.Constant) and name.value == "ApiKeyAuthProvider":
                    return path
    return None


def holder_builds_api_key_provider(tinker_dir: Path) -> bool:
    """Whether tinker's InternalClientHolder constructs ApiKeyAuthProvider(...) itself."""
    tree = _parse_py(tinker_dir / "lib" / "internal_client_holder.py")
    if tree is None:
        return False
    return any(
        isinstance(node, ast.Call) and getattr(node.func, "id", None) == "ApiKeyAuthProvider" for node in ast.walk(tree)
    )


def _passes_sk_keys(script_path: Path | None) -> bool:
    """The script (or the mint_run.py beside it) applies the sk- key workaround itself before its first
    request, as every train.py mint-migrate generates does (mint_run.accept_sk_key)."""
    if script_path is None:
        return False
    try:
        return "accept_sk_key(" in with_companion(script_path)
    except (OSError, MintMigrateError):
        return False


def _sk_key_bug(key: str | None, endpoint: "_Endpoint | None", script_handles: bool = False) -> PreflightCheck:
    name = "sk-key-bug"
    mint_dir, tinker_dir = _package_dir("mint"), _package_dir("tinker")
    if mint_dir is None or tinker_dir is None:
        return PreflightCheck(
            name=name, status="warn", message="Not checked: mindlab-toolkit / tinker are not installed.",
            fix=f"pip install mindlab-toolkit=={PINNED_TOOLKIT}",
        )
    patched = toolkit_replaces_api_key_provider(mint_dir)
    if patched is not None:
        return PreflightCheck(
            name=name, status="ok",
            message=f"The installed mindlab-toolkit replaces tinker's ApiKeyAuthProvider ({patched.name}); sk- keys work.",
        )
    if not holder_builds_api_key_provider(tinker_dir):
        return PreflightCheck(
            name=name, status="ok",
            message="The installed tinker does not build ApiKeyAuthProvider directly; mint's resolve_auth_provider patch covers sk- keys.",
        )
    bug = (
        "The installed mindlab-toolkit patches only resolve_auth_provider; tinker's InternalClientHolder builds "
        "ApiKeyAuthProvider directly when the server does not enable JWT auth, and that rejects sk- keys "
        "(\"The api_key must start with the 'tml-' prefix\")."
    )
    if key is not None and not key.startswith("sk-"):
        return PreflightCheck(name=name, status="ok", message=bug + " MINT_API_KEY is not an sk- key, so it does not apply.")
    if script_handles:
        return PreflightCheck(name=name, status="ok", message=bug + " The script passes an sk- key to every place tinker "
                              "checks it before its first request (mint_run.accept_sk_key), so it does not apply to it.")
    if endpoint is None:
        return PreflightCheck(
            name=name, status="warn",
            message=bug + " Whether it bites depends on the endpoint, which could not be asked.",
            fix=AUTH_FIX,
        )
    jwt = endpoint.jwt_auth_enabled()
    if jwt is True:
        return PreflightCheck(
            name=name, status="ok",
            message=bug + f" {endpoint.shown} enables JWT auth, where the patched path handles sk- keys, so it does "
            "not apply here (it will on an endpoint without JWT auth).",
            fix=AUTH_FIX,
        )
    if jwt is False:
        return PreflightCheck(
            name=name, status="fail",
            message=bug + f" {endpoint.shown} does not enable JWT auth, so mint.ServiceClient() will raise.",
            fix=AUTH_FIX,
        )
    return PreflightCheck(
        name=name, status="warn",
        message=bug + f" {endpoint.shown} did not answer /api/v1/client/config, so it is unknown whether it applies.",
        fix=AUTH_FIX,
    )


# --- environment --------------------------------------------------------------------------


def _from(where: str | None) -> str:
    """Where a setting came from, when that was a .env file (the script reads it too)."""
    return f" (from {where})" if where and where != "environment" else ""


def _base_url(script: Path | None = None) -> tuple[str | None, PreflightCheck]:
    name = "MINT_BASE_URL"
    value, where = setting("MINT_BASE_URL", script)
    value = (value or "").strip()
    if not value:
        hint = " (TINKER_BASE_URL is set, but import mint overwrites it with its default)" if os.environ.get(
            "TINKER_BASE_URL"
        ) else ""
        return None, PreflightCheck(
            name=name, status="warn",
            message=f"MINT_BASE_URL is not set{hint}; mint would fall back to {MINT_DEFAULT_BASE_URL}, and MinT's "
            "endpoints differ by source and region.",
            fix="export MINT_BASE_URL=<the endpoint you were given>  (for an offline run: mint-local serve)",
        )
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None, PreflightCheck(
            name=name, status="fail",
            message=f"MINT_BASE_URL={display_url(value)!r} is not an http(s) URL.",
            fix="export MINT_BASE_URL=https://HOST[:PORT]  (the service root, without /api/v1)",
        )
    if parts.path.rstrip("/").endswith("/api/v1"):
        return value, PreflightCheck(
            name=name, status="warn",
            message=f"MINT_BASE_URL={display_url(value)} ends in /api/v1; the SDK appends /api/v1 itself.",
            fix=f"export MINT_BASE_URL={display_url(value).rstrip('/')[: -len('/api/v1')]}",
        )
    return value, PreflightCheck(name=name, status="ok", message=f"MINT_BASE_URL={display_url(value)}{_from(where)}")


def _api_key(script: Path | None = None) -> tuple[str | None, PreflightCheck]:
    name = "MINT_API_KEY"
    key, where = setting("MINT_API_KEY", script)
    if key is None or not key.strip():
        hint = " (TINKER_API_KEY is set, but MinT reads MINT_API_KEY)" if os.environ.get("TINKER_API_KEY") else ""
        return None, PreflightCheck(
            name=name, status="fail",
            message=f"MINT_API_KEY is not set{hint}.",
            fix="export MINT_API_KEY=sk-...  (keys are issued by the Mind Lab team: https://macaron.im/mindlab); "
            "for an offline run against mint-local any sk- value works.",
        )
    key = key.strip()
    shown = mask_secret(key)
    if key.startswith("sk-"):
        return key, PreflightCheck(name=name, status="ok", message=f"MINT_API_KEY is set ({shown}){_from(where)}.")
    if key.startswith("tml-"):
        return key, PreflightCheck(
            name=name, status="warn",
            message=f"MINT_API_KEY ({shown}) looks like a Tinker key; MinT issues sk- keys.",
            fix="Use the sk- key you were given for MinT.",
        )
    return key, PreflightCheck(
        name=name, status="fail",
        message=f"MINT_API_KEY ({shown}) does not start with sk-; MinT keys do, and tinker rejects other prefixes.",
        fix="export MINT_API_KEY=sk-...  (copy the whole key)",
    )


# --- endpoint -----------------------------------------------------------------------------


def _not_checked(name: str, base_url: str | None, health_failed: bool = False) -> PreflightCheck:
    if health_failed:
        return PreflightCheck(name=name, status="warn", message="Not asked: the endpoint did not answer healthz.")
    return PreflightCheck(
        name=name, status="warn",
        message="Not checked: MINT_BASE_URL is not set." if base_url is None else "Not checked.",
        fix="export MINT_BASE_URL=... and run preflight again.",
    )


class _Endpoint(Endpoint):
    """The endpoint checks of preflight, over the shared Endpoint (bounded timeouts, no key shown)."""

    def __init__(self, base_url: str, key: str | None) -> None:
        super().__init__(base_url, key, timeout=HTTP_TIMEOUT)

    def health(self) -> PreflightCheck:
        name = "endpoint-health"
        problem = self.resolves()
        if problem:
            return PreflightCheck(name=name, status="fail", message=f"{self.shown}: {problem}.",
                                  fix="Check MINT_BASE_URL and the network (VPN, proxy); offline, use mint-local serve.")
        started = time.perf_counter()
        try:
            response = self.request("GET", "/api/v1/healthz")
        except httpx.HTTPError as exc:
            return PreflightCheck(name=name, status="fail", message=f"{self.shown}: {self.unreachable(exc)}.",
                                  fix="Start the server or fix MINT_BASE_URL (for an offline run: mint-local serve).")
        ms = (time.perf_counter() - started) * 1000
        if response.status_code == 200:
            return PreflightCheck(name=name, status="ok", message=f"{self.shown}/api/v1/healthz answered in {ms:.0f} ms.")
        return PreflightCheck(
            name=name, status="fail",
            message=f"{self.shown}/api/v1/healthz answered HTTP {response.status_code}.",
            fix="MINT_BASE_URL must be the service root that serves /api/v1/... (check the address you were given).",
        )

    def capabilities(self) -> tuple[PreflightCheck, list[str] | None]:
        name = "endpoint-capabilities"
        try:
            response = self.request("GET", "/api/v1/get_server_capabilities")
        except httpx.HTTPError as exc:
            return PreflightCheck(name=name, status="fail", message=f"{self.shown}: {self.unreachable(exc)}."), None
        if response.status_code in (401, 403):
            return PreflightCheck(
                name=name, status="fail",
                message=f"{self.shown} rejected MINT_API_KEY (HTTP {response.status_code}).",
                fix="Check MINT_API_KEY: the whole sk- key, for this endpoint.",
            ), None
        if response.status_code != 200:
            return PreflightCheck(
                name=name, status="fail",
                message=f"{self.shown}/api/v1/get_server_capabilities answered HTTP {response.status_code}.",
                fix="Check MINT_BASE_URL.",
            ), None
        try:
            models = [m.get("model_name") for m in response.json().get("supported_models", [])]
        except (ValueError, AttributeError, TypeError):
            return PreflightCheck(name=name, status="fail",
                                  message=f"{self.shown} answered get_server_capabilities with something that is not "
                                  "the expected JSON.", fix="Check MINT_BASE_URL."), None
        models = [m for m in models if isinstance(m, str)]
        shown = ", ".join(models[:8]) + (f" and {len(models) - 8} more" if len(models) > 8 else "")
        return PreflightCheck(name=name, status="ok",
                              message=f"{self.shown} serves {len(models)} model(s): {shown or 'none listed'}."), models

    def jwt_auth_enabled(self) -> bool | None:
        """What /api/v1/client/config says about JWT auth (the SDK's default is False)."""
        answer = self.probe()
        return None if answer.problem else bool(answer.config.get("pjwt_auth_enabled", False))


# --- the script ---------------------------------------------------------------------------


def script_base_model(path: Path) -> tuple[str, int] | None:
    """(base model, line) the script trains by default, read from the shared Python index: an
    argparse `--base-model`/`--model` default, a config-class field, a `base_model=` keyword literal
    or a module constant named BASE_MODEL / MODEL_NAME. None when the script does not say."""
    try:
        index = PyIndex.of(read_text_checked(path), str(path))
    except (OSError, UnicodeDecodeError, PythonSyntaxError):
        return None
    for dest in BASE_MODEL_DESTS:
        for table in (index.argparse_defaults(), index.field_defaults()):
            node = table.get(dest)
            value = string_value(node) if node is not None else None
            if value:
                return value, index.line(node)
    found: list[tuple[str, int]] = []
    for call in index.calls:
        value = string_value(call.kwarg_node("base_model"))
        if value:
            found.append((value, index.line(call.kwarg_node("base_model"))))
    for assignment in (a for n in ("BASE_MODEL", "MODEL_NAME", "DEFAULT_BASE_MODEL") for a in index.assigns.get(n, [])):
        if len(assignment.targets) != 1:
            continue
        value = string_value(assignment.value)
        if value:
            found.append((value, index.line(assignment.value)))
    return min(found, key=lambda f: f[1]) if found else None


def _base_model_check(script: Path, found: tuple[str, int] | None, served: list[str] | None, base_url: str | None) -> PreflightCheck:
    name = "base-model"
    if found is None:
        return PreflightCheck(
            name=name, status="warn",
            message=f"{script.name} does not name its base model (no --base-model default, base_model= literal or BASE_MODEL).",
            fix=f"Give the script a default: parser.add_argument('--base-model', default='{sdk_facts.DEFAULT_BASE_MODEL}').",
        )
    model, line = found
    where = f"{script.name}:{line}"
    if served is not None:
        if model in served:
            return PreflightCheck(name=name, status="ok", message=f"{model} ({where}) is served by {display_url(base_url or '')}.")
        return PreflightCheck(
            name=name, status="fail",
            message=f"{model} ({where}) is not among the models {display_url(base_url or '')} serves: {', '.join(served) or 'none'}.",
            fix="Pass --base-model with one of the served models.",
        )
    if model in DOCUMENTED_MODELS:
        return PreflightCheck(
            name=name, status="ok",
            message=f"{model} ({where}) is in MinT's documented model list (the endpoint was not asked).",
        )
    return PreflightCheck(
        name=name, status="warn",
        message=f"{model} ({where}) is not in MinT's documented model list ({', '.join(DOCUMENTED_MODELS)}); "
        "the endpoint was not asked, and it is the authority.",
        fix="Set MINT_BASE_URL / MINT_API_KEY and run preflight again, or pick a documented model.",
    )


def _hf_hub_cache() -> Path:
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HUGGINGFACE_HUB_CACHE"):
        return Path(os.environ["HUGGINGFACE_HUB_CACHE"]).expanduser()
    home = Path(os.environ["HF_HOME"]).expanduser() if os.environ.get("HF_HOME") else Path.home() / ".cache" / "huggingface"
    return home / "hub"


def cached_tokenizer_dir(model: str) -> Path | None:
    """The local folder a `from_pretrained(model, local_files_only=True)` would load the tokenizer
    from: the path itself when it is a directory, else a snapshot in the HF hub cache."""
    direct = Path(model).expanduser()
    if direct.is_dir() and any((direct / f).is_file() for f in TOKENIZER_FILES):
        return direct
    if "/" not in model or model.startswith(("/", ".", "~")):
        return None
    snapshots = _hf_hub_cache() / f"models--{model.replace('/', '--')}" / "snapshots"
    if not snapshots.is_dir():
        return None
    for snapshot in sorted(snapshots.iterdir(), key=lambda p: p.stat().st_mtime, reverse=True):
        if any((snapshot / f).is_file() for f in TOKENIZER_FILES):
            return snapshot
    return None


def _tokenizer_check(model: str | None, served: list[str] | None, base_url: str | None) -> PreflightCheck:
    name = "tokenizer"
    if model is None:
        return PreflightCheck(name=name, status="warn", message="Not checked: the script's base model is unknown.")
    local = cached_tokenizer_dir(model)
    if local is not None:
        return PreflightCheck(name=name, status="ok", message=f"Tokenizer for {model} found locally: {local}")
    if served is not None and model in served and is_loopback(base_url):
        return PreflightCheck(
            name=name, status="ok",
            message=f"{model} is served by a backend on this machine ({display_url(base_url or '')}), which holds its "
            "files; training_client.get_tokenizer() loads it without the Hub.",
        )
    return PreflightCheck(
        name=name, status="warn",
        message=f"No tokenizer snapshot for {model} in the local Hugging Face cache ({_hf_hub_cache()}); "
        "loading it needs the Hub at start-up.",
        fix=f"huggingface-cli download {model} --include 'tokenizer*'  (in mainland China set HF_ENDPOINT first)",
    )


def _script_checks(script: Path) -> list[PreflightCheck]:
    """The script's lint, and for a mint-migrate train.py the mint_run.py it imports: there, and linted too."""
    try:
        source = read_text_checked(script)  # through the MCP read fence when one is active
    except (OSError, UnicodeDecodeError):
        source = None
    if source is not None and not source.strip():
        return [PreflightCheck(
            name="lint", status="fail", message=f"{script.name} is empty: there is no training script to run.",
            fix=f"Write the script, or generate one: mint-migrate scaffold sft --out {script}",
        )]
    if not imports_companion(source or ""):
        return [_lint_check(script)]
    companion = script.parent / COMPANION
    if not companion.is_file():
        return [_lint_check(script), PreflightCheck(
            name="companion", status="fail",
            message=f"{script.name} imports {COMPANION}, which is not beside it ({companion}): the script stops at "
            "start-up. mint-migrate writes the two together (the plumbing every kind shares lives in it).",
            fix=f"Copy {COMPANION} from the folder mint-migrate wrote {script.name} to, or write a fresh one with "
            f"`mint-migrate scaffold KIND --out NEW_DIR/train.py` and copy its {COMPANION} beside {script.name}.",
        )]
    return [_lint_check(script), PreflightCheck(
        name="companion", status="ok", message=f"{COMPANION} is beside {script.name} (linted below).",
    ), _lint_check(companion, name="lint-companion")]


def _lint_check(script: Path, name: str = "lint") -> PreflightCheck:
    from mint_migrate.lint import lint_path

    report = lint_path(script)
    if report.parse_error:
        return PreflightCheck(name=name, status="fail", message=f"{script.name} does not parse: {report.parse_error}.",
                              fix="Fix the syntax error, then run mint-migrate lint.")
    if not report.findings:
        return PreflightCheck(name=name, status="ok", message=f"{script.name}: no MinT pitfalls found.")
    first = ", ".join(f"{f.id} line {f.line}" for f in report.findings[:5])
    more = f" and {len(report.findings) - 5} more" if len(report.findings) > 5 else ""
    return PreflightCheck(
        name=name,
        status="fail" if report.errors else "warn",
        message=f"{script.name}: {report.errors} error(s), {report.warnings} warning(s): {first}{more}.",
        fix=f"mint-migrate lint {script}  (add --fix for the safe fixes)",
    )
