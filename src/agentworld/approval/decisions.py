"""What authorization decides for a tool call, as values (the seam is ``runtime.authorizer``).

Decisions are values, not exceptions: ``Allow``, ``Deny`` (with the reason the
model will read) or ``AskUser`` (a person must approve first).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Allow:
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Deny:
    reason: str


@dataclass(frozen=True, slots=True)
class AskUser:
    message: str = ""


Decision = Allow | Deny | AskUser

