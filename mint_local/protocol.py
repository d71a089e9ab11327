"""Wire shapes of the HTTP protocol tinker 0.22.0 (and mindlab-toolkit 0.2.0) speaks.

Requests are parsed leniently (unknown fields are ignored, as newer SDKs add some); every
shape below was read from the installed SDK's `tinker/types`, `tinker/resources` and
`mint/mint/_mintx.py`. Responses are plain dicts built by the engine, in the same shapes.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

# Limits on what one request may carry (documented in mint_local/README.md, "Limits").
MAX_STRING_CHARS = 4096  # any string field: names, paths, tags, stop strings
MAX_TAGS = 64
SEED_BOUND = 2**63  # seeds are integers in [0, 2**63): what torch's generators take
SEQ_ID_BOUND = 2**63  # tinker's sampling clients start their seq_ids near 10**18
# A tensor datum's shape: what torch can allocate, checked before it tries (a negative size
# reached reshape() and answered with a traceback). Loss inputs are 1-D or 2-D.
MAX_TENSOR_DIMS = 8
MAX_TENSOR_DIM_SIZE = 2**31 - 1


class Wire(BaseModel):
    model_config = ConfigDict(extra="ignore", protected_namespaces=(), str_max_length=MAX_STRING_CHARS)


SeqId = Field(None, ge=0, lt=SEQ_ID_BOUND)
Seed = Field(None, ge=0, lt=SEED_BOUND)
Shape = Annotated[list[Annotated[int, Field(ge=0, le=MAX_TENSOR_DIM_SIZE)]], Field(max_length=MAX_TENSOR_DIMS)]


class TensorData(Wire):
    data: list[float] | list[int] | float | int
    dtype: Literal["int64", "float32"] = "float32"
    shape: Shape | None = None
    sparse_crow_indices: list[int] | None = None
    sparse_col_indices: list[int] | None = None


class ModelInputChunk(Wire):
    type: str = "encoded_text"
    tokens: list[int] | None = None


class ModelInput(Wire):
    chunks: list[ModelInputChunk]


class Datum(Wire):
    model_input: ModelInput
    loss_fn_inputs: dict[str, TensorData] = Field(default_factory=dict)


class ForwardBackwardInput(Wire):
    data: list[Datum]
    loss_fn: str
    loss_fn_config: dict[str, float] | None = None


class ForwardRequest(Wire):
    forward_input: ForwardBackwardInput
    model_id: str
    seq_id: int | None = SeqId


class ForwardBackwardRequest(Wire):
    forward_backward_input: ForwardBackwardInput
    model_id: str
    seq_id: int | None = SeqId


class AdamParams(Wire):
    learning_rate: float = 1e-4
    beta1: float = 0.9
    beta2: float = 0.95
    eps: float = 1e-12
    weight_decay: float = 0.0
    grad_clip_norm: float = 0.0


class OptimStepRequest(Wire):
    adam_params: AdamParams
    model_id: str
    seq_id: int | None = SeqId


class LoraConfig(Wire):
    rank: int
    seed: int | None = Seed
    train_unembed: bool = True
    train_mlp: bool = True
    train_attn: bool = True


class CreateModelRequest(Wire):
    session_id: str
    model_seq_id: int = 0
    base_model: str
    user_metadata: dict[str, Any] | None = None
    lora_config: LoraConfig | None = None


class ModelIdRequest(Wire):
    """get_info and unload_model."""

    model_id: str


class SaveWeightsRequest(Wire):
    model_id: str
    path: str | None = None
    seq_id: int | None = SeqId
    ttl_seconds: int | None = None
    overwrite: bool = False


class SaveWeightsForSamplerRequest(Wire):
    model_id: str
    path: str | None = None
    sampling_session_seq_id: int | None = None
    seq_id: int | None = SeqId
    ttl_seconds: int | None = None


class LoadWeightsRequest(Wire):
    model_id: str
    path: str
    optimizer: bool = False
    seq_id: int | None = SeqId


class CreateSessionRequest(Wire):
    tags: list[str] = Field(default_factory=list, max_length=MAX_TAGS)
    user_metadata: dict[str, Any] | None = None
    sdk_version: str = ""
    project_id: str | None = None


class SessionHeartbeatRequest(Wire):
    session_id: str


class CreateSamplingSessionRequest(Wire):
    session_id: str
    sampling_session_seq_id: int = 0
    base_model: str | None = None
    model_path: str | None = None


class SamplingParams(Wire):
    max_tokens: int | None = None
    seed: int | None = Seed
    stop: str | list[str] | list[int] | None = None
    temperature: float = 1.0
    top_k: int = -1
    top_p: float = 1.0


class SampleRequest(Wire):
    num_samples: int = 1
    prompt: ModelInput
    sampling_params: SamplingParams
    base_model: str | None = None
    model_path: str | None = None
    sampling_session_id: str | None = None
    seq_id: int | None = SeqId
    prompt_logprobs: bool | None = None
    topk_prompt_logprobs: int = 0


class FutureRetrieveRequest(Wire):
    request_id: str
    allow_metadata_only: bool = False


class WeightsInfoRequest(Wire):
    tinker_path: str


class ReverseKLTensor(Wire):
    """`mint.mint`'s own TensorData mirror: {data, shape, dtype}."""

    data: list[float] | list[int] | float | int
    shape: Shape | None = None
    dtype: str = "float32"


class ReverseKLDatum(Wire):
    student_input: ModelInput
    reference_input: ModelInput
    target_tokens: ReverseKLTensor
    weights: ReverseKLTensor


class ForwardBackwardReverseKLRequest(Wire):
    model_id: str
    reference_model_path: str
    data: list[ReverseKLDatum]
    temperature: float = 1.0
    seq_id: int | None = SeqId


class InterpolateCheckpointsRequest(Wire):
    source_paths: list[str]
    coefficients: list[float]
    output_path: str | None = None
    output_checkpoint_type: Literal["sampler"] = "sampler"
