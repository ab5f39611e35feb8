"""The exception tree of Agent World.

Every error the package raises on purpose derives from ``AgentWorldError``, so an
embedder can catch one root. Mistakes made by the person using the system
(``UserError``) are kept apart from failures of the machinery (storage, providers),
because the CLI shows the first kind as a plain one-line reason and the second
kind with the component that failed::

    AgentWorldError
    ├── UserError                  bad input; the fix is in the caller's hands
    │   ├── NotFoundError          unknown world / agent / chat / approval
    │   ├── AlreadyExistsError     duplicate name
    │   ├── InvalidInputError      option out of range, unknown provider, bad JSON
    │   │   ├── InvalidArgumentsError  a tool call's arguments a person gave that the tool refuses
    │   │   └── NotEditableError   an edit of a message that is not a person's
    │   └── PolicyDeniedError      what a person asked for is denied by the policy in force
    ├── StorageError               database unreachable, locked, corrupt
    └── ProviderError              an LLM call failed after its retries
        ├── ProviderConfigError    missing API key or endpoint settings
        ├── ProviderConnectionError the endpoint could not be reached
        └── ProviderResponseError  the endpoint answered with an error status
"""

from __future__ import annotations


class AgentWorldError(Exception):
    """Root of every error Agent World raises deliberately."""


class UserError(AgentWorldError):
    """The request itself is wrong; retrying it unchanged will fail again."""


class NotFoundError(UserError):
    """A world, agent, chat or approval that the request names does not exist."""


class AlreadyExistsError(UserError):
    """A create request reuses a name that is taken."""


class InvalidInputError(UserError):
    """An option or argument is outside what the system accepts."""


class InvalidArgumentsError(InvalidInputError):
    """Arguments a person gave a tool call (correcting it while approving it) that the tool
    refuses: not a JSON object, outside its schema, or failing its own checks."""


class NotEditableError(InvalidInputError):
    """An edit of a message that is not a person's: only what a person said can be replaced
    (an agent's message can be deleted onward, not rewritten)."""


class PolicyDeniedError(UserError):
    """The policy in force denies what a person asked to run (a call corrected while approving
    it that a DENY rule matches); nothing was done."""


class BusyError(AgentWorldError):
    """What the request would remove is in use by work running now (another process is
    answering in one of its chats); the same request succeeds once that work ends."""


class StorageError(AgentWorldError):
    """The database could not be opened, read or written."""


class StorageUnavailable(StorageError):
    """The database server could not be reached or was lost (``storage.faults``): trying again
    later may succeed, unlike a refused row or a bad statement."""


class ProviderError(AgentWorldError):
    """An LLM provider call failed; ``retryable`` tells whether trying again may help."""

    retryable: bool = False


class ProviderConfigError(ProviderError, UserError):
    """The agent's provider settings are incomplete (for example no API key in the env)."""


class ProviderConnectionError(ProviderError):
    """The provider endpoint could not be reached (refused, reset, timed out)."""

    retryable = True

    def __init__(self, message: str, *, url: str | None = None) -> None:
        super().__init__(message)
        self.url = url


class ProviderResponseError(ProviderError):
    """The provider answered with an error status; the body is kept for the user to read."""

    def __init__(
        self, message: str, *, status: int, body: str = "", retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = body
        self.retry_after = retry_after
        """Seconds the server asked us to wait (``retry-after``), when it said."""
        self.retryable = status in (408, 409, 429) or status >= 500
