"""Front-end parameters built from an engine model, so each argument is declared once.

`tool_parameters` turns a pydantic model's fields into keyword parameters for an MCP tool
(MCPServer reads a tool's signature, so the JSON schema keeps each field's type, bounds and
description); `add_flags` / `values_from_flags` do the same for argparse. The scaffold tool and
`mint-migrate scaffold` both take ScaffoldOptions this way.
"""

import argparse
import inspect
import json
import types
import typing
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field
from pydantic.fields import FieldInfo

# ScaffoldOptions fields that are no argument of the scaffold tool or flag of `mint-migrate
# scaffold`: the header is what a migration writes at the top of its train.py.
SCAFFOLD_INTERNAL = ("header",)


def _fields(model: type[BaseModel], exclude: tuple[str, ...]) -> dict[str, FieldInfo]:
    return {name: info for name, info in model.model_fields.items() if name not in exclude}


def tool_parameters(model: type[BaseModel], exclude: tuple[str, ...] = ()) -> list[inspect.Parameter]:
    """One keyword parameter per field, annotated with the field itself (type, bounds, description)."""
    params = []
    for name, info in _fields(model, exclude).items():
        default = inspect.Parameter.empty if info.is_required() else info.get_default(call_default_factory=True)
        # The field's bounds (Ge, Le, ...) and description, without its default (that is the parameter's).
        annotation = Annotated[(info.annotation, *info.metadata, Field(description=info.description))]
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default))
    return params


def with_parameters(fn, params: list[inspect.Parameter]):
    """`fn` (taking **kwargs) presented with `params` as its signature, its return annotation kept."""
    fn.__signature__ = inspect.Signature(params, return_annotation=inspect.signature(fn).return_annotation)
    return fn


def _plain(annotation: Any) -> Any:
    """`X | None` -> X."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def _json_object(text: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc.msg}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError('give a JSON object, e.g. \'{"clip_low_threshold": 0.8}\'')
    return value


def add_flags(parser: argparse.ArgumentParser, model: type[BaseModel], exclude: tuple[str, ...] = ()) -> None:
    """Required fields become positionals, the others `--dashed-name` flags (None when not given);
    a Literal gives the choices, a dict or model field takes a JSON object, a bool that defaults to
    False is a switch and an optional bool a `--x/--no-x` pair. The model validates the values."""
    for name, info in _fields(model, exclude).items():
        kind = _plain(info.annotation)
        options: dict[str, Any] = {"help": info.description}
        if typing.get_origin(kind) is Literal:
            options["choices"] = list(typing.get_args(kind))
        elif typing.get_origin(kind) is dict or kind is dict or (isinstance(kind, type) and issubclass(kind, BaseModel)):
            options.update(type=_json_object, metavar="JSON")
        elif kind is bool:
            optional = info.annotation is not bool
            if not optional and info.get_default() is not False:
                raise TypeError(f"no command-line form for {name}: a bool that defaults to True")
            options["action"] = argparse.BooleanOptionalAction if optional else "store_true"
        elif kind in (int, float, str):
            options["type"] = kind
        else:
            raise TypeError(f"no command-line form for {name}: {info.annotation}")
        if info.is_required():
            parser.add_argument(name, **options)
        else:
            parser.add_argument("--" + name.replace("_", "-"), dest=name, default=None, **options)


def values_from_flags(args: argparse.Namespace, model: type[BaseModel], exclude: tuple[str, ...] = ()) -> dict:
    """The given flags for `model`: fields left out on the command line keep the model's default."""
    return {name: getattr(args, name) for name in _fields(model, exclude) if getattr(args, name) is not None}
