"""Parity: prove a migrated train.py optimises the same objective as its source, on one tiny model.

check.check_parity runs both sides' first step and compares them; records holds the pydantic
models. Import from the submodules (this package imports nothing, so smoke.py can use records).
"""
