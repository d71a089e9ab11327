"""mint-local: an offline MinT-compatible backend (torch; transformers for Hugging Face model folders)."""

__version__ = "0.1.0"
