"""The pinned SDK's facts and mint-migrate's defaults: they live in the shared package mint_facts,
which mint-local reads too; this name stays for the migration tool's modules."""

from mint_facts import *  # noqa: F403
