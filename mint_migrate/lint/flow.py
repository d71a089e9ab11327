"""Simple, explicit data flow within a function: what an SDK call returns and which names hold it.

A `FlowVisitor` walks the file in source order. When it leaves an assignment it records, for
the names bound there, the *kind* of the value (a training client, an APIFuture of a
ForwardBackwardOutput, a concurrent Future of a SampleResponse, ...) and the expression itself.
Rules ask `kind_of(expr)` at the moment they see a use, so `fb = tc.forward_backward(...)`
followed by `fb.metrics` is known to touch a future, and `fb = fb.result()` rebinds it. Nothing
is guessed: a name whose value came from anything else has no kind, and rules stay silent.

Kinds (strings):
  "TC" training client, "SC" sampling client, "SVC" service client, "REST" rest client,
  "APIF:<r>" tinker APIFuture of result r, "CF:<r>" concurrent.futures.Future of result r,
  "CORO:<k>" an un-awaited coroutine that yields kind k, and the results
  "fb" ForwardBackwardOutput, "optim", "save" (has .path), "load", "sample" SampleResponse,
  "logprobs", "caps", "info".
"""

from dataclasses import dataclass, field

import libcst as cst

from mint_migrate.lint.context import LintContext, argument, call_method, dotted, keyword, positional, string_value
from mint_migrate.sdk_facts import LATER_SDK_LOSSES, LOSS_NAMES

# Methods of the 0.22.0 clients and what their sync form returns (api_facts §2.1).
SYNC_RESULT: dict[str, str] = {
    "create_lora_training_client": "TC",
    "create_training_client_from_state": "TC",
    "create_training_client_from_state_with_optimizer": "TC",
    "create_sampling_client": "SC",
    "save_weights_and_get_sampling_client": "SC",
    "create_rest_client": "REST",
    "get_server_capabilities": "caps",
    "get_info": "info",
    "forward": "APIF:fb",
    "forward_backward": "APIF:fb",
    "forward_backward_custom": "APIF:fb",
    "optim_step": "APIF:optim",
    "save_state": "APIF:save",
    "save_weights_for_sampler": "APIF:save",
    "load_state": "APIF:load",
    "load_state_with_optimizer": "APIF:load",
    "sample": "CF:sample",
    "compute_logprobs": "CF:logprobs",
}
# The `_async` twins: one await gives the client or value, two for the training calls' futures.
ASYNC_RESULT: dict[str, str] = {
    f"{name}_async": "CORO:" + (result[3:] if result.startswith("CF:") else result)
    for name, result in SYNC_RESULT.items()
    if name != "create_rest_client"
}
# Which receiver each method belongs to.
RECEIVER: dict[str, str] = {
    "create_lora_training_client": "SVC",
    "create_training_client_from_state": "SVC",
    "create_training_client_from_state_with_optimizer": "SVC",
    "create_sampling_client": "SVC|TC",
    "save_weights_and_get_sampling_client": "TC",
    "create_rest_client": "SVC",
    "get_server_capabilities": "SVC",
    "get_info": "TC",
    "forward": "TC",
    "forward_backward": "TC",
    "forward_backward_custom": "TC",
    "optim_step": "TC",
    "save_state": "TC",
    "save_weights_for_sampler": "TC",
    "load_state": "TC",
    "load_state_with_optimizer": "TC",
    "sample": "SC",
    "compute_logprobs": "SC",
}
# Names other libraries use too (torch's forward, random.sample, accelerate's save_state ...):
# these count as SDK calls only with a known receiver or SDK-shaped arguments.
GENERIC_METHODS = {"forward", "sample", "compute_logprobs", "save_state", "load_state", "get_info", "optim_step"}

TRAINING_CALLS = {
    "forward",
    "forward_backward",
    "forward_backward_custom",
    "optim_step",
    "save_state",
    "save_weights_for_sampler",
    "load_state",
    "load_state_with_optimizer",
}
# What a string loss argument must look like for an unknown receiver's `.forward(x, "...")` to be
# the SDK's: a 0.22.0 loss name or one people try to use on it.
LOSS_LIKE_NAMES = {*LOSS_NAMES, *LATER_SDK_LOSSES, "grpo", "dpo", "kl", "reverse_kl"}
ANNOTATION_KINDS = {"TrainingClient": "TC", "SamplingClient": "SC", "ServiceClient": "SVC", "RestClient": "REST"}


@dataclass(frozen=True)
class Kind:
    what: str
    origin: str = ""  # "single-await" when an APIFuture came from `await x.*_async(...)`


@dataclass
class Scope:
    kind: str  # module | class | function
    kinds: dict[str, Kind] = field(default_factory=dict)
    exprs: dict[str, cst.BaseExpression | None] = field(default_factory=dict)
    groups: dict[str, int] = field(default_factory=dict)  # names bound by one tuple unpacking
    appends: dict[str, list[cst.BaseExpression]] = field(default_factory=dict)
    defs: dict[str, cst.FunctionDef] = field(default_factory=dict)
    node: cst.CSTNode | None = None


def base_method(method: str) -> str:
    return method[: -len("_async")] if method.endswith("_async") else method


class FlowVisitor(cst.BatchableCSTVisitor):
    def __init__(self, ctx: LintContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.scopes: list[Scope] = [Scope("module", node=ctx.module)]

    # --- scopes -------------------------------------------------------------------------

    @property
    def scope(self) -> Scope:
        return self.scopes[-1]

    def function_scope(self) -> Scope:
        for scope in reversed(self.scopes):
            if scope.kind in ("function", "module"):
                return scope
        return self.scopes[0]

    def _visible(self, key: str) -> list[Scope]:
        """Scopes searched for `key`: the innermost function (or class body), then for `self.x`
        the enclosing class, then the module."""
        current = self.scopes[-1]
        order = [current]
        if key.startswith("self.") or key.startswith("cls."):
            order += [s for s in reversed(self.scopes[:-1]) if s.kind == "class"][:1]
        else:  # closures see the enclosing functions' names
            order += [s for s in reversed(self.scopes[1:-1]) if s.kind == "function"]
        order.append(self.scopes[0])
        return order

    def lookup_kind(self, key: str) -> Kind | None:
        for scope in self._visible(key):
            if key in scope.kinds or key in scope.exprs:
                return scope.kinds.get(key)
        return None

    def lookup_expr(self, key: str) -> cst.BaseExpression | None:
        for scope in self._visible(key):
            if key in scope.exprs:
                return scope.exprs[key]
        return None

    def lookup_group(self, key: str) -> int | None:
        for scope in self._visible(key):
            if key in scope.exprs:
                return scope.groups.get(key)
        return None

    def lookup_appends(self, key: str) -> list[cst.BaseExpression]:
        for scope in self._visible(key):
            if key in scope.exprs:
                return scope.appends.get(key, [])
        return []

    def _binding_scope(self, key: str) -> Scope:
        if key.startswith(("self.", "cls.")):
            for scope in reversed(self.scopes):
                if scope.kind == "class":
                    return scope
        return self.scope

    def bind(self, key: str, expr: cst.BaseExpression | None, kind: Kind | None, group: int | None = None) -> None:
        scope = self._binding_scope(key)
        scope.exprs[key] = expr
        scope.appends.pop(key, None)
        if kind is None:
            scope.kinds.pop(key, None)
        else:
            scope.kinds[key] = kind
        if group is None:
            scope.groups.pop(key, None)
        else:
            scope.groups[key] = group

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.scopes.append(Scope("class", node=node))

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.scopes.pop()
        self.bind(original_node.name.value, None, None)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        scope = Scope("function", node=node)
        self.scopes.append(scope)
        params = node.params
        for param in [*params.posonly_params, *params.params, *params.kwonly_params]:
            kind = self._annotation_kind(param.annotation)
            scope.exprs[param.name.value] = None
            if kind:
                scope.kinds[param.name.value] = kind
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                scope.exprs[star.name.value] = None

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.scopes.pop()
        self.bind(original_node.name.value, None, None)
        self.scope.defs[original_node.name.value] = original_node

    def lookup_def(self, name: str) -> cst.FunctionDef | None:
        for scope in self._visible(name):
            if name in scope.defs:
                return scope.defs[name]
        return self.ctx.functions.get(name)

    def _annotation_kind(self, annotation: cst.Annotation | None) -> Kind | None:
        if annotation is None:
            return None
        expr = annotation.annotation
        text = string_value(expr)
        name = text.rsplit(".", 1)[-1] if text else (expr.attr.value if isinstance(expr, cst.Attribute) else None)
        if isinstance(expr, cst.Name):
            name = expr.value
        what = ANNOTATION_KINDS.get(name or "")
        return Kind(what) if what else None

    # --- bindings -----------------------------------------------------------------------

    def leave_Assign(self, original_node: cst.Assign) -> None:
        kind = self.kind_of(original_node.value)
        for target in original_node.targets:
            self._bind_target(target.target, original_node.value, kind, id(original_node))

    def leave_AnnAssign(self, original_node: cst.AnnAssign) -> None:
        key = dotted(original_node.target)
        if key is None:
            return
        if original_node.value is None:
            kind = self._annotation_kind(original_node.annotation)
            self.bind(key, None, kind)
        else:
            self.bind(key, original_node.value, self.kind_of(original_node.value))

    def leave_AugAssign(self, original_node: cst.AugAssign) -> None:
        key = dotted(original_node.target)
        if key:
            self.bind(key, None, None)

    def _bind_target(self, target: cst.BaseExpression, value, kind: Kind | None, group: int) -> None:
        key = dotted(target)
        if key is not None:
            self.bind(key, value, kind)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                inner = element.value
                inner_key = dotted(inner)
                if inner_key is not None:
                    self.bind(inner_key, None, None, group=group)
                else:
                    self._bind_target(inner, None, None, group)

    def visit_For(self, node: cst.For) -> None:
        self._unbind(node.target)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._unbind(node.target)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._unbind(node.asname.name)

    def leave_NamedExpr(self, original_node: cst.NamedExpr) -> None:
        key = dotted(original_node.target)
        if key:
            self.bind(key, original_node.value, self.kind_of(original_node.value))

    def _unbind(self, target: cst.BaseExpression) -> None:
        key = dotted(target)
        if key is not None:
            self.bind(key, None, None)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._unbind(element.value)

    def leave_Call(self, original_node: cst.Call) -> None:
        # `tasks.append(x)`: remembered so a later `gather(*tasks)` can see what was queued
        if call_method(original_node) == "append" and len(original_node.args) == 1:
            key = dotted(original_node.func.value)
            if key is not None:
                for scope in self._visible(key):
                    if key in scope.exprs:
                        scope.appends.setdefault(key, []).append(original_node.args[0].value)
                        break

    # --- value resolution ---------------------------------------------------------------

    def resolve(self, expr: cst.BaseExpression | None, depth: int = 4) -> cst.BaseExpression | None:
        """Follow a name to the expression last assigned to it, and `args.x` / `cfg.x` to the
        argparse default or config-class field default for `x`."""
        while expr is not None and depth > 0:
            depth -= 1
            key = dotted(expr)
            if key is None:
                return expr
            bound = self.lookup_expr(key)
            if bound is not None:
                expr = bound
                continue
            if isinstance(expr, cst.Attribute):
                name = expr.attr.value
                found = self.ctx.argparse_defaults.get(name) or self.ctx.field_defaults.get(name)
                if found is not None:
                    expr = found
                    continue
            return expr
        return expr

    def datum_inputs(self, datum: cst.Call) -> list[tuple[cst.CSTNode, str, cst.BaseExpression]]:
        """(key node, key, value) of a Datum's loss_fn_inputs when it is written out."""
        inputs = self.resolve(argument(datum, 1, "loss_fn_inputs"), depth=2)
        items: list[tuple[cst.CSTNode, str, cst.BaseExpression]] = []
        if isinstance(inputs, cst.Dict):
            for element in inputs.elements:
                if isinstance(element, cst.DictElement):
                    key = string_value(element.key)
                    if key is not None:
                        items.append((element.key, key, element.value))
        elif isinstance(inputs, cst.Call) and dotted(inputs.func) == "dict":
            for arg in inputs.args:
                if arg.keyword is not None:
                    items.append((arg.keyword, arg.keyword.value, arg.value))
        return items

    # --- kinds --------------------------------------------------------------------------

    def kind_of(self, expr: cst.BaseExpression | None) -> Kind | None:
        if expr is None:
            return None
        key = dotted(expr)
        if key is not None:
            return self.lookup_kind(key)
        if isinstance(expr, cst.Await):
            inner = self.kind_of(expr.expression)
            if inner is None:
                return None
            if inner.what.startswith("CORO:"):
                what = inner.what[len("CORO:") :]
                return Kind(what, "single-await" if what.startswith("APIF:") else "")
            if inner.what.startswith(("APIF:", "CF:")):
                # awaiting a concurrent Future is itself an error (MINT005); what the author meant
                # to get is still the result, so later uses are checked against that
                return Kind(inner.what.split(":", 1)[1])
            return None
        if isinstance(expr, cst.Call):
            return self._call_kind(expr)
        return None

    def _call_kind(self, call: cst.Call) -> Kind | None:
        method = call_method(call)
        if method is not None:
            receiver = self.kind_of(call.func.value)
            if method == "result" and receiver and receiver.what.startswith(("APIF:", "CF:")):
                return Kind(receiver.what.split(":", 1)[1])
            if method == "result_async" and receiver and receiver.what.startswith("APIF:"):
                return Kind("CORO:" + receiver.what[len("APIF:") :])
            if method == "future" and receiver and receiver.what.startswith("APIF:"):
                # 0.22.0's training futures are AwaitableConcurrentFutures: .future() is the
                # concurrent.futures.Future underneath, with the same result
                return Kind("CF:" + receiver.what[len("APIF:") :])
            if self.sdk_method(call) is not None:
                what = SYNC_RESULT.get(method) or ASYNC_RESULT.get(method)
                return Kind(what) if what else None
        if self.ctx.sdk_symbol(call.func, "ServiceClient"):
            return Kind("SVC")
        if dotted(call.func) in ("asyncio.wrap_future", "wrap_future"):
            inner = self.kind_of(argument(call, 0, "future"))
            if inner and inner.what.startswith("CF:"):
                return Kind("CORO:" + inner.what[len("CF:") :])
        return None

    def sdk_method(self, call: cst.Call) -> str | None:
        """The 0.22.0 client method `call` invokes (e.g. "forward_backward_async"), or None when
        it is not one: another library's method of the same name, or an unrelated receiver."""
        method = call_method(call)
        if method is None:
            return None
        base = base_method(method)
        if base not in SYNC_RESULT or (method not in SYNC_RESULT and method not in ASYNC_RESULT):
            return None
        receiver = self.kind_of(call.func.value)
        expected = RECEIVER[base].split("|")
        if receiver is not None:
            return method if receiver.what in expected else None
        if base not in GENERIC_METHODS:
            return method
        if not self.ctx.uses_sdk:
            return None
        if base == "forward":  # torch modules have forward(); the SDK's takes a loss name
            loss = string_value(argument(call, 1, "loss_fn"))
            return method if keyword(call, "loss_fn") or loss in LOSS_LIKE_NAMES else None
        if base == "sample":  # random.sample(pop, k); the SDK's takes sampling params
            sdk_shaped = keyword(call, "sampling_params") or keyword(call, "num_samples") or len(positional(call)) >= 3
            return method if sdk_shaped else None
        if base == "optim_step":  # the SDK's takes AdamParams
            given = self.resolve(argument(call, 0, "adam_params"), depth=2)
            is_adam = isinstance(given, cst.Call) and self.ctx.sdk_symbol(given.func, "AdamParams")
            return method if keyword(call, "adam_params") or is_adam else None
        # save_state / load_state / get_info / compute_logprobs: accelerate, torch and others use
        # the same names, so only a receiver known to be a client counts.
        return None
