"""The usergpu.Error family: every expected failure is one of these, with the facts a person needs."""


class Error(Exception):
    """Base of every error usergpu raises on purpose."""


class ToolchainError(Error):
    """A tool or header the generator or a test needs is missing or failed (says which and how to get it)."""


class FieldError(Error, ValueError):
    """A register or packet field that does not exist, or a value it cannot hold (says which and why)."""
