"""Training traps: code that runs on MinT but trains the wrong thing, slowly, or not at all
after a restart (api_facts §2.7, §2.9, §3.2, §8)."""

import builtins
import re

import libcst as cst

from mint_migrate.lint.context import (
    LintContext,
    argument,
    dotted,
    keyword,
    last_name,
    normalized_code,
    number_value,
    positional,
)
from mint_migrate.lint.flow import FlowVisitor, base_method
from mint_migrate.lint.registry import Rule, register
from mint_migrate.sdk_facts import LORA_LR_FACTOR, LORA_LR_FLOOR, LORA_LR_RULE, LORA_LR_TYPICAL, rate_text


def _span(kind: str) -> str:
    low, high = LORA_LR_TYPICAL[kind]
    return f"{rate_text(low)}..{rate_text(high)}"


SMALL_FANOUT = 64  # a comprehension over range(<= this literal) is a bounded group, not a flood
ARRAY_WRAPPERS = {"array", "asarray", "tensor", "as_tensor", "from_numpy", "from_torch", "TensorData", "list",
                  "LongTensor", "FloatTensor", "tuple"}
SAMPLING_ASYNC = {"sample_async", "compute_logprobs_async"}
FROM_STATE = {"create_training_client_from_state", "create_training_client_from_state_with_optimizer"}

register(
    Rule(
        id="MINT020",
        name="no-next-token-shift",
        severity="error",
        family="training",
        summary="`model_input` and `target_tokens` are built from the same tokens: nothing to predict.",
        what="A `Datum` whose `model_input` (`ModelInput.from_ints(X)`) and `target_tokens` come "
        "from the same expression with the same slice (both `tokens`, or both `tokens[:-1]`), "
        "followed through names assigned in the function; also the shift done backwards "
        "(input `tokens[1:]`, targets `tokens[:-1]`).",
        why="Position i of `model_input` predicts target i. With identical sequences the model "
        "learns to copy its input: the loss drops fast to near zero and the model is useless. "
        "Nothing errors.",
        fix="Shift by one: `input = tokens[:-1]`, `target = tokens[1:]` (and the weights `[1:]` too).",
        bad="types.Datum(model_input=types.ModelInput.from_ints(tokens),\n"
        "            loss_fn_inputs={\"target_tokens\": tokens, \"weights\": weights})",
        good="types.Datum(model_input=types.ModelInput.from_ints(tokens[:-1]),\n"
        "            loss_fn_inputs={\"target_tokens\": tokens[1:], \"weights\": weights[1:]})",
    )
)
register(
    Rule(
        id="MINT021",
        name="weights-not-shifted",
        severity="error",
        family="training",
        summary="`target_tokens` is shifted (`[1:]`) but the weights that go with it are not.",
        what="A `Datum` whose `target_tokens` is `X[1:]` while its `weights` is an unsliced (or "
        "`[:-1]`) value that parallels X: unpacked from the same call as X "
        "(`tokens, weights = build(...)`), a sibling field of the same object "
        "(`ex[\"tokens\"]` / `ex[\"weights\"]`), or built from `len(X)`.",
        why="Weight i must belong to target i. Unshifted weights are off by one: the prompt's last "
        "token is trained and the completion's last token is not, or, with a length mismatch, the "
        "server rejects the batch.",
        fix="Slice the weights exactly like the targets: `weights[1:]`.",
        bad="tokens, weights = build_example(row)\n"
        "datum = types.Datum(model_input=types.ModelInput.from_ints(tokens[:-1]),\n"
        "                    loss_fn_inputs={\"target_tokens\": tokens[1:], \"weights\": weights})",
        good="tokens, weights = build_example(row)\n"
        "datum = types.Datum(model_input=types.ModelInput.from_ints(tokens[:-1]),\n"
        "                    loss_fn_inputs={\"target_tokens\": tokens[1:], \"weights\": weights[1:]})",
    )
)
register(
    Rule(
        id="MINT022",
        name="unbounded-sampling-gather",
        severity="warning",
        family="training",
        summary="`asyncio.gather` over every sampling request at once, with no bound.",
        what="`asyncio.gather(*...)` over a comprehension or an appended list of "
        "`sample_async(...)` / `compute_logprobs_async(...)` calls (directly, through "
        "`create_task`, or through a local `async def` that has no `async with` limiter). A "
        "comprehension over `range(n)` with a literal n <= 64 (one group) is not flagged.",
        why="Each request holds prompt and response bytes in flight; thousands at once hit MinT's "
        "rate limits (429 back-off), exhaust client memory and starve the training calls of "
        "their clock cycles. The SDK's own 400-dispatch cap does not bound your memory.",
        fix="Bound the fan-out: an `asyncio.Semaphore` in the per-request coroutine "
        "(`async with sem: return await sc.sample_async(...)`) or a sliding window of in-flight tasks.",
        bad="results = await asyncio.gather(*[sc.sample_async(prompt=p, num_samples=8, sampling_params=sp)\n"
        "                                   for p in prompts])",
        good="sem = asyncio.Semaphore(32)\n\nasync def sample_one(p):\n    async with sem:\n"
        "        return await sc.sample_async(prompt=p, num_samples=8, sampling_params=sp)\n\n"
        "results = await asyncio.gather(*[sample_one(p) for p in prompts])",
    )
)
register(
    Rule(
        id="MINT023",
        name="lora-lr-in-full-finetune-range",
        severity="warning",
        family="training",
        summary=f"A LoRA learning rate below {rate_text(LORA_LR_FLOOR)}: the range of a full fine-tune.",
        what=f"`AdamParams(learning_rate=X)` where X is a number below {rate_text(LORA_LR_FLOOR)}: a literal, or a "
        "name, argparse default or config-class field that holds one.",
        why=f"MinT trains LoRA adapters. A LoRA learning rate is {LORA_LR_RULE} (tinker-cookbook's "
        "get_lora_lr_over_full_finetune_lr; Tinker's older LoRA primer says 20 to 100 times); the "
        "1e-6..5e-6 values of TRL, verl and OpenRLHF configs make the adapter barely move. Typical MinT "
        f"values are {_span('sft')} for SFT and {_span('rl')} for RL.",
        fix=f"Multiply the source framework's learning rate by {LORA_LR_FACTOR} (at least {rate_text(LORA_LR_FLOOR)}); "
        "start from 2e-4 for SFT or 4e-5 for RL and tune.",
        bad="adam = types.AdamParams(learning_rate=1e-6)",
        good="adam = types.AdamParams(learning_rate=2e-4)",
    )
)
register(
    Rule(
        id="MINT024",
        name="resume-from-state",
        severity="error",
        family="training",
        summary="`create_training_client_from_state*` 404s on MinT; resume with a fresh client + "
        "`load_state_with_optimizer`.",
        what="A call to `create_training_client_from_state`, "
        "`create_training_client_from_state_with_optimizer` or their `_async` twins.",
        why="These first call `/api/v1/weights_info` to learn the base model and rank, which MinT "
        "answers with 404. Tinker 0.38 recommends them, so code from the latest docs and "
        "tinker-cookbook resumes this way.",
        fix="Create the client as for a fresh run (same base model, same rank and train_* flags), "
        "then `training_client.load_state_with_optimizer(path).result()`.",
        bad="training_client = service_client.create_training_client_from_state_with_optimizer(args.resume)",
        good="training_client = service_client.create_lora_training_client(base_model=args.base_model, rank=args.rank)\n"
        "training_client.load_state_with_optimizer(args.resume).result()",
        autofix="When the call is a plain `name = ...` statement and the same function (or module) "
        "creates the fresh client with `create_lora_training_client(...)` from names available at "
        "that point, rewrites the statement into those two lines, with the same arguments. "
        "Otherwise the finding stays for a person to fix.",
    )
)
register(
    Rule(
        id="MINT025",
        name="load-state-weights-only",
        severity="warning",
        family="training",
        summary="`load_state()` restores weights only; a resume also needs the optimizer state.",
        what="A `load_state(...)` / `load_state_async(...)` call on a training client.",
        why="In tinker 0.22.0 `load_state` loads the LoRA weights and resets Adam's moments (the "
        "old Tinker save-load page says otherwise). A resumed run then takes full-size steps from "
        "cold moments and its loss jumps. It is right only for starting from trained weights.",
        fix="For a resume use `load_state_with_optimizer(path).result()`; keep `load_state` only "
        "to initialise from weights (e.g. RL from an SFT checkpoint).",
        bad="training_client.load_state(checkpoint).result()  # resume",
        good="training_client.load_state_with_optimizer(checkpoint).result()",
    )
)
register(
    Rule(
        id="MINT026",
        name="ephemeral-sampler-name",
        severity="warning",
        family="training",
        summary="`save_weights_and_get_sampling_client(name=...)` saves nothing durable.",
        what="A `name` passed to `save_weights_and_get_sampling_client(...)` or its `_async` twin.",
        why="In 0.22.0 the name is deprecated and ignored: the sampler weights are ephemeral and "
        "there is no path to evaluate, share or download later.",
        fix="For a durable checkpoint: `path = tc.save_weights_for_sampler(name).result().path`, then "
        "`service_client.create_sampling_client(model_path=path)`; call "
        "`save_weights_and_get_sampling_client()` without a name for a throwaway sampler.",
        bad="sampler = training_client.save_weights_and_get_sampling_client(name=f\"step-{step}\")",
        good="path = training_client.save_weights_for_sampler(f\"step-{step}\").result().path\n"
        "sampler = service_client.create_sampling_client(model_path=path)",
    )
)


class FreshClients(cst.BatchableCSTVisitor):
    """Pre-pass for the resume codemod: `create_lora_training_client` calls with their function,
    and the names each function (and the module) binds, with the line they are bound on."""

    def __init__(self, ctx: LintContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.functions: list[cst.FunctionDef | None] = [None]
        self.fresh: list[tuple[cst.FunctionDef | None, cst.Call]] = []
        # id(function or 0) -> name -> the first node binding it (lines are looked up only if a
        # resume is to be rewritten: positions cost a code generation pass)
        self.bound: dict[int, dict[str, cst.CSTNode]] = {}

    def _owner(self) -> int:
        return id(self.functions[-1]) if self.functions[-1] is not None else 0

    def _bind(self, name: str, node: cst.CSTNode) -> None:
        self.bound.setdefault(self._owner(), {}).setdefault(name, node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._bind(node.name.value, node)
        self.functions.append(node)
        params = node.params
        for param in [*params.posonly_params, *params.params, *params.kwonly_params]:
            self._bind(param.name.value, node)
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                self._bind(star.name.value, node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.functions.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._bind(node.name.value, node)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._bind_target(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind_target(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._bind_target(node.target)

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        if node.asname is not None and isinstance(node.asname.name, cst.Name):
            self._bind(node.asname.name.value, node)
        else:
            name = dotted(node.name)
            if name:
                self._bind(name.split(".")[0], node)

    def _bind_target(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            self._bind(target.value, target)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind_target(element.value)

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in (
            "create_lora_training_client",
            "create_lora_training_client_async",
        ):
            self.fresh.append((self.functions[-1], node))


class TrainingRules(FlowVisitor):
    """Reports MINT020-MINT026."""

    def __init__(self, ctx: LintContext) -> None:
        super().__init__(ctx)
        self.fresh = next(c for c in ctx.collected if isinstance(c, FreshClients))
        self.functions: list[cst.FunctionDef | None] = [None]
        self._statement_of: dict[int, cst.SimpleStatementLine] = {}

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        self.functions.append(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.functions.pop()
        super().leave_FunctionDef(original_node)

    # --- Datum alignment ----------------------------------------------------------------

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if ctx.sdk_symbol(node.func, "Datum"):
            self._alignment(node)
        if ctx.sdk_symbol(node.func, "AdamParams"):
            self._learning_rate(node)
        if ctx.qualname(node.func) == "asyncio.gather":
            self._gather(node)
        method = self.sdk_method(node)
        if method is None:
            return
        base = base_method(method)
        if base in FROM_STATE:
            self._from_state(node, method)
        elif base == "load_state":
            ctx.report(
                "MINT025",
                node,
                f"`{method}` restores the weights only; Adam's moments start cold. Fine to start from "
                "trained weights, wrong for a resume.",
                "For a resume use `load_state_with_optimizer(path).result()`.",
            )
        elif base == "save_weights_and_get_sampling_client":
            name = argument(node, 0, "name")
            if name is not None and not (isinstance(name, cst.Name) and name.value == "None"):
                ctx.report(
                    "MINT026",
                    name,
                    f"The name passed to `{method}` is ignored in tinker 0.22.0; the sampler is ephemeral "
                    "and has no durable path.",
                    "Use `save_weights_for_sampler(name).result().path` + `create_sampling_client(model_path=path)` "
                    "for a durable checkpoint, or drop the name.",
                )

    def _tokens_of_model_input(self, expr: cst.BaseExpression | None) -> cst.BaseExpression | None:
        expr = self.resolve(expr, depth=3)
        if not isinstance(expr, cst.Call):
            return None
        if last_name(expr.func) == "from_ints":
            return argument(expr, 0, "tokens")
        if self.ctx.sdk_symbol(expr.func, "ModelInput"):  # ModelInput(chunks=[EncodedTextChunk(tokens=X)])
            chunks = self.resolve(argument(expr, 0, "chunks"), depth=2)
            if isinstance(chunks, cst.List) and len(chunks.elements) == 1:
                chunk = chunks.elements[0].value
                if isinstance(chunk, cst.Call) and last_name(chunk.func) == "EncodedTextChunk":
                    return argument(chunk, 0, "tokens")
        return None

    def _unwrap(self, expr: cst.BaseExpression | None, follow_names: bool = True) -> cst.BaseExpression | None:
        """Strip array conversions: `np.array(x, dtype=...)`, `torch.tensor(x)`, `x.tolist()`,
        `TensorData.from_numpy(np.array(x))` -> x; names followed to what they hold."""
        for _ in range(6):
            if expr is None:
                return None
            if follow_names:
                expr = self.resolve(expr, depth=3)
            if isinstance(expr, cst.Call):
                if last_name(expr.func) in ARRAY_WRAPPERS:
                    inner = argument(expr, 0, "data")
                    if inner is not None:
                        expr = inner
                        continue
                if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in ("tolist", "long", "float") and not expr.args:
                    expr = expr.func.value
                    continue
            return expr
        return expr

    def _shape(self, expr: cst.BaseExpression) -> tuple[str, tuple[str, str] | None, cst.BaseExpression]:
        """(base code, (lower, upper) slice or None, base node) of a token sequence expression."""
        module = self.ctx.module
        if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Slice):
            sl = expr.slice[0].slice
            if sl.step is None:
                lower = normalized_code(module, sl.lower) if sl.lower is not None else ""
                upper = normalized_code(module, sl.upper) if sl.upper is not None else ""
                return normalized_code(module, expr.value), (lower, upper), expr.value
        return normalized_code(module, expr), None, expr

    def _alignment(self, datum: cst.Call) -> None:
        tokens = self._unwrap(self._tokens_of_model_input(argument(datum, 0, "model_input")))
        inputs = {key: (key_node, value) for key_node, key, value in self.datum_inputs(datum)}
        if tokens is None or "target_tokens" not in inputs:
            return
        target_key, target_value = inputs["target_tokens"]
        target = self._unwrap(target_value)
        if target is None:
            return
        in_base, in_slice, _ = self._shape(tokens)
        tg_base, tg_slice, tg_node = self._shape(target)
        if in_base == tg_base and in_slice == tg_slice:
            shown = self.ctx.code(target).strip()
            self.ctx.report(
                "MINT020",
                target_key,
                f"model_input and target_tokens are both `{shown}`: each position is trained to predict "
                "itself, not the next token.",
                "Use `ModelInput.from_ints(tokens[:-1])` and `target_tokens = tokens[1:]` (weights `[1:]` too).",
            )
            return
        if in_base == tg_base and in_slice == ("1", "") and tg_slice == ("", "-1"):
            self.ctx.report(
                "MINT020",
                target_key,
                "The shift is backwards: model_input is `[1:]` and target_tokens `[:-1]`, so each position "
                "is trained to predict the previous token.",
                "Swap them: input `tokens[:-1]`, target `tokens[1:]`.",
            )
            return
        if tg_slice == ("1", "") and "weights" in inputs:
            self._weights(inputs["weights"], tg_node)

    def _weights(self, weights: tuple[cst.CSTNode, cst.BaseExpression], target_base: cst.BaseExpression) -> None:
        key_node, value = weights
        named = self._unwrap(value, follow_names=False)
        held = self._unwrap(value)
        if named is None or held is None:
            return
        _, w_slice, w_base = self._shape(held)
        if w_slice == ("1", ""):
            return
        if w_slice not in (None, ("", "-1")):
            return
        parallel = self._parallel(named, held if w_slice is None else w_base, target_base)
        if not parallel:
            return
        wrong_way = w_slice == ("", "-1")
        self.ctx.report(
            "MINT021",
            key_node,
            f"target_tokens is `{self.ctx.code(target_base).strip()}[1:]` but the weights "
            + ("are sliced `[:-1]`" if wrong_way else "are not shifted")
            + f" ({parallel}): weight i no longer belongs to target i.",
            "Slice the weights like the targets: `weights[1:]`.",
        )

    def _parallel(self, named: cst.BaseExpression, held: cst.BaseExpression, target_base: cst.BaseExpression) -> str | None:
        """Why the weights run parallel to the unshifted token sequence, or None if unknown."""
        module = self.ctx.module
        w_key, t_key = dotted(named), dotted(target_base)
        if w_key and t_key:
            group = self.lookup_group(w_key)
            if group is not None and group == self.lookup_group(t_key):
                return "both come from one unpacking of the same call"
        for w, t in ((held, target_base), (named, target_base)):
            if isinstance(w, cst.Subscript) and isinstance(t, cst.Subscript):
                if normalized_code(module, w.value) == normalized_code(module, t.value) and _is_key(w) and _is_key(t):
                    return "sibling fields of the same example"
            if isinstance(w, cst.Attribute) and isinstance(t, cst.Attribute):
                if normalized_code(module, w.value) == normalized_code(module, t.value):
                    return "sibling fields of the same example"
        if isinstance(target_base, cst.Name):
            name = re.escape(target_base.value)
            code = normalized_code(module, held)
            if f"{target_base.value}[" in code or re.search(rf"len\({name}\)-1", code):
                return None
            if re.search(rf"len\({name}\)", code) or re.search(
                rf"(ones_like|zeros_like|full_like|ones|zeros)\({name}\b", code
            ):
                return f"built from len({target_base.value})"
        return None

    # --- learning rate ------------------------------------------------------------------

    def _learning_rate(self, node: cst.Call) -> None:
        given = keyword(node, "learning_rate")
        if given is None:
            return
        held = self.resolve(given.value)
        value = number_value(held, self.ctx.module) if held is not None else None
        if value is None or not 0 < value < LORA_LR_FLOOR:
            return
        via = ""
        if held is not given.value:
            via = f" (`{self.ctx.code(given.value).strip()}` = {self.ctx.code(held).strip()}, line {self.ctx.position(held)[0]})"
        self.ctx.report(
            "MINT023",
            given,
            f"LoRA learning rate {value:g}{via} is in the full fine-tune range; MinT trains LoRA adapters, "
            f"whose rate is {LORA_LR_RULE}.",
            f"Try {max(value * LORA_LR_FACTOR, LORA_LR_FLOOR):g} (typical MinT: {_span('sft')} SFT, {_span('rl')} RL).",
        )

    # --- gather -------------------------------------------------------------------------

    def _gather(self, node: cst.Call) -> None:
        for arg in node.args:
            if arg.star != "*":
                continue
            for element, bounded in self._fanout(arg.value):
                if not bounded and self._unbounded_sampling(element):
                    self.ctx.report(
                        "MINT022",
                        node,
                        "asyncio.gather starts every sampling request at once, with no limit on how many "
                        "are in flight.",
                        "Wrap each request in `async with semaphore:` (e.g. asyncio.Semaphore(32)) or use a "
                        "sliding window of in-flight tasks.",
                    )
                    return

    def _fanout(self, expr: cst.BaseExpression) -> list[tuple[cst.BaseExpression, bool]]:
        """(element expression, bounded?) for what `*expr` spreads."""
        out: list[tuple[cst.BaseExpression, bool]] = []
        key = dotted(expr)
        if key is not None:
            out += [(e, False) for e in self.lookup_appends(key)]
            bound = self.lookup_expr(key)
            if bound is not None:
                expr = bound
        if isinstance(expr, (cst.ListComp, cst.GeneratorExp)):
            out.append((expr.elt, self._small_range(expr.for_in)))
        return out

    def _small_range(self, comp: cst.CompFor) -> bool:
        iterator = comp.iter
        if isinstance(iterator, cst.Call) and dotted(iterator.func) == "range" and len(positional(iterator)) == 1:
            held = self.resolve(positional(iterator)[0].value)
            n = number_value(held, self.ctx.module) if held is not None else None
            return n is not None and n <= SMALL_FANOUT and comp.inner_for_in is None
        return False

    def _unbounded_sampling(self, element: cst.BaseExpression) -> bool:
        element = self.resolve(element, depth=2) or element
        while isinstance(element, cst.Call) and last_name(element.func) in ("create_task", "ensure_future"):
            inner = argument(element, 0, "coro")
            if inner is None:
                break
            element = inner
        if not isinstance(element, cst.Call):
            return False
        if isinstance(element.func, cst.Attribute) and element.func.attr.value in SAMPLING_ASYNC:
            return True
        if dotted(element.func) in ("asyncio.wrap_future", "wrap_future"):
            inner = argument(element, 0, "future")
            return isinstance(inner, cst.Call) and last_name(inner.func) in ("sample", "compute_logprobs")
        if isinstance(element.func, cst.Name):
            helper = self.lookup_def(element.func.value)
            if helper is not None and helper.asynchronous is not None:
                return _samples_without_limit(helper)
        return False

    # --- resume -------------------------------------------------------------------------

    def _from_state(self, node: cst.Call, method: str) -> None:
        edit = self._resume_codemod(node, method)
        self.ctx.report(
            "MINT024",
            node,
            f"`{method}` calls /api/v1/weights_info, which MinT answers with 404; the run cannot resume this way.",
            "Create the client as for a fresh run (same base model and rank), then "
            "`training_client.load_state_with_optimizer(path).result()`."
            + ("" if edit else " (not fixed automatically: no fresh-client call with the same arguments in reach)"),
            edit=edit[1] if edit else None,
            edit_node=edit[0] if edit else None,
        )

    def _resume_codemod(self, node: cst.Call, method: str):
        """(statement to replace, edit) when the resume can be rewritten safely, else None."""
        statement = self._statement_of.get(id(node))
        if statement is None:
            return None
        assign = statement.body[0]
        target = assign.targets[0].target
        path = argument(node, 0, "path")
        if path is None:
            return None
        extra_load: list[str] = []
        extra_create: list[str] = []
        for arg in node.args:
            if arg.keyword is None:
                continue
            name = arg.keyword.value
            code = self.ctx.code(arg.value).strip()
            if name == "weights_access_token":
                extra_load.append(f"weights_access_token={code}")
            elif name == "user_metadata":
                extra_create.append(f"user_metadata={code}")
            elif name != "path":
                return None
        if len(positional(node)) != (0 if keyword(node, "path") else 1) or any(a.star for a in node.args):
            return None
        template = self._fresh_template(node)
        if template is None:
            return None
        receiver = self.ctx.code(node.func.value).strip()
        name = self.ctx.code(target).strip()
        path_code = self.ctx.code(path).strip()
        template_args = [  # rebuilt from the values, so comments inside the original call stay behind
            (f"{a.keyword.value}=" if a.keyword is not None else "") + self.ctx.code(a.value).strip()
            for a in template.args
        ]
        if extra_create and keyword(template, "user_metadata") is None:
            template_args += extra_create
        is_async = method.endswith("_async")
        create = f"{receiver}.create_lora_training_client{'_async' if is_async else ''}({', '.join(template_args)})"
        load_args = ", ".join([path_code, *extra_load])
        lines = (
            [f"{name} = await {create}", f"await {name}.load_state_with_optimizer({load_args})"]
            if is_async
            else [f"{name} = {create}", f"{name}.load_state_with_optimizer({load_args}).result()"]
        )
        try:
            new = [cst.parse_statement(line + "\n") for line in lines]
        except cst.ParserSyntaxError:
            return None

        def edit(updated: cst.CSTNode) -> cst.FlattenSentinel:
            first = new[0].with_changes(leading_lines=updated.leading_lines)
            return cst.FlattenSentinel([first, *new[1:]])

        return statement, edit

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        # `name = [await] sc.create_training_client_from_state*(...)` alone on its line
        if len(node.body) != 1 or not isinstance(node.body[0], cst.Assign):
            return
        assign = node.body[0]
        if len(assign.targets) != 1 or dotted(assign.targets[0].target) is None:
            return
        value = assign.value.expression if isinstance(assign.value, cst.Await) else assign.value
        if isinstance(value, cst.Call):
            method = value.func.attr.value if isinstance(value.func, cst.Attribute) else None
            if method and base_method(method) in FROM_STATE:
                if isinstance(assign.value, cst.Await) != method.endswith("_async"):
                    return
                self._statement_of[id(value)] = node

    def _fresh_template(self, node: cst.Call) -> cst.Call | None:
        """The fresh-client call in the same function whose arguments can be reused here."""
        here = self.functions[-1]
        candidates = [call for owner, call in self.fresh.fresh if owner is here]
        if not candidates:
            return None
        codes = {normalized_code(self.ctx.module, c).replace("_async(", "(") for c in candidates}
        if len(codes) != 1:
            return None
        template = candidates[0]
        if any(a.star for a in template.args) or argument(template, 0, "base_model") is None:
            return None
        line = self.ctx.position(node)[0]
        local = self.fresh.bound.get(id(here) if here is not None else 0, {})
        module_names = self.fresh.bound.get(0, {})
        for name in _names_in(template):
            if name in local and self.ctx.position(local[name])[0] <= line:
                continue
            if here is not None and name in module_names:
                continue
            if hasattr(builtins, name):
                continue
            return None
        return template


def _is_key(node: cst.Subscript) -> bool:
    return len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index)


def _names_in(call: cst.Call) -> set[str]:
    """Free names the call's arguments read (the base of `args.rank` is `args`)."""
    names: set[str] = set()

    class Names(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> bool:
            node.value.visit(self)
            return False

        def visit_Name(self, node: cst.Name) -> None:
            names.add(node.value)

        def visit_Arg(self, node: cst.Arg) -> bool:
            node.value.visit(self)
            return False

    for arg in call.args:
        arg.visit(Names())
    return names


def _samples_without_limit(function: cst.FunctionDef) -> bool:
    """An async helper that awaits a sampling call with no `async with` (semaphore) around it."""
    found = {"sampling": False, "limited": False}

    class Body(cst.CSTVisitor):
        def visit_With(self, node: cst.With) -> None:
            if node.asynchronous is not None:
                found["limited"] = True

        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Attribute):
                if node.func.attr.value in SAMPLING_ASYNC:
                    found["sampling"] = True
                if node.func.attr.value == "acquire":
                    found["limited"] = True

    function.body.visit(Body())
    return found["sampling"] and not found["limited"]


def visitor(ctx: LintContext) -> TrainingRules:
    return TrainingRules(ctx)
