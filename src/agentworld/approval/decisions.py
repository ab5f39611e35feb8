"""What authorization decides for a tool call, as values (the seam is ``runtime.authorizer``).

Decisions are values, not exceptions: ``Allow``, ``Deny`` (with the reason the
model will read) or ``AskUser`` (a person must approve first).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

DenialSource = Literal["policy", "nobody to ask"]
"""Who refused a call: the policy (a rule, or the default), or nobody being there to ask when
the call needed a person (a run that nobody answers: ``send --approve deny``)."""


@dataclass(frozen=True, slots=True)
class Allow:
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Deny:
    reason: str
    by: DenialSource = "policy"


@dataclass(frozen=True, slots=True)
class AskUser:
    message: str = ""


Decision = Allow | Deny | AskUser

