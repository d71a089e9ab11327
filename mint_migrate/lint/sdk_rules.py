"""Pinned-SDK traps: code that is wrong for tinker 0.22.0, the SDK mindlab-toolkit 0.2.0 pins.

Most of it is right for some other Tinker version or for the public docs' examples, which is
why it keeps showing up in migrated code (api_facts §0, §2, §2.11, §8).
"""

import libcst as cst

from mint_migrate.lint.context import (
    LintContext,
    argument,
    dotted,
    has_star_kwargs,
    keyword,
    last_name,
    string_value,
)
from mint_migrate.lint.flow import FlowVisitor, base_method
from mint_migrate.lint.registry import Rule, register
from mint_migrate.sdk_facts import CUSTOM_LOSS_INPUT_KEYS as CUSTOM_LOSS_KEYS
from mint_migrate.sdk_facts import KEYWORDS as SIGNATURES  # 0.22.0 keywords of the calls people pass foreign ones to
from mint_migrate.sdk_facts import LATER_SDK_LOSSES, LOSS_NAMES
from mint_migrate.sdk_facts import RAW_LIST_INPUT_KEYS as RAW_LIST_KEYS
from mint_migrate.sdk_facts import SAMPLING_PARAMS_FIELDS as SAMPLING_PARAMS

SDK_EXPORTERS = {"mint", "tinker", "mint.tinker", "mint.types", "tinker.types"}  # the public surface
NEWER_NAMES = {"RestClient", "DimuonParams", "OptimizerConfig", "OptimParams", "LossHandle", "AdminClient"}
_LOSSES = ", ".join(f"`{name}`" for name in LOSS_NAMES)
KEYWORD_HINTS: dict[str, str] = {
    "optimizer": "`optimizer=` at client creation is tinker 0.38; on 0.22.0 pass AdamParams to optim_step",
    "optim_params": "`optim_params=` is tinker 0.38; on 0.22.0 call optim_step(types.AdamParams(...))",
    "user_metadata": "`user_metadata=` on saves is tinker 0.38; drop it (0.22.0 takes it only at client creation)",
    "kind": "`kind=` on save_weights_and_get_sampling_client is tinker 0.38; drop it",
    "record_stability_info": "`record_stability_info=` is tinker 0.38; drop it",
    "topk_sample_logprobs": "`topk_sample_logprobs=` is tinker 0.38; 0.22.0 has only topk_prompt_logprobs",
    "target_prompt_logprobs": "`target_prompt_logprobs=` is tinker 0.38; drop it",
    "prompt_alt_tokens_k": "`prompt_alt_tokens_k=` is tinker 0.38; drop it",
    "prompt_logprobs_last_n": "`prompt_logprobs_last_n=` is tinker 0.38; drop it",
    "base_model": "`base_model=` on create_training_client_from_state is tinker 0.38; on MinT resume with "
    "create_lora_training_client + load_state_with_optimizer",
    "alpha": "MinT LoRA has only `rank` (alpha, dropout and target modules are fixed by the service)",
    "lora_alpha": "MinT LoRA has only `rank` (alpha, dropout and target modules are fixed by the service)",
    "lora_dropout": "MinT LoRA has only `rank` (alpha, dropout and target modules are fixed by the service)",
    "dropout": "MinT LoRA has only `rank` (alpha, dropout and target modules are fixed by the service)",
    "target_modules": "MinT LoRA has only `rank`; choose layers with train_mlp / train_attn / train_unembed",
    "lr": "AdamParams takes `learning_rate=`, not `lr=` (pydantic rejects unknown fields)",
    "betas": "AdamParams takes `beta1=` and `beta2=`, not `betas=`",
}

register(
    Rule(
        id="MINT001",
        name="sampling-params-stop-token-ids",
        severity="error",
        family="pinned-sdk",
        summary="`SamplingParams(stop_token_ids=...)` is silently dropped; use `stop=`.",
        what="A `SamplingParams(...)` call from mint/tinker with a `stop_token_ids=` keyword.",
        why="In tinker 0.22.0 `SamplingParams` is a pydantic model with `extra=\"ignore\"`: the "
        "keyword vanishes without an error, so sampling never stops at those tokens and every "
        "rollout runs to `max_tokens`. Rewards, lengths and cost all change without a warning. "
        "(vLLM's SamplingParams does take `stop_token_ids`; that one is not flagged.)",
        fix="Pass the token ids as `stop=[...]`, which takes a string, a list of strings or a list of token ids.",
        bad="params = types.SamplingParams(max_tokens=256, stop_token_ids=[tokenizer.eos_token_id])",
        good="params = types.SamplingParams(max_tokens=256, stop=[tokenizer.eos_token_id])",
        autofix="Renames the keyword to `stop` (when the call has no `stop=` already).",
    )
)
register(
    Rule(
        id="MINT002",
        name="sampling-params-unknown-keyword",
        severity="warning",
        family="pinned-sdk",
        summary="A `SamplingParams` keyword that 0.22.0 does not have is dropped without an error.",
        what=f"A keyword other than {', '.join(f'`{f}`' for f in sorted(SAMPLING_PARAMS))} "
        "in a mint/tinker `SamplingParams(...)` call.",
        why="Unknown fields are ignored (`extra=\"ignore\"`), so `max_new_tokens=`, "
        "`repetition_penalty=` or `min_p=` do nothing on MinT and the sampler runs with defaults.",
        fix="Use the 0.22.0 field (`max_tokens`, `stop`, ...) or drop the keyword.",
        bad="types.SamplingParams(max_new_tokens=128, temperature=1.0)",
        good="types.SamplingParams(max_tokens=128, temperature=1.0)",
    )
)
register(
    Rule(
        id="MINT003",
        name="forward-backward-output-loss",
        severity="error",
        family="pinned-sdk",
        summary="`ForwardBackwardOutput` has no `.loss`; read `metrics[\"loss:sum\"]`.",
        what="`.loss` read from the result of `forward_backward(...)`/`forward(...)`/"
        "`forward_backward_custom(...)` (after `.result()` or `await`), followed through "
        "assignments within the function.",
        why="Several Tinker doc pages and the SDK's own docstrings print `result.loss`, but the "
        "0.22.0 `ForwardBackwardOutput` has only `loss_fn_output_type`, `loss_fn_outputs` and "
        "`metrics`: the line raises AttributeError after the step has already been paid for.",
        fix="Use `result.metrics[\"loss:sum\"]` (the per-token loss summed over the batch).",
        bad="fb = training_client.forward_backward(batch, \"cross_entropy\").result()\nprint(fb.loss)",
        good="fb = training_client.forward_backward(batch, \"cross_entropy\").result()\nprint(fb.metrics[\"loss:sum\"])",
        autofix="Rewrites `X.loss` to `X.metrics[\"loss:sum\"]`.",
    )
)
register(
    Rule(
        id="MINT004",
        name="sample-response-samples",
        severity="error",
        family="pinned-sdk",
        summary="`SampleResponse` has `.sequences`, not `.samples`.",
        what="`.samples` read from what `sample(...).result()` or `await sample_async(...)` returned.",
        why="The `sample()` docstring example uses `result.samples`, which does not exist: the "
        "field is `sequences` (a list of `SampledSequence` with `tokens`, `logprobs`, `stop_reason`).",
        fix="Use `.sequences`.",
        bad="resp = sampling_client.sample(prompt=p, num_samples=4, sampling_params=params).result()\n"
        "for s in resp.samples: ...",
        good="resp = sampling_client.sample(prompt=p, num_samples=4, sampling_params=params).result()\n"
        "for s in resp.sequences: ...",
        autofix="Renames the attribute to `sequences`.",
    )
)
register(
    Rule(
        id="MINT005",
        name="await-on-sync-call",
        severity="error",
        family="pinned-sdk",
        summary="`await` on a 0.22.0 call that blocks or returns a non-awaitable; use its `_async` twin.",
        what="`await x.create_lora_training_client(...)` (and the other `create_*`, "
        "`save_weights_and_get_sampling_client`, `get_server_capabilities`, `get_info`), "
        "`await sampling_client.sample(...)` / `compute_logprobs(...)`, or `await` on a name that "
        "holds the concurrent Future `sample()` returned.",
        why="This is tinker 0.38 style. In 0.22.0 the sync `create_*` methods block and return the "
        "client itself (awaiting it raises TypeError), and `sample()` returns a "
        "`concurrent.futures.Future`, which cannot be awaited.",
        fix="Call the `_async` twin with one await (`await sc.create_lora_training_client_async(...)`, "
        "`await sampling_client.sample_async(...)`), or drop the await in sync code.",
        bad="training_client = await service_client.create_lora_training_client(base_model=model, rank=32)",
        good="training_client = await service_client.create_lora_training_client_async(base_model=model, rank=32)",
        autofix="Renames the method to its `_async` twin.",
    )
)
register(
    Rule(
        id="MINT006",
        name="async-training-call-single-await",
        severity="error",
        family="pinned-sdk",
        summary="A `*_async` training call needs two awaits: the first only submits.",
        what="The value of `await tc.forward_backward_async(...)` (or `forward_async`, "
        "`optim_step_async`, `save_state_async`, `load_state*_async`, "
        "`save_weights_for_sampler_async`, `forward_backward_custom_async`) used as if it were the "
        "result: an attribute other than `result`/`result_async` read from it, directly or through "
        "the name it was assigned to.",
        why="In 0.22.0 these coroutines return an `APIFuture`. After one await the request is "
        "submitted, not finished; `.metrics`, `.path` or `.loss_fn_outputs` on the future raise "
        "AttributeError.",
        fix="Await twice: `fut = await tc.forward_backward_async(...)`, then `result = await fut`.",
        bad="result = await tc.forward_backward_async(batch, \"cross_entropy\")\nloss = result.metrics[\"loss:sum\"]",
        good="fut = await tc.forward_backward_async(batch, \"cross_entropy\")\nresult = await fut\n"
        "loss = result.metrics[\"loss:sum\"]",
    )
)
register(
    Rule(
        id="MINT007",
        name="future-used-without-result",
        severity="error",
        family="pinned-sdk",
        summary="A sync training or sampling call returns a future; call `.result()` before using it.",
        what="An attribute other than the future's own (`result`, `result_async`; for "
        "`sample`/`compute_logprobs` also `done`, `cancel`, `exception`, ...), a subscript, or a "
        "tuple unpacking applied to what `forward_backward(...)`, `optim_step(...)`, "
        "`save_state(...)`, `sample(...)` and the like returned, directly or through the name it "
        "was assigned to within the function.",
        why="`TrainingClient` calls return an `APIFuture` and `SamplingClient.sample()` a "
        "`concurrent.futures.Future`. Old docs show `loss, metrics = tc.forward_backward_custom(...)` "
        "and `tc.save_state(name).path`; both fail on 0.22.0.",
        fix="Call `.result()` first (`tc.save_state(name).result().path`); submit forward_backward "
        "and optim_step before waiting on either so they share a clock cycle.",
        bad="fb = training_client.forward_backward(batch, \"cross_entropy\")\nprint(fb.metrics)",
        good="fb_future = training_client.forward_backward(batch, \"cross_entropy\")\n"
        "optim_future = training_client.optim_step(adam)\nprint(fb_future.result().metrics)",
    )
)
register(
    Rule(
        id="MINT008",
        name="unknown-loss-name",
        severity="error",
        family="pinned-sdk",
        summary="A loss name that tinker 0.22.0 does not have.",
        what="A `loss_fn` given to `forward_backward(...)`/`forward(...)` (or their `_async` twins) "
        f"that is not one of {_LOSSES}: a string "
        "literal, or a name / argparse default / config field that holds one.",
        why=f"{', '.join(f'`{n}`' for n in LATER_SDK_LOSSES)} exist only in later SDKs; `grpo`, `dpo`, "
        "`kl` were never built-in losses. The server rejects the request after the batch is uploaded.",
        fix="GRPO is `importance_sampling` (or `ppo`/`cispo`/`dro`) with group-centred advantages; "
        "DPO and other custom objectives go through `forward_backward_custom`; reverse-KL "
        "distillation is `mint.mint.forward_backward_reverse_kl`.",
        bad="training_client.forward_backward(batch, loss_fn=\"grpo\")",
        good="training_client.forward_backward(batch, loss_fn=\"importance_sampling\")",
    )
)
register(
    Rule(
        id="MINT009",
        name="loss-fn-inputs-raw-list-key",
        severity="error",
        family="pinned-sdk",
        summary="A raw list under a `loss_fn_inputs` key the SDK cannot convert raises KeyError.",
        what=f"`Datum(loss_fn_inputs={{...}})` where a key other than "
        f"{', '.join(f'`{k}`' for k in sorted(RAW_LIST_KEYS))} holds a Python list "
        "(a list display, comprehension, `list(...)` or `.tolist()`).",
        why="`Datum.__post_init__` converts raw lists only for those keys (it needs their dtype); "
        "any other key with a list raises `KeyError` while the batch is being built. No built-in "
        "loss reads such a key anyway.",
        fix="Drop the key, or if a custom loss needs the value keep it outside the Datum (a "
        "closure); for a built-in key wrap arrays with `TensorData.from_numpy`.",
        bad="types.Datum(model_input=inp, loss_fn_inputs={\"target_tokens\": tgt, \"mask\": [1] * len(tgt)})",
        good="types.Datum(model_input=inp, loss_fn_inputs={\"target_tokens\": tgt, \"weights\": [1.0] * len(tgt)})",
    )
)
register(
    Rule(
        id="MINT010",
        name="custom-loss-extra-inputs",
        severity="error",
        family="pinned-sdk",
        summary="`forward_backward_custom` data may carry only `target_tokens` and `weights`.",
        what="A Datum passed to `forward_backward_custom(...)` (in the list literal, comprehension, "
        "`.append(...)` calls or a local helper that returns it) whose `loss_fn_inputs` has another key.",
        why="tinker 0.22.0 raises `ValueError` for any other key in custom-loss data. The usual "
        "victim is DPO code that stores reference logprobs in the Datum.",
        fix="Keep extra per-example values (reference logprobs, labels) in a closure or a parallel "
        "list that the loss function reads by index.",
        bad="data = [types.Datum(model_input=inp, loss_fn_inputs={\"target_tokens\": t, \"weights\": w, "
        "\"ref_logprobs\": ref})]\ntc.forward_backward_custom(data, dpo_loss).result()",
        good="data = [types.Datum(model_input=inp, loss_fn_inputs={\"target_tokens\": t, \"weights\": w})]\n"
        "tc.forward_backward_custom(data, make_dpo_loss(ref_logprobs)).result()",
    )
)
register(
    Rule(
        id="MINT011",
        name="newer-sdk-api",
        severity="error",
        family="pinned-sdk",
        summary="An API that exists only in tinker 0.38 (the latest docs), not in the pinned 0.22.0.",
        what="`tinker.RestClient(...)` (or `RestClient` imported from mint/tinker), "
        "`create_custom_loss(...)`, `DimuonParams`, `OptimizerConfig`, `OptimParams`, `LossHandle`, "
        "`AdminClient`, and `.coroutine()` on a training future. (`.future()` is not flagged: in 0.22.0 "
        "every training call returns an `AwaitableConcurrentFuture`, whose `.future()` is the "
        "`concurrent.futures.Future` underneath.)",
        why="Code written from the current Tinker docs or tinker-cookbook targets 0.38; on MinT "
        "these raise AttributeError or ImportError.",
        fix="Use `service_client.create_rest_client()`; custom losses go through "
        "`forward_backward_custom(data, fn)`; the optimizer is `AdamParams` passed to `optim_step`; "
        "await an APIFuture directly, call `.result()`, or take `.future()` for `concurrent.futures` helpers.",
        bad="rest = tinker.RestClient()",
        good="rest = service_client.create_rest_client()",
    )
)
register(
    Rule(
        id="MINT012",
        name="keyword-not-in-pinned-sdk",
        severity="error",
        family="pinned-sdk",
        summary="A keyword the 0.22.0 signature does not accept.",
        what="Keywords outside the 0.22.0 signatures of `create_lora_training_client`, "
        "`create_training_client_from_state*`, `create_sampling_client`, `save_state`, "
        "`save_weights_for_sampler`, `save_weights_and_get_sampling_client`, `load_state*`, "
        "`forward*`, `optim_step`, `sample`, `compute_logprobs`, `AdamParams` and `LoraConfig`: "
        "0.38 additions (`optimizer=`, `user_metadata=` on saves, `kind=`, "
        "`topk_sample_logprobs=`, ...) and PEFT/torch habits (`alpha=`, `target_modules=`, `lr=`).",
        why="These raise TypeError or a pydantic ValidationError when the line runs, often after "
        "minutes of setup.",
        fix="Drop the keyword or use the 0.22.0 spelling (`learning_rate=`, `beta1=`/`beta2=`); "
        "MinT LoRA takes only `rank` and the `train_mlp`/`train_attn`/`train_unembed` switches.",
        bad="service_client.create_lora_training_client(base_model=model, rank=32, lora_alpha=64)",
        good="service_client.create_lora_training_client(base_model=model, rank=32)",
    )
)

AWAIT_SYNC = {
    "create_lora_training_client",
    "create_training_client_from_state",
    "create_training_client_from_state_with_optimizer",
    "create_sampling_client",
    "save_weights_and_get_sampling_client",
    "create_rest_client",
    "get_server_capabilities",
    "get_info",
    "sample",
    "compute_logprobs",
}
FUTURE_ATTRS = {"result", "result_async", "__await__", "future"}
CONCURRENT_FUTURE_ATTRS = {"result", "done", "cancel", "cancelled", "running", "exception", "add_done_callback"}


class SdkRules(FlowVisitor):
    """Reports MINT001-MINT012."""

    # --- calls --------------------------------------------------------------------------

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if ctx.sdk_symbol(node.func, "SamplingParams"):
            self._sampling_params(node)
        if ctx.sdk_symbol(node.func, "Datum"):
            self._datum_raw_lists(node)
        if ctx.sdk_symbol(node.func, {"AdamParams", "LoraConfig"}):
            self._keywords(node, last_name(node.func) or "")
        if ctx.sdk_symbol(node.func, "RestClient"):
            ctx.report(
                "MINT011",
                node,
                "`RestClient(...)` is tinker 0.38; 0.22.0 does not export it.",
                "Use `service_client.create_rest_client()`.",
            )
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "create_custom_loss":
            ctx.report(
                "MINT011",
                node,
                "`create_custom_loss` is tinker 0.38; 0.22.0 has no server-side custom losses.",
                "Compute the loss client-side with `training_client.forward_backward_custom(data, loss_fn).result()`.",
            )
        method = self.sdk_method(node)
        if method is None:
            return
        base = base_method(method)
        if base in SIGNATURES:
            self._keywords(node, base)
        if base in ("forward", "forward_backward"):
            self._loss_name(node)
        if base == "forward_backward_custom":
            self._custom_loss_data(node)

    def _sampling_params(self, node: cst.Call) -> None:
        has_stop = keyword(node, "stop") is not None
        for arg in node.args:
            if arg.keyword is None:
                continue
            name = arg.keyword.value
            if name == "stop_token_ids":
                safe = not has_stop and not has_star_kwargs(node)
                self.ctx.report(
                    "MINT001",
                    arg,
                    "`stop_token_ids=` is silently dropped by tinker 0.22.0's SamplingParams; "
                    "sampling will not stop at these tokens.",
                    "Rename it to `stop=`." if safe else "Merge these ids into the existing `stop=` list.",
                    edit=(lambda a: a.with_changes(keyword=cst.Name("stop"))) if safe else None,
                )
            elif name not in SAMPLING_PARAMS:
                self.ctx.report(
                    "MINT002",
                    arg,
                    f"SamplingParams has no `{name}`; 0.22.0 drops it silently "
                    f"(fields: {', '.join(sorted(SAMPLING_PARAMS))}).",
                    "Use `max_tokens=` for a length limit." if name in ("max_new_tokens", "max_length") else None,
                )

    def _keywords(self, node: cst.Call, signature: str) -> None:
        allowed = SIGNATURES[signature]
        if signature == "create_sampling_client":
            allowed = allowed | {"base_model"}
        for arg in node.args:
            if arg.keyword is None or arg.keyword.value in allowed:
                continue
            name = arg.keyword.value
            hint = KEYWORD_HINTS.get(name)
            self.ctx.report(
                "MINT012",
                arg,
                f"`{signature}` in tinker 0.22.0 has no `{name}=` keyword"
                + (f": {hint}." if hint else f" (it takes {', '.join(sorted(allowed))})."),
            )

    def _loss_name(self, node: cst.Call) -> None:
        given = argument(node, 1, "loss_fn")
        value = string_value(self.resolve(given))
        if value is None or value in LOSS_NAMES:
            return
        advice = {
            "grpo": "GRPO is `importance_sampling` (or `ppo`) with group-centred advantages",
            "dpo": "DPO goes through `forward_backward_custom` with a DPO loss function",
            "gspo": "`gspo` exists only in tinker 0.38",
            "stable_reinforce": "`stable_reinforce` exists only in tinker 0.38",
            "custom": "`custom` losses are tinker 0.38; use `forward_backward_custom`",
            "reverse_kl": "reverse-KL distillation is `mint.mint.forward_backward_reverse_kl`",
            "kl": "there is no KL loss; add a KL penalty to the reward",
        }.get(value)
        where = "" if given is not None and string_value(given) is not None else " (through a name or default)"
        self.ctx.report(
            "MINT008",
            given if given is not None else node,
            f"Loss {value!r}{where} does not exist in tinker 0.22.0 (losses: {', '.join(LOSS_NAMES)})"
            + (f"; {advice}." if advice else "."),
        )

    # --- Datum inputs -------------------------------------------------------------------

    def _datum_raw_lists(self, node: cst.Call) -> None:
        for key_node, key, value in self.datum_inputs(node):
            if key in RAW_LIST_KEYS or not _is_raw_list(value):
                continue
            self.ctx.report(
                "MINT009",
                key_node,
                f"loss_fn_inputs[{key!r}] is a raw Python list; tinker 0.22.0 converts lists only for "
                f"{', '.join(sorted(RAW_LIST_KEYS))} and raises KeyError for {key!r}.",
            )

    def _custom_loss_data(self, node: cst.Call) -> None:
        for datum in self._datums_in(argument(node, 0, "data")):
            for key_node, key, _ in self.datum_inputs(datum):
                if key in CUSTOM_LOSS_KEYS:
                    continue
                line = self.ctx.position(node)[0]
                self.ctx.report(
                    "MINT010",
                    key_node,
                    f"This Datum goes to forward_backward_custom (line {line}), which accepts only "
                    f"target_tokens and weights; {key!r} raises ValueError in tinker 0.22.0.",
                )

    def _datums_in(self, data: cst.BaseExpression | None) -> list[cst.Call]:
        """The Datum(...) calls that make up `data`: written inline, in a comprehension, appended
        to the list name, or returned by a module-level helper those expressions call."""
        if data is None:
            return []
        elements: list[cst.BaseExpression] = []
        key = dotted(data)
        if key is not None:
            elements += self.lookup_appends(key)
            bound = self.lookup_expr(key)
            if bound is not None:
                data = bound
        if isinstance(data, (cst.List, cst.Tuple)):
            elements += [e.value for e in data.elements]
        elif isinstance(data, (cst.ListComp, cst.GeneratorExp)):
            elements.append(data.elt)
        found: list[cst.Call] = []
        for element in elements:
            element = self.resolve(element, depth=2)
            if not isinstance(element, cst.Call):
                continue
            if self.ctx.sdk_symbol(element.func, "Datum"):
                found.append(element)
            elif isinstance(element.func, cst.Name) and element.func.value in self.ctx.functions:
                found += _returned_datums(self.ctx, self.ctx.functions[element.func.value])
        return found

    # --- attributes and awaits ----------------------------------------------------------

    def visit_Attribute(self, node: cst.Attribute) -> None:
        kind = self.kind_of(node.value)
        if kind is None:
            return
        attr = node.attr.value
        if kind.what == "fb" and attr == "loss":
            self.ctx.report(
                "MINT003",
                node,
                "ForwardBackwardOutput has no `.loss` in tinker 0.22.0.",
                "Use `.metrics[\"loss:sum\"]`.",
                edit=_loss_to_metrics,
            )
        elif kind.what == "sample" and attr == "samples":
            self.ctx.report(
                "MINT004",
                node,
                "SampleResponse has no `.samples`; the field is `.sequences`.",
                "Use `.sequences`.",
                edit=lambda n: n.with_changes(attr=cst.Name("sequences")),
            )
        elif kind.what.startswith("APIF:"):
            if attr == "coroutine":
                self.ctx.report(
                    "MINT011",
                    node,
                    "APIFuture.coroutine() is tinker 0.38; 0.22.0's training futures have result(), "
                    "result_async(), await and future().",
                    "Use `.result()` in sync code, `await fut` in async code, or `.future()` for the "
                    "concurrent.futures.Future.",
                )
            elif attr not in FUTURE_ATTRS:
                self._future_misuse(node, kind, f"`.{attr}`")
        elif kind.what.startswith("CF:") and attr not in CONCURRENT_FUTURE_ATTRS:
            self._future_misuse(node, kind, f"`.{attr}`")

    def visit_Subscript(self, node: cst.Subscript) -> None:
        kind = self.kind_of(node.value)
        if kind is not None and kind.what.startswith(("APIF:", "CF:")):
            self._future_misuse(node, kind, "a subscript")

    def leave_Assign(self, original_node: cst.Assign) -> None:
        kind = self.kind_of(original_node.value)
        if kind is not None and kind.what.startswith(("APIF:", "CF:")):
            if any(isinstance(t.target, (cst.Tuple, cst.List)) for t in original_node.targets):
                self._future_misuse(original_node.value, kind, "tuple unpacking")
        super().leave_Assign(original_node)

    def _future_misuse(self, node: cst.CSTNode, kind, use: str) -> None:
        if kind.origin == "single-await":
            self.ctx.report(
                "MINT006",
                node,
                f"{use} on the APIFuture that one `await` of a `*_async` training call returns; "
                "the request is only submitted.",
                "Await the future too: `fut = await tc.forward_backward_async(...)`, then `result = await fut`.",
            )
            return
        concurrent = kind.what.startswith("CF:")
        self.ctx.report(
            "MINT007",
            node,
            f"{use} on a {'concurrent.futures.Future' if concurrent else 'tinker APIFuture'}, "
            "not on its result.",
            "Call `.result()` first (e.g. `fut.result().metrics`)." if not concurrent else "Call `.result()` first.",
        )

    def visit_Await(self, node: cst.Await) -> None:
        inner = node.expression
        if isinstance(inner, cst.Call):
            method = self.sdk_method(inner)
            if method in AWAIT_SYNC:
                fixable = method != "create_rest_client"
                self.ctx.report(
                    "MINT005",
                    node,
                    f"`await` on `{method}(...)`, which in tinker 0.22.0 "
                    + (
                        "returns a concurrent.futures.Future that cannot be awaited."
                        if method in ("sample", "compute_logprobs")
                        else "blocks and returns its value (tinker 0.38 style)."
                    ),
                    f"Use `await ...{method}_async(...)`." if fixable else "Drop the `await`.",
                    edit=_rename_to_async if fixable else None,
                    edit_node=inner.func,
                )
                return
        kind = self.kind_of(inner)
        if kind is not None and kind.what.startswith("CF:"):
            self.ctx.report(
                "MINT005",
                node,
                "`await` on the concurrent.futures.Future that `sample()`/`compute_logprobs()` returned; "
                "it cannot be awaited.",
                "Use `await sampling_client.sample_async(...)`, or `await asyncio.wrap_future(fut)`.",
            )

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        module = dotted(node.module) if node.module is not None else None
        if module not in SDK_EXPORTERS or isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            name = dotted(alias.name)
            if name in NEWER_NAMES:
                self.ctx.report("MINT011", alias, f"`{name}` is not in tinker 0.22.0 (it arrived in 0.38).")

    def leave_Attribute(self, original_node: cst.Attribute) -> None:
        # `tinker.DimuonParams`, `types.OptimizerConfig`: module attributes that 0.22.0 lacks
        if original_node.attr.value in NEWER_NAMES - {"RestClient"}:
            qual = self.ctx.qualname(original_node)
            if qual is not None and qual.rsplit(".", 1)[0] in SDK_EXPORTERS:
                self.ctx.report(
                    "MINT011", original_node, f"`{original_node.attr.value}` is not in tinker 0.22.0 (it arrived in 0.38)."
                )


def _is_raw_list(value: cst.BaseExpression) -> bool:
    if isinstance(value, (cst.List, cst.ListComp)):
        return True
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, (cst.Multiply, cst.Add)):
        return _is_raw_list(value.left) or _is_raw_list(value.right)
    if isinstance(value, cst.Call):
        if dotted(value.func) == "list":
            return True
        if isinstance(value.func, cst.Attribute) and value.func.attr.value == "tolist":
            return True
    return False


def _returned_datums(ctx: LintContext, function: cst.FunctionDef) -> list[cst.Call]:
    found: list[cst.Call] = []

    class Returns(cst.CSTVisitor):
        def visit_Return(self, node: cst.Return) -> None:
            if isinstance(node.value, cst.Call) and ctx.sdk_symbol(node.value.func, "Datum"):
                found.append(node.value)

    function.visit(Returns())
    return found


def _loss_to_metrics(node: cst.CSTNode) -> cst.CSTNode:
    assert isinstance(node, cst.Attribute)
    return cst.Subscript(
        value=cst.Attribute(value=node.value, attr=cst.Name("metrics")),
        slice=[cst.SubscriptElement(slice=cst.Index(value=cst.SimpleString('"loss:sum"')))],
        lpar=node.lpar,
        rpar=node.rpar,
    )


def _rename_to_async(node: cst.CSTNode) -> cst.CSTNode:
    assert isinstance(node, cst.Attribute)
    return node.with_changes(attr=cst.Name(node.attr.value + "_async"))


def visitor(ctx: LintContext) -> SdkRules:
    return SdkRules(ctx)
