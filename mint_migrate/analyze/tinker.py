"""Tinker SDK / tinker-cookbook code: settings from the calls and chz configs, plus the fixes that
code written for tinker 0.38 (the latest docs and cookbook) needs to run on tinker 0.22 (MinT).

The Tinker API is MinT's API (`import mint as tinker` is the bridge), so the loop itself carries
over; what changes is the handful of 0.38-only call shapes, each reported with its file:line.
"""

import re

import libcst as cst

from mint_migrate.analyze.evidence import Evidence, Level, Value
from mint_migrate.analyze.inputs import Project
from mint_migrate.analyze.pycommon import called_reward, dataset_calls, dataset_id, unread_field
from mint_migrate.analyze.pyvalues import CallSite, PySource
from mint_migrate.analyze.registry import Analyzer
from mint_migrate.analyze.scalars import as_int
from mint_migrate.analyze.task import read_code_task
from mint_migrate.plan import Algorithm
from mint_migrate.pyindex import dotted_name, iter_nodes

LOSSES: dict[str, Algorithm] = {"cross_entropy": "sft", "importance_sampling": "grpo", "ppo": "grpo", "cispo": "grpo",
                                "dro": "grpo", "gspo": "grpo", "stable_reinforce": "grpo"}
ONLY_038_LOSSES = {"gspo", "stable_reinforce", "custom"}
# Keywords by which a dataset builder receives the file it reads.
_DATA_FILE_KEYWORDS = ("file_path", "data_path", "dataset_path", "data_file", "train_file", "path")
# chz / dataclass config fields (cookbook naming) -> Settings keys
FIELDS = {
    "model_name": "base_model", "base_model": "base_model", "model": "base_model",
    "learning_rate": "learning_rate", "lr": "learning_rate",
    "lora_rank": "lora.rank", "rank": "lora.rank",
    "group_size": "num_generations", "num_samples": "num_generations",
    "batch_size": "global_batch_size", "groups_per_batch": "global_batch_size",
    "max_tokens": "max_response_length", "max_length": "max_seq_length",
    "num_epochs": "num_epochs", "max_steps": "max_steps",
    "temperature": "temperature", "kl_penalty_coef": "kl_coef", "dpo_beta": "beta", "beta": "beta",
    "dataset": "dataset", "dataset_name": "dataset", "hf_dataset": "dataset", "env": "dataset",
}
_COOKBOOK_MODULES: dict[str, Algorithm] = {
    "tinker_cookbook.supervised": "sft", "tinker_cookbook.rl": "grpo", "tinker_cookbook.preference": "dpo",
    "tinker_cookbook.distillation": "distillation",
}
_CREATE = {"create_lora_training_client", "create_sampling_client", "create_training_client_from_state",
           "create_training_client_from_state_with_optimizer", "save_weights_and_get_sampling_client",
           "get_server_capabilities", "create_rest_client"}
_REST_METHODS = {"list_training_runs", "get_training_run", "get_training_run_by_tinker_path", "list_checkpoints",
                 "get_checkpoint_archive_url", "get_checkpoint_archive_url_from_tinker_path", "delete_checkpoint",
                 "delete_checkpoint_from_tinker_path", "publish_checkpoint_from_tinker_path",
                 "unpublish_checkpoint_from_tinker_path", "set_checkpoint_ttl_from_tinker_path",
                 "list_user_checkpoints", "get_session", "list_sessions"}
_SAMPLE_038_KWARGS = {"topk_sample_logprobs", "target_prompt_logprobs", "prompt_alt_tokens_k", "prompt_logprobs_last_n"}
_SERVICE_038_KWARGS = {"display_name", "default_headers_overrides"}


def defaults(algorithm: Algorithm) -> dict[str, tuple[object, str]]:
    if algorithm == "sft":
        return {"learning_rate": (1e-4, "supervised.train.Config.learning_rate"),
                "num_epochs": (1, "supervised.train.Config.num_epochs")}
    if algorithm == "dpo":
        return {"learning_rate": (1e-5, "train_dpo.Config.learning_rate"), "beta": (0.1, "train_dpo.Config.dpo_beta")}
    if algorithm in {"grpo", "ppo", "reinforce"}:
        return {"temperature": (1.0, "rl.train.Config.temperature"), "kl_coef": (0.0, "rl.train.Config.kl_penalty_coef")}
    return {}


def optimizer_defaults(algorithm: Algorithm) -> dict[str, tuple[float, str]]:
    """types.AdamParams' own defaults: what a Tinker script trains with when it passes only the rate."""
    return {"beta1": (0.9, "AdamParams.beta1"), "beta2": (0.95, "AdamParams.beta2"), "eps": (1e-12, "AdamParams.eps"),
            "weight_decay": (0.0, "AdamParams.weight_decay"), "grad_clip_norm": (0.0, "AdamParams.grad_clip_norm")}


def analyze(project: Project, ev: Evidence) -> None:
    texts = [f.python.text for f in project.pythons()]
    for f in project.pythons():
        src = f.python
        where = src.imports_module("tinker", "tinker_cookbook", "mint")
        if where is None:
            continue
        ev.extra("used_lora", Value(True, where, Level.CODE))
        _bridge(src, ev)
        _config_fields(src, ev, texts)
        _calls(src, ev)
        _fixes(src, ev)
    for command, script in project.launches:
        if script is None and _runs_a_recipe(command):
            _recipe_command(command, ev)
    if ev.best("global_batch_size") is None:  # `batch = random.sample(examples, 4)`: the prompts of a step
        ev.setting("global_batch_size", _sampled_batch(project))
    if ev.best("global_batch_size") is None:  # a loop's own config: Tinker batches are whole batches
        def batch(s) -> bool:
            return s.norm.rsplit(".", 1)[-1] in _BATCH_NAMES and not s.incidental and s.kind != "keyword"
        # the config the loop merges over its defaults dict first, then whatever states it
        merged = ev.harvested_where(lambda s: batch(s) and s.level in (Level.CONFIG, Level.COMMAND))
        ev.setting("global_batch_size", merged or ev.harvested_where(batch))
    if ev.votes and max(v.weight for v in ev.votes) > 0 and ev.algorithm().algorithm in {"grpo", "ppo", "reinforce"}:
        ev.extra("global_counts_prompts", Value(True, None))
        kl = ev.best("kl_coef")
        if kl is not None and isinstance(kl.value, int | float) and kl.value > 0:
            ev.warn("KL_REFERENCE", f"kl_penalty_coef={kl.value}: the MinT GRPO scaffold has no KL penalty. Fold it into "
                    "the reward as the cookbook does (reward - coef * (logp - logp_ref), reference logprobs from a "
                    "base-model sampler), or drop it.", kl.loc)
    if not ev.votes:
        ev.vote("other", None, "no loss_fn, cookbook recipe or custom loss found", 0)


def _sampled_batch(project: Project) -> Value | None:
    """A loop that draws each step's prompts at random: `random.sample(rows, k)` into a batch."""
    for f in project.pythons():
        for call in f.python.calls:
            if call.qualname == "random.sample" and "batch" in (call.assigned_to or "").lower():
                size = call.kwarg("k") or call.arg(1)
                if size is not None and isinstance(size.value, int):
                    return size
    return None


# What a Tinker loop calls its batch: one server-side step's data, never a per-device share.
_BATCH_NAMES = ("batch_size", "groups_per_batch", "prompts_per_batch")


# chz fields only tinker-cookbook's training configs have: `key=value` arguments naming them are a
# cookbook-style entry point's (a project's own `python -m src.train groups_per_batch=100 ...`).
_COOKBOOK_FIELDS = {"behavior_if_log_dir_exists", "groups_per_batch", "num_substeps", "kl_penalty_coef",
                    "kl_discount_factor", "loss_fn_config"}


def _runs_a_recipe(command) -> bool:
    """A tinker-cookbook recipe module, or a module of the project's own run with chz arguments: cookbook
    fields, or a module named for Tinker (`skyrl_agent.integrations.tinker.tinker_train`)."""
    if (command.module or command.script or "").startswith("tinker_cookbook"):
        return True
    overrides = [arg for arg in command.args if arg.kind == "override"]
    if "tinker" in (command.module or "").split(".") and overrides:
        return True
    return any(arg.name in _COOKBOOK_FIELDS for arg in overrides)


def _recipe_command(command, ev: Evidence) -> None:
    """`python -m tinker_cookbook.recipes.X key=value ...` (chz arguments) without the recipe's source."""
    module = command.module or command.script or ""
    words = set(module.replace("_", ".").replace("/", ".").split("."))
    names = {arg.name for arg in command.args if arg.kind == "override"}
    algorithm = ("dpo" if words & {"dpo", "preference"} else "distillation" if any("distill" in w for w in words)
                 else "grpo" if words & {"rl", "grpo"} or names & {"group_size", "groups_per_batch"}
                 else "sft" if words & {"sl", "sft", "supervised", "chat"} else None)
    if algorithm is not None:
        ev.vote(algorithm, command.loc, f"python -m {module}", 2)
    if module.startswith("tinker_cookbook"):
        ev.construct(f"python -m {module} (tinker-cookbook recipe)", command.loc,
                     "python train.py (the MinT scaffold for the same algorithm)",
                     "or keep the recipe: pin tinker-cookbook==0.4.1 and import mint before it")
    else:
        ev.construct(f"{module} with chz key=value arguments (the entry point was not given)", command.loc,
                     "python train.py (the MinT scaffold for the same algorithm)",
                     f"pass {module} with --config to read its loop; the plan is read from the arguments")
    for arg in command.args:
        if arg.kind not in {"override", "flag"}:
            continue
        setting = FIELDS.get(arg.name.rsplit(".", 1)[-1])
        if setting is not None:
            ev.setting(setting, arg.value)
        elif arg.name.rsplit(".", 1)[-1] == "loss_fn":
            ev.extra("loss_fn", arg.value)


# --- settings ------------------------------------------------------------------------------------------


def _config_fields(src: PySource, ev: Evidence, texts: list[str]) -> None:
    """Fields of the script's chz / dataclass configs (defaults, or the command line's key=value); a
    field no code of the inputs reads (`epochs: int = 10` beside a loop over the batches) sets nothing."""
    for info in src.classes.values():
        if not info.is_config:
            continue
        for name in info.fields:
            setting = FIELDS.get(name)
            if setting is not None and unread_field(info, name, src.text, texts):
                continue
            if setting is not None:
                ev.setting(setting, src.field_value(info.name, name, parsed=True))
            elif name == "loss_fn":
                ev.extra("loss_fn", src.field_value(info.name, name, parsed=True))


def _named_values(src: PySource, ev: Evidence) -> None:
    """Module constants (`GROUP_SIZE = 16`) and argparse options (`--lr`) named like cookbook fields."""
    for name, assigns in src.assigns.items():
        setting = FIELDS.get(name.lower())
        top = [a for a in assigns if a.scope is None and len(a.targets) == 1]
        if setting is not None and top and name.isupper():
            ev.setting(setting, src.evaluate(top[-1].value, None))
    for dest in src.argparse:
        setting = FIELDS.get(dest)
        if setting is not None:
            ev.setting(setting, src.argparse_value(dest))


def _calls(src: PySource, ev: Evidence) -> None:
    _named_values(src, ev)
    loads = dataset_calls(src)
    if loads:
        ev.setting("dataset", dataset_id(loads[0]))
    for module, algorithm in _COOKBOOK_MODULES.items():
        loc = src.imports_module(module)
        if loc is not None:
            ev.vote(algorithm, loc, f"imports {module}", 1)
    for call in src.calls:  # the cookbook trainer the script configures and runs decides
        if call.name in {"Config", "main"} and call.qualname.startswith("tinker_cookbook."):
            module = call.qualname.rsplit(".", 1)[0]
            algorithm = next((alg for prefix, alg in _COOKBOOK_MODULES.items() if module.startswith(prefix)), None)
            if algorithm is not None:
                ev.vote(algorithm, call.loc, f"{module}.{call.name}", 2)
    for call in src.calls:
        name = call.name.removesuffix("_async")
        if name == "create_lora_training_client":
            ev.setting("base_model", call.kwarg("base_model") or call.arg(0))
            ev.setting("lora.rank", call.kwarg("rank") or call.arg(1))
            ev.construct("create_lora_training_client(...)", call.loc, "same call on MinT (mint.ServiceClient)")
        elif name == "AdamParams" or call.name == "AdamParams":
            ev.setting("learning_rate", call.kwarg("learning_rate"))
            ev.construct("types.AdamParams(...)", call.loc, "the same on MinT",
                         "train.py passes the same Adam settings (OPTIMIZER), the 0.22 defaults where the source states none")
        elif name == "forward_backward":
            loss = call.kwarg("loss_fn") or call.arg(1)
            if loss is not None and isinstance(loss.value, str):
                ev.extra("loss_fn", loss)
                ev.construct(f"forward_backward(data, loss_fn='{loss.value}')", call.loc,
                             "the same on MinT" if loss.value not in ONLY_038_LOSSES else "see the 0.22 fixes",
                             "losses sum over tokens; fold any normalisation into weights / advantages")
                if loss.value in LOSSES:
                    ev.vote(LOSSES[loss.value], loss.loc, f"forward_backward(loss_fn='{loss.value}')", 2)
        elif name == "forward_backward_custom":
            if _mentions(src, ("logsigmoid", "dpo", "chosen")):
                ev.vote("dpo", call.loc, "forward_backward_custom with a pairwise loss", 2)
            elif _supervised_rows(src):
                ev.vote("sft", call.loc, "forward_backward_custom on supervised examples the loop does not sample", 2)
            else:
                ev.vote("other", call.loc, "forward_backward_custom with a loss of the script's own", 2)
            ev.construct("forward_backward_custom(data, loss_fn)", call.loc,
                         "same call on MinT; .result() on the APIFuture it returns",
                         "loss_fn_inputs may hold only target_tokens and weights on 0.22")
        elif name == "forward_backward_reverse_kl":
            ev.vote("distillation", call.loc, "mint.mint.forward_backward_reverse_kl", 3)
        elif name == "sample":
            if not call.in_evaluation():
                ev.setting("num_generations", _samples_per_prompt(src, call))
            ev.construct(f"{call.name}(prompt, num_samples, sampling_params)", call.loc,
                         "sample_async(...) in async code (one await); sample(...).result() in sync code")
        elif call.name == "SamplingParams":
            ev.setting("max_response_length", call.kwarg("max_tokens"))
            ev.setting("temperature", call.kwarg("temperature"))
        elif call.name == "apply" and isinstance(call.node.func, cst.Attribute) and isinstance(call.node.func.value, cst.Call) \
                and (dotted_name(call.node.func.value.func) or "").endswith("Blueprint"):
            _blueprint(src, call, ev)  # chz.Blueprint(train.Config).apply({"learning_rate": 2e-4, ...})
        elif call.name == "Config" or call.name.endswith(("DatasetBuilder", "CommonConfig", "Config")):
            for key, value in call.kwargs().items():
                setting = FIELDS.get(key)
                if setting is not None:
                    ev.setting(setting, value)
                elif key == "loss_fn":
                    ev.extra("loss_fn", value)
        if call.name.endswith("Builder") and not call.switched_off():  # `FromConversationFileBuilder(file_path=...)`
            for key in _DATA_FILE_KEYWORDS:
                value = call.kwarg(key)
                if value is not None and isinstance(value.value, str):
                    ev.setting("dataset", value)
                    break
    loss = ev.extras.get("loss_fn")
    if loss is not None and isinstance(loss.value, str) and loss.value in LOSSES:
        ev.vote(LOSSES[loss.value], loss.loc, f"loss_fn='{loss.value}'", 2)
    _sampled_policy_gradient(src, ev)
    vote = ev.algorithm()
    if vote is not None and vote.algorithm in ("grpo", "reinforce", "ppo"):
        if ev.best("reward_functions") is None:
            ev.setting("reward_functions", called_reward(src))
        if "beta" in ev.candidates and ev.best("kl_coef") is None:  # a policy-gradient loop's `beta` weighs its KL
            betas = ev.candidates.pop("beta")
            if _WEIGHS.search(src.text):  # only when the loop multiplies by it (`reward - beta * kl`): else unused
                ev.candidates["kl_coef"] = betas
    if vote is not None and vote.algorithm in ("sft", "dpo"):  # its sampling only shows what the model says
        for key in ("max_response_length", "temperature", "num_generations",
                    *(("beta",) if vote.algorithm == "sft" else ())):
            ev.candidates.pop(key, None)
    if loss is not None and loss.value in {"gspo"}:
        ev.set_variant("gspo", loss.loc)


_WEIGHS = re.compile(r"\bbeta\s*\*|\*\s*[\w.]*\bbeta\b")

# Loops that repeat a run, not a prompt's samples: their count is never a group size.
_RUN_LOOPS = ("step", "epoch", "batch", "iter", "round", "episode", "turn", "problem", "prompt", "question")


def _samples_per_prompt(src: PySource, call: CallSite) -> Value | None:
    """`num_samples`, or, when a loop asks one sample at a time (`[sample(p, num_samples=1) for _ in
    range(group_size)]`), the count of the innermost loop around the call that repeats it."""
    asked = call.kwarg("num_samples") or call.arg(1)
    if asked is None or as_int(asked.value) != 1:
        return asked
    around = None
    for node in iter_nodes(src.module):
        if isinstance(node, cst.For):
            target, count, body = node.target, node.iter, node.body
        elif isinstance(node, cst.ListComp | cst.GeneratorExp | cst.SetComp):
            target, count, body = node.for_in.target, node.for_in.iter, node.elt
        else:
            continue
        if any(inner is call.node for inner in iter_nodes(body)):
            around = (target, count)  # depth first: the last one found is the innermost
    if around is None:
        return asked
    target, count = around
    if not (isinstance(count, cst.Call) and dotted_name(count.func) == "range" and len(count.args) == 1):
        return asked
    written = (dotted_name(count.args[0].value) or "").lower()
    used = isinstance(target, cst.Name) and target.value != "_" and any(
        isinstance(n, cst.Name) and n.value == target.value for n in iter_nodes(call.node))
    if used or any(word in written for word in _RUN_LOOPS):
        return asked
    return src.evaluate(count.args[0].value, call.scope) or asked


# Advantages however a loop names them: `advantages`, `advs`, `_adv`.
_ADVANTAGES = re.compile(r"adv(antage)?s?\b")


def _sampled_policy_gradient(src: PySource, ev: Evidence) -> None:
    """A loop that samples its own completions, scores them and trains on advantages is policy
    gradient whatever loss_fn carries it (cross_entropy with advantage-weighted tokens included)."""
    samples = [c for c in src.calls if c.name.removesuffix("_async") == "sample"]
    text = src.text.lower()
    if not samples or "reward" not in text or not _ADVANTAGES.search(text) or not src.calls_named(
            "forward_backward", "forward_backward_async", "forward_backward_custom", "forward_backward_custom_async"):
        return
    group = ev.best("num_generations")
    grouped = (group is not None and (as_int(group.value) or 0) > 1) or "group" in text
    ev.vote("grpo" if grouped else "reinforce", samples[0].loc,
            "samples scored by a reward, trained on advantages (policy gradient)", 3)


def _blueprint(src: PySource, call: CallSite, ev: Evidence) -> None:
    values = call.arg_node(0)
    if not isinstance(values, cst.Dict):
        return
    for element in values.elements:
        if not isinstance(element, cst.DictElement):
            continue
        key = src.evaluate(element.key, call.scope)
        setting = FIELDS.get(key.value) if key is not None and isinstance(key.value, str) else None
        if setting is not None:
            ev.setting(setting, src.evaluate(element.value, call.scope))
        elif key is not None and key.value == "loss_fn":
            ev.extra("loss_fn", src.evaluate(element.value, call.scope))


# The cookbook's and the SDK's builders of supervised rows (prompt and target tokens, weights).
_SUPERVISED_BUILDERS = ("conversation_to_datum", "build_supervised_example", "datum_from_tokens_weights",
                        "datum_from_model_input_weights")


def _supervised_rows(src: PySource) -> bool:
    """A custom loss over rows a supervised builder made, with nothing sampled to train on: a
    supervised objective of the script's own (a weighted or contrastive log-likelihood)."""
    sampled = any(c.name.removesuffix("_async") == "sample" and not c.in_evaluation() for c in src.calls)
    return not sampled and any(c.name in _SUPERVISED_BUILDERS for c in src.calls)


def _mentions(src: PySource, words: tuple[str, ...]) -> bool:
    text = src.text.lower()
    return any(w in text for w in words)


# --- the bridge and the 0.38 -> 0.22 fixes --------------------------------------------------------------


def _bridge(src: PySource, ev: Evidence) -> None:
    for module, loc in src.imported:
        if module == "tinker" or module.startswith("tinker."):
            line = src.text.splitlines()[loc.line - 1].strip() if loc.line <= len(src.text.splitlines()) else module
            ev.tinker_fix(line, loc, "import mint as tinker  (or: import mint; from mint import types)",
                          "the migration bridge: mint re-exports the tinker 0.22 API and patches auth/base URL "
                          "(MINT_BASE_URL / MINT_API_KEY)")
            break
    loc = src.imports_module("tinker_cookbook")
    if loc is not None:
        ev.tinker_fix("import tinker_cookbook", loc, "pip install tinker-cookbook==0.4.1",
                      "only tinker-cookbook <= 0.4.1 resolves next to tinker==0.22.0; newer cookbook code uses the "
                      "0.38 API")


def _fix(ev: Evidence, call: CallSite, source: str, fix: str, note: str) -> None:
    ev.tinker_fix(source, call.loc, fix, note)
    ev.warn("TINKER_038", f"{source}: {fix}", call.loc)


def _fixes(src: PySource, ev: Evidence) -> None:
    for call in src.calls:
        name = call.name
        base = name.removesuffix("_async")
        if call.awaited and name in _CREATE:
            _fix(ev, call, f"await ...{name}(...)", f"await ...{name}_async(...)",
                 "in 0.22 the sync create_* calls block and return the client; await the _async twin once")
        if call.awaited and name in {"sample", "compute_logprobs"}:
            _fix(ev, call, f"await ...{name}(...)", f"await ...{name}_async(...)",
                 f"0.22's {name}() returns a concurrent.futures.Future, which cannot be awaited")
        if call.awaited and name in _REST_METHODS:
            _fix(ev, call, f"await rest_client.{name}(...)", f"await rest_client.{name}_async(...)",
                 "0.22's RestClient methods return concurrent.futures.Future (use .result(), or the _async twin)")
        if call.qualname.endswith("RestClient") and name == "RestClient":
            _fix(ev, call, "tinker.RestClient(...)", "service_client.create_rest_client()",
                 "RestClient is not exported in 0.22; its methods return concurrent Futures (.result())")
        if name in {"coroutine", "future"} and isinstance(call.node.func, cst.Attribute) and not call.node.args:
            _fix(ev, call, f".{name}()", "await the APIFuture directly (or .result() / await fut.result_async())",
                 f"APIFuture.{name}() was added in 0.38")
        if base in _CREATE and call.kwarg_node("optimizer") is not None:
            _fix(ev, call, f"{name}(..., optimizer=...)", "drop optimizer=; pass AdamParams to every optim_step",
                 "0.22 configures Adam per step: optim_step(types.AdamParams(learning_rate=...))")
        if base in {"save_state", "save_weights_for_sampler"} and call.kwarg_node("user_metadata") is not None:
            _fix(ev, call, f"{name}(..., user_metadata=...)", "drop user_metadata=", "save calls take no metadata in 0.22")
        if name == "create_custom_loss":
            _fix(ev, call, "create_custom_loss(...)", "training_client.forward_backward_custom(data, loss_fn).result()",
                 "server-side LossHandles are 0.38 only; 0.22 runs the custom loss client-side (two passes)")
        if base in {"forward_backward", "forward"}:
            loss = call.kwarg("loss_fn") or call.arg(1)
            if loss is not None and loss.value in ONLY_038_LOSSES:
                repl = "importance_sampling" if loss.value != "custom" else "forward_backward_custom"
                _fix(ev, call, f"loss_fn='{loss.value}'", f"loss_fn='{repl}'",
                     "0.22 has cross_entropy, importance_sampling, ppo, cispo, dro; "
                     + ("GSPO's sequence-level ratio is not available" if loss.value == "gspo" else "no such loss"))
        if base == "save_weights_and_get_sampling_client":
            if call.kwarg_node("kind") is not None:
                _fix(ev, call, "save_weights_and_get_sampling_client(kind=...)", "drop kind=", "0.38 only")
            if call.kwarg_node("name") is not None or call.arg_node(0) is not None:
                ev.tinker_fix(f"{name}(name=...)", call.loc, "save_weights_for_sampler(name).result().path",
                              "0.22 ignores name here (ephemeral sampler, no path); save_weights_for_sampler keeps one")
        if base == "sample":
            extra = [k for k in call.keywords() if k in _SAMPLE_038_KWARGS]
            if extra:
                _fix(ev, call, f"sample(..., {', '.join(extra)}=...)", "drop " + ", ".join(extra),
                     "0.38-only sampling arguments")
        if base in {"create_training_client_from_state", "create_training_client_from_state_with_optimizer"}:
            _fix(ev, call, f"{name}(path)",
                 "tc = service_client.create_lora_training_client(base_model, rank=<same>); "
                 "tc.load_state_with_optimizer(path).result()",
                 "create_training_client_from_state* calls /api/v1/weights_info, which returns 404 on MinT")
        if base == "load_state":
            ev.tinker_fix(f"{name}(path)", call.loc, "load_state_with_optimizer(path).result()  (for a resume)",
                          "load_state restores weights only in 0.22; the Adam moments start from zero")
        if name == "SamplingParams" and call.kwarg_node("stop_token_ids") is not None:
            _fix(ev, call, "SamplingParams(stop_token_ids=...)", "SamplingParams(stop=[...token ids...])",
                 "stop_token_ids is silently dropped (extra='ignore'); the sampler would never stop early")
        if name == "optim_step" and call.kwarg_node("optim_params") is not None:
            _fix(ev, call, "optim_step(optim_params=...)", "optim_step(types.AdamParams(...))",
                 "0.22's optim_step takes adam_params only")
        if name in {"OptimizerConfig", "DimuonParams"}:
            _fix(ev, call, f"{name}(...)", "types.AdamParams(...) per optim_step", "0.38-only optimizer types")
        if name == "ServiceClient":
            extra = [k for k in call.keywords() if k in _SERVICE_038_KWARGS]
            if extra:
                _fix(ev, call, f"ServiceClient({', '.join(extra)}=...)", "drop " + ", ".join(extra),
                     "0.22's ServiceClient takes user_metadata, project_id, base_url, api_key")
    _result_attributes(src, ev)


def _result_attributes(src: PySource, ev: Evidence) -> None:
    """`result.loss` (no such field: metrics['loss:sum']) and `response.samples` (it is `.sequences`)."""
    for attr, loc, node in src.attributes:
        if attr not in {"loss", "samples"} or not isinstance(node.value, cst.Name):
            continue
        produced = " ".join(_produced_by(src, node.value.value, loc.line, 0))
        if attr == "loss" and "forward_backward" in produced:
            ev.tinker_fix(f"{node.value.value}.loss", loc, f"{node.value.value}.metrics['loss:sum']",
                          "ForwardBackwardOutput has no .loss")
            ev.warn("TINKER_038", f"{node.value.value}.loss: use .metrics['loss:sum'] (there is no .loss)", loc)
        if attr == "samples" and "sample" in produced:
            ev.tinker_fix(f"{node.value.value}.samples", loc, f"{node.value.value}.sequences",
                          "SampleResponse holds .sequences")
            ev.warn("TINKER_038", f"{node.value.value}.samples: the field is .sequences", loc)


def _produced_by(src: PySource, name: str, line: int, depth: int) -> list[str]:
    """The calls whose result a variable holds, following `x = y.method()` one name further back."""
    if depth > 2:
        return []
    found = src.definition(name, None, line)
    for fn in src.functions.values():
        found = found or src.definition(name, fn.node, line)
    if not found or found[0] != "assign":
        return []
    out = []
    for call in _calls_in(found[1].value):
        dotted = dotted_name(call.func) or ""
        out.append(dotted)
        base = dotted.split(".")[0]
        if "." in dotted and base != name:
            out += _produced_by(src, base, found[1].line, depth + 1)
    return out


def _calls_in(node: cst.CSTNode) -> list[cst.Call]:
    return [n for n in iter_nodes(node) if isinstance(n, cst.Call)]


ANALYZER = Analyzer(
    read_task=read_code_task,  # the task is in the code: the shared reader of loops
    name="tinker",
    signals="`import tinker`, `tinker_cookbook`, `ServiceClient`, `forward_backward`, chz `CLIConfig` recipes. "
            "Usually written for tinker 0.38",
    analyze=analyze,
    defaults=defaults,
    optimizer_defaults=optimizer_defaults,
    imports=("tinker", "tinker_cookbook", "mint"),
    # a Tinker LoRA takes a rank only: an alpha or target modules the loop's config states configure nothing
    reserved_names=("alpha", "lora_alpha", "target_modules", "lora_target_modules"),
    own_config=True,  # a loop that yaml.safe_loads its own config reads only the keys it names
    detect_command=lambda command, script: script is None and _runs_a_recipe(command)
    or (command.module or command.script or "").startswith("tinker_cookbook"),
)
