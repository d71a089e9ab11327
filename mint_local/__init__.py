"""mint-local: an offline MinT-compatible backend (torch + transformers + peft)."""

__version__ = "0.1.0"
