"""Parity: prove a migrated train.py optimises the same objective as its source, on one tiny model."""

from mcp_server.parity.check import check_parity, format_report, parity_markdown
from mcp_server.parity.records import ParityFinding, ParityReport, SequenceRecord, SideRecord

__all__ = [
    "ParityFinding",
    "ParityReport",
    "SequenceRecord",
    "SideRecord",
    "check_parity",
    "format_report",
    "parity_markdown",
]
