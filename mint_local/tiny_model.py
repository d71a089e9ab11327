"""Deterministic, offline builder for mint-local's tiny Qwen3 models and their tokenizer.

Nothing here touches the network. The tokenizer is a byte-level BPE whose merges are learned
by a small, fully deterministic BPE pass over a word list written in this file (ties broken
by pair order), so any machine builds byte-identical `tokenizer.json` files. Model weights come
from a fixed torch seed. Each variant is built once and cached under `$MINT_LOCAL_CACHE`
(default `~/.cache/mint-local`); the directory is a normal Hugging Face model folder
(`config.json`, `model.safetensors`, `tokenizer.json`, `tokenizer_config.json`), so
`AutoTokenizer.from_pretrained(path)` and `AutoModelForCausalLM.from_pretrained(path)` load it.
"""

from __future__ import annotations

import heapq
import json
import os
import shutil
import tempfile
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

# 2: 32,768-token context (was 2,048); weights and tokenizer are unchanged.
# 3: the chat template marks the assistant's turn for TRL's assistant_only_loss; it renders the same text.
# 4: config.json no longer records the transformers version that wrote it (a new transformers release
#    made a fresh build differ from a cached one by that field alone); weights and tokenizer unchanged.
BUILDER_VERSION = 4

# Qwen2/Qwen3 split digits one by one, which keeps answers such as "#### 42" easy to learn.
_PRETOKENIZE_REGEX = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"]
EOS_TOKEN = "<|im_end|>"
PAD_TOKEN = "<|endoftext|>"

# Qwen-style chat template: <|im_start|>role\ncontent<|im_end|>\n per message. The assistant's
# turn after its header (end of turn included) sits in {% generation %}: TRL's assistant_only_loss
# masks exactly that span, the span a migrated train.py trains, and it needs the markers to run at
# all. Each message renders on its own, so a conversation's render starts with its prefix's.
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{%- if message['role'] == 'assistant' %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- generation %}{{- message['content'] + '<|im_end|>' + '\\n' }}{%- endgeneration %}"
    "{%- else %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

# Words the merges are learned from: everyday English, chat roles, math and code vocabulary.
_WORDS = ["the", "of", "and", "to", "a", "in", "is", "it", "you", "that", "he", "was", "for", "on", "are", "with", "as", "I", "his", "they", "be", "at", "one", "have", "this", "from", "or", "had", "by", "not", "word", "but", "what", "some", "we", "can", "out", "other", "were", "all", "there", "when", "up", "use", "your", "how", "said", "an", "each", "she", "which", "do", "their", "time", "if", "will", "way", "about", "many", "then", "them", "write", "would", "like", "so", "these", "her", "long", "make", "thing", "see", "him", "two", "has", "look", "more", "day", "could", "go", "come", "did", "number", "sound", "no", "most", "people", "my", "over", "know", "water", "than", "call", "first", "who", "may", "down", "side", "been", "now", "find", "any", "new", "work", "part", "take", "get", "place", "made", "live", "where", "after", "back", "little", "only", "round", "man", "year", "came", "show", "every", "good", "me", "give", "our", "under", "name", "very", "through", "just", "form", "sentence", "great", "think", "say", "help", "low", "line", "differ", "turn", "cause", "much", "mean", "before", "move", "right", "boy", "old", "too", "same", "tell", "does", "set", "three", "want", "air", "well", "also", "play", "small", "end", "put", "home", "read", "hand", "port", "large", "spell", "add", "even", "land", "here", "must", "big", "high", "such", "follow", "act", "why", "ask", "men", "change", "went", "light", "kind", "off", "need", "house", "picture", "try", "us", "again", "animal", "point", "mother", "world", "near", "build", "self", "earth", "father", "head", "stand", "own", "page", "should", "country", "found", "answer", "school", "grow", "study", "still", "learn", "plant", "cover", "food", "sun", "four", "between", "state", "keep", "eye", "never", "last", "let", "thought", "city", "tree", "cross", "farm", "hard", "start", "might", "story", "saw", "far", "sea", "draw", "left", "late", "run", "while", "press", "close", "night", "real", "life", "few", "north", "open", "seem", "together", "next", "white", "children", "begin", "got", "walk", "example", "ease", "paper", "group", "always", "music", "those", "both", "mark", "often", "letter", "until", "mile", "river", "car", "feet", "care", "second", "book", "carry", "took", "science", "eat", "room", "friend", "began", "idea", "fish", "mountain", "stop", "once", "base", "hear", "horse", "cut", "sure", "watch", "color", "face", "wood", "main", "enough", "plain", "girl", "usual", "young", "ready", "above", "ever", "red", "list", "though", "feel", "talk", "bird", "soon", "body", "dog", "family", "direct", "pose", "leave", "song", "measure", "door", "product", "black", "short", "numeral", "class", "wind", "question", "happen", "complete", "ship", "area", "half", "rock", "order", "fire", "south", "problem", "piece", "told", "knew", "pass", "since", "top", "whole", "king", "space", "heard", "best", "hour", "better", "true", "during", "hundred", "five", "remember", "step", "early", "hold", "west", "ground", "interest", "reach", "fast", "verb", "sing", "listen", "six", "table", "travel", "less", "morning", "ten", "simple", "several", "vowel", "toward", "war", "lay", "against", "pattern", "slow", "center", "love", "person", "money", "serve", "appear", "road", "map", "rain", "rule", "govern", "pull", "cold", "notice", "voice", "unit", "power", "town", "fine", "certain", "fly", "fall", "lead", "cry", "dark", "machine", "note", "wait", "plan", "figure", "star", "box", "noun", "field", "rest", "correct", "able", "pound", "done", "beauty", "drive", "stood", "contain", "front", "teach", "week", "final", "gave", "green", "oh", "quick", "develop", "ocean", "warm", "free", "minute", "strong", "special", "mind", "behind", "clear", "tail", "produce", "fact", "street", "inch", "multiply", "nothing", "course", "stay", "wheel", "full", "force", "blue", "object", "decide", "surface", "deep", "moon", "island", "foot", "system", "busy", "test", "record", "boat", "common", "gold", "possible", "plane", "stead", "dry", "wonder", "laugh", "thousand", "ago", "ran", "check", "game", "shape", "equate", "hot", "miss", "brought", "heat", "snow", "tire", "bring", "yes", "distant", "fill", "east", "paint", "language", "among", "user", "assistant", "message", "content", "role", "please", "thank", "thanks", "hello", "hi", "sorry", "okay", "sum", "total", "plus", "minus", "times", "divided", "equals", "result", "solve", "calculate", "compute", "value", "answer", "math", "problem", "apples", "oranges", "dollars", "cents", "each", "cost", "costs", "price", "bought", "sold", "left", "many", "much", "more", "less", "twice", "half", "double", "triple", "percent", "per", "hour", "hours", "minutes", "days", "weeks", "months", "years", "old", "older", "younger", "age", "ages", "student", "students", "teacher", "class", "train", "training", "model", "models", "learning", "rate", "loss", "step", "steps", "data", "dataset", "batch", "token", "tokens", "prompt", "response", "reward", "policy", "sample", "samples", "function", "return", "print", "import", "def", "class", "self", "true", "false", "none", "list", "dict", "string", "number", "integer", "float", "python", "code", "output", "input", "error", "file"]


@dataclass(frozen=True)
class TinySpec:
    """Shape of a tiny model variant; every field feeds the cache key."""

    name: str
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    vocab_target: int
    # Qwen3's own window. RoPE has no learned positions, so the length costs nothing until used;
    # `mint-local serve --max-context N` sets another limit.
    max_position_embeddings: int = 32768
    seed: int = 0


VARIANTS: dict[str, TinySpec] = {
    # ~0.3M parameters: the size the issue compares against (a CPU SFT step in ~10 ms).
    "tiny": TinySpec(
        name="tiny-qwen3",
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        vocab_target=2048,
    ),
    # ~30M parameters: the compute-bound benchmark model.
    "tiny-30m": TinySpec(
        name="tiny-qwen3-30m",
        hidden_size=512,
        intermediate_size=1536,
        num_hidden_layers=8,
        num_attention_heads=8,
        num_key_value_heads=4,
        head_dim=64,
        vocab_target=2048,
    ),
}

SERVED_NAME_PREFIX = "mint-local/"


def served_name(variant: str) -> str:
    """The base_model string a client passes for a tiny variant, e.g. `mint-local/tiny-qwen3`."""
    return SERVED_NAME_PREFIX + VARIANTS[variant].name


def cache_root() -> Path:
    env = os.environ.get("MINT_LOCAL_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "mint-local"


def model_dir(variant: str) -> Path:
    spec = VARIANTS[variant]
    return cache_root() / f"{spec.name}-v{BUILDER_VERSION}"


def ensure_tiny_model(variant: str = "tiny") -> Path:
    """Return the cached model folder for `variant`, building it on first use."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown tiny variant {variant!r}; choose one of {sorted(VARIANTS)}")
    target = model_dir(variant)
    if (target / "mint_local_build.json").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    # Build next to the target and rename, so concurrent first builds never see half a folder.
    scratch = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        _build(VARIANTS[variant], scratch)
        try:
            os.rename(scratch, target)
        except OSError:
            if not (target / "mint_local_build.json").is_file():
                raise
    finally:
        if scratch.exists():
            shutil.rmtree(scratch, ignore_errors=True)
    return target


def _build(spec: TinySpec, out: Path) -> None:
    tokenizer_json = build_tokenizer_json(spec.vocab_target)
    (out / "tokenizer.json").write_text(tokenizer_json, encoding="utf-8")
    from tokenizers import Tokenizer

    vocab_size = Tokenizer.from_str(tokenizer_json).get_vocab_size(with_added_tokens=True)
    token_ids = _special_token_ids(tokenizer_json)
    (out / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "tokenizer_class": "PreTrainedTokenizerFast",
                "model_max_length": spec.max_position_embeddings,
                "eos_token": EOS_TOKEN,
                "pad_token": PAD_TOKEN,
                "bos_token": None,
                "unk_token": None,
                "additional_special_tokens": [t for t in SPECIAL_TOKENS if t not in (EOS_TOKEN, PAD_TOKEN)],
                "chat_template": CHAT_TEMPLATE,
                "clean_up_tokenization_spaces": False,
            },
            indent=2,
        ),
        encoding="utf-8",
    )
    (out / "special_tokens_map.json").write_text(
        json.dumps({"eos_token": EOS_TOKEN, "pad_token": PAD_TOKEN}, indent=2), encoding="utf-8"
    )
    _build_weights(spec, vocab_size, token_ids, out)
    (out / "mint_local_build.json").write_text(
        json.dumps({"builder_version": BUILDER_VERSION, "spec": asdict(spec)}, indent=2), encoding="utf-8"
    )


def _special_token_ids(tokenizer_json: str) -> dict[str, int]:
    data = json.loads(tokenizer_json)
    return {t["content"]: t["id"] for t in data["added_tokens"]}


def _build_weights(spec: TinySpec, vocab_size: int, token_ids: dict[str, int], out: Path) -> None:
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    config = Qwen3Config(
        vocab_size=vocab_size,
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.num_hidden_layers,
        num_attention_heads=spec.num_attention_heads,
        num_key_value_heads=spec.num_key_value_heads,
        head_dim=spec.head_dim,
        max_position_embeddings=spec.max_position_embeddings,
        tie_word_embeddings=False,
        bos_token_id=None,
        eos_token_id=token_ids[EOS_TOKEN],
        pad_token_id=token_ids[PAD_TOKEN],
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(spec.seed)
        model = Qwen3ForCausalLM(config)
    model.save_pretrained(out, safe_serialization=True)
    # The folder is built from the spec alone: the writing library's version is not part of it.
    written = json.loads((out / "config.json").read_text(encoding="utf-8"))
    written.pop("transformers_version", None)
    (out / "config.json").write_text(json.dumps(written, indent=2, sort_keys=True) + "\n", encoding="utf-8")


# --- byte-level BPE, learned deterministically -------------------------------------------------


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character map (the ByteLevel alphabet)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    chars = printable[:]
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return dict(zip(printable, (chr(c) for c in chars), strict=True))


def _word_frequencies() -> Counter[str]:
    from tokenizers import Regex, pre_tokenizers

    pre = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(_PRETOKENIZE_REGEX), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    counts: Counter[str] = Counter()
    # Frequent words first: earlier words get higher counts, so their merges come first.
    for rank, word in enumerate(_WORDS):
        weight = max(1, 400 // (rank // 40 + 1))
        for variant in (f" {word}", word, f" {word.capitalize()}"):
            for piece, _ in pre.pre_tokenize_str(variant):
                counts[piece] += weight
    for piece in (" ####", "####", " =", " +", " -", " *", " /", ".\n", ",", ".", "?", "!", ":", "\n\n", "  ", "    "):
        for p, _ in pre.pre_tokenize_str(piece):
            counts[p] += 200
    return counts


def _learn_merges(counts: Counter[str], num_merges: int) -> list[tuple[str, str]]:
    """Classic BPE: repeatedly merge the most frequent adjacent pair.

    Highest count wins and ties go to the smallest pair, so the result never depends on
    hashing. Pair counts are updated incrementally (only words holding the merged pair are
    touched) and the best pair comes from a heap with lazy deletion.
    """
    words = [list(word) for word, _ in sorted(counts.items())]
    freqs = [freq for _, freq in sorted(counts.items())]
    pair_counts: Counter[tuple[str, str]] = Counter()
    where: dict[tuple[str, str], set[int]] = {}
    for idx, symbols in enumerate(words):
        for pair in zip(symbols, symbols[1:], strict=False):
            pair_counts[pair] += freqs[idx]
            where.setdefault(pair, set()).add(idx)
    heap = [(-count, pair) for pair, count in pair_counts.items()]
    heapq.heapify(heap)
    merges: list[tuple[str, str]] = []
    while heap and len(merges) < num_merges:
        neg, best = heapq.heappop(heap)
        current = pair_counts.get(best, 0)
        if current <= 0:
            continue
        if -neg != current:  # stale entry: requeue with the live count
            heapq.heappush(heap, (-current, best))
            continue
        merges.append(best)
        merged = best[0] + best[1]
        touched: set[tuple[str, str]] = set()
        for idx in sorted(where.pop(best, ())):
            symbols, freq = words[idx], freqs[idx]
            for pair in zip(symbols, symbols[1:], strict=False):
                pair_counts[pair] -= freq
                touched.add(pair)
            i, out = 0, []
            while i < len(symbols):
                if i < len(symbols) - 1 and symbols[i] == best[0] and symbols[i + 1] == best[1]:
                    out.append(merged)
                    i += 2
                else:
                    out.append(symbols[i])
                    i += 1
            words[idx] = out
            for pair in zip(out, out[1:], strict=False):
                pair_counts[pair] += freq
                where.setdefault(pair, set()).add(idx)
                touched.add(pair)
        pair_counts.pop(best, None)
        for pair in touched:
            if pair_counts.get(pair, 0) > 0:
                heapq.heappush(heap, (-pair_counts[pair], pair))
    return merges


def build_tokenizer_json(vocab_target: int) -> str:
    """The serialized tokenizer (tokenizers' JSON format): same input, same bytes."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers

    alphabet = [ch for _, ch in sorted(_bytes_to_unicode().items())]
    merges = _learn_merges(_word_frequencies(), vocab_target - len(alphabet) - len(SPECIAL_TOKENS))
    vocab: dict[str, int] = {ch: i for i, ch in enumerate(alphabet)}
    for left, right in merges:
        vocab.setdefault(left + right, len(vocab))
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges, ignore_merges=False))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(_PRETOKENIZE_REGEX), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS])
    return tokenizer.to_str(pretty=True)
