"""The session of ``agentworld talk`` (``cli/talk.py``): the REPL, its turns and approvals.

A prompt (``talk_prompt``) where each line is a message to the world's chat or a slash command
(``talk_commands``; those that branch, edit or undo: ``talk_control``); answers stream in as the agents give them (``talk_view``, a subscriber of
the world's event bus); an approval request is asked at the prompt with one key, once read
(``talk_question``), and an agent's question with a line typed once it was read
(``talk_answer``); ``talk_desk`` asks them.

Start-up shows the prompt at once and opens the database behind it: the runtime's imports
(SQLAlchemy, pydantic models, the SDKs) take longer than people wait for a prompt, and nothing
typed is lost meanwhile — the first message simply waits for the world to be ready.

Ctrl-C during a turn stops it (``AgentWorld.stop``: the runner is cancelled, a running tool
killed and its call recorded as interrupted, the chat's queued work dropped, the stop noted in
the transcript; what was stored stays) and returns to the prompt. When another process runs the
chat, only the waiting stops. Ctrl-C twice at an empty prompt, Ctrl-D or ``/quit`` leave with
status 0.
"""

from __future__ import annotations

import asyncio
import shutil
import signal
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from agentworld.cli import output
from agentworld.cli.live_elsewhere import OnceEach, follow_elsewhere
from agentworld.cli.talk_commands import COMMANDS, Quit, run_command
from agentworld.cli.talk_desk import ApprovalDesk, ApprovalsWaiting
from agentworld.cli.talk_prompt import Known, Prompts
from agentworld.cli.talk_view import EventView, Screen

if TYPE_CHECKING:
    from agentworld.agent_world import AgentWorld, SendResult
    from agentworld.models.events import WorldEvent
    from agentworld.runtime.world import WorldRuntime


class LoadFailed(Exception):
    """The world could not be opened: the session ends with this one-line reason."""


class TalkSession:
    """One interactive session with one world: the REPL, its turns and its approvals."""

    def __init__(self, world: str, *, chat: str | None, new: bool, db: str | None) -> None:
        self.world = world
        self.chat = chat or ""
        self.title = ""
        self._new = new
        self._db = db
        self.screen = Screen()
        self.view = EventView(self.screen, width=shutil.get_terminal_size().columns)
        self.known = Known(COMMANDS)
        self.prompts = Prompts(world, self.known, lambda: self.desk.status())
        self._aw: AgentWorld | None = None
        self._runtime: WorldRuntime | None = None
        self._elsewhere: Callable[[], Awaitable[None]] | None = None
        """Stops following what other processes do (``live_elsewhere``), on PostgreSQL."""
        self._interrupted: asyncio.Event | None = None
        self.desk = ApprovalDesk(self)
        self._behind: set[asyncio.Task[Any]] = set()
        """Turns that went on behind the prompt after Ctrl-C."""

    @property
    def aw(self) -> AgentWorld:
        assert self._aw is not None, "used before the world was opened"
        return self._aw

    @property
    def runtime(self) -> WorldRuntime:
        assert self._runtime is not None, "used before the world was opened"
        return self._runtime

    @property
    def opened(self) -> bool:
        return self._runtime is not None

    def idle(self) -> bool:
        """Whether this process runs nothing in the world now (a turn may go on behind)."""
        return self._runtime is None or self._runtime.is_idle()

    # -- the session ------------------------------------------------------------------------

    async def run(self) -> int:
        from prompt_toolkit.patch_stdout import patch_stdout

        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, self._on_sigint)
        # The world opens once the first prompt is drawn: its imports would slow the drawing.
        loading: asyncio.Future[None] = loop.create_future()
        self.prompts.on_shown = lambda: _chain(loading, asyncio.ensure_future(self._open()))
        watcher = asyncio.create_task(self.desk.watch(), name="talk:watch")
        try:
            with patch_stdout(raw=True):
                return await self._repl(loading)
        finally:
            loop.remove_signal_handler(signal.SIGINT)
            watcher.cancel()
            loading.cancel()
            await asyncio.gather(watcher, loading, return_exceptions=True)
            await self._close()

    async def _repl(self, loading: asyncio.Future[None]) -> int:
        leaving = False
        while True:
            try:
                line = await self._read()
            except LoadFailed as exc:
                output.fail(str(exc))
            except ApprovalsWaiting:
                await self.desk.ask()
                continue
            except KeyboardInterrupt:
                if leaving:
                    return 0
                leaving = True
                self.screen.note("(Ctrl-C again or Ctrl-D to leave)")
                continue
            except EOFError:
                return 0
            leaving = False
            if not line.strip():
                continue
            try:
                await loading
            except Exception as exc:
                output.fail(self._reason(exc))
            try:
                if line.startswith("/"):
                    await run_command(self, line.strip())
                else:
                    await self._send(line)
            except Quit:
                return 0
            except Exception as exc:
                self.report(exc)

    async def _read(self) -> str:
        self.screen.prompting = True
        try:
            return await self.prompts.message()
        finally:
            self.screen.prompting = False

    async def _open(self) -> None:
        """Open the database and the world behind the prompt (see the module's docstring)."""
        try:
            aw, runtime = await self._open_world()
        except Exception as exc:
            self.prompts.interrupt(LoadFailed(self._reason(exc)), later=True)
            raise
        self._aw, self._runtime = aw, runtime
        show = OnceEach(self.view.on_event, self._on_event_elsewhere)
        runtime.bus.subscribe(show, name="talk")
        self._elsewhere = await follow_elsewhere(runtime, show.elsewhere, self.desk.changed)
        await self.desk.refresh()
        agents = ", ".join(f"@{name}" for name in self.known.agents) or "none yet"
        self.screen.note(f"{self.world} · chat {self.chat} ({self.title}) · agents: {agents} · "
                         "/help lists the commands")  # fmt: skip

    def _on_event_elsewhere(self, event: WorldEvent) -> None:
        """An event another process stored: a request on the screen it answered leaves the
        prompt first, then the event is shown."""
        self.desk.seen(event)
        self.view.on_event_elsewhere(event)

    async def _open_world(self) -> tuple[AgentWorld, WorldRuntime]:
        import importlib

        # Imported in a thread: the prompt stays responsive while the runtime's modules load.
        await asyncio.to_thread(importlib.import_module, "agentworld.agent_world")
        from agentworld.agent_world import AgentWorld
        from agentworld.cli.common import check_database

        await asyncio.to_thread(check_database, self._db)
        aw = AgentWorld(self._db, interactive=True, long_lived=True)
        await aw.__aenter__()
        self._aw = aw  # closed with the session, whatever happens next
        self.world = self.prompts.world = await aw.world_name(self.world)
        await aw.get_world(self.world)
        if self.chat:
            chat = await aw.get_chat(self.world, self.chat)
        elif self._new:
            chat = await aw.new_chat(self.world)
        else:
            chat = await aw.get_chat(self.world, await aw.current_chat(self.world))
        self.switch(chat.chat_id, chat.name)
        return aw, await aw.runtime(self.world)

    async def _close(self) -> None:
        """Close the world; a turn still going on behind the prompt stays in the chat's inbox
        (durable), for the next process that runs the world."""
        behind, self._behind = list(self._behind), set()
        for task in behind:
            task.cancel()
        await asyncio.gather(*behind, return_exceptions=True)
        if behind:
            self.screen.note("the chat's work goes on with the next command that runs this "
                             f"world (e.g. {output.command('resume', self.world)})")  # fmt: skip
        elsewhere, self._elsewhere = self._elsewhere, None
        if elsewhere is not None:
            await elsewhere()
        if self._aw is not None:
            await self._aw.close()

    def switch(self, chat_id: str, title: str) -> None:
        self.chat, self.title = chat_id, title
        self.view.chat_id = chat_id
        self.desk.later.clear()

    # -- turns -------------------------------------------------------------------------------

    async def _send(self, text: str) -> None:
        result = await self.turn(self.aw.send(self.world, text, chat_id=self.chat))
        if result is not None:
            for notice in result.notices:
                self.screen.note(notice)
        await self.desk.ask()

    async def turn(self, work: Awaitable[SendResult]) -> SendResult | None:
        """Run ``work`` (a send or an answer) until the chat is idle, showing what happens;
        Ctrl-C stops it (see ``stop``) and returns None."""
        task = asyncio.ensure_future(work)
        self._interrupted = interrupted = asyncio.Event()
        stopped = asyncio.ensure_future(interrupted.wait())
        ticker = asyncio.ensure_future(self._tick())
        self.view.turn_started()
        try:
            await asyncio.wait({task, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._interrupted = None
            for helper in (stopped, ticker):
                helper.cancel()
            await asyncio.gather(stopped, ticker, return_exceptions=True)
        if task.done():
            self.view.close_stream()
            return task.result()
        self.view.close_stream()
        if await self.stop():
            await asyncio.gather(task, return_exceptions=True)
        else:
            self.screen.note("⏹ stopped waiting; the turn goes on where it runs")
            self._behind.add(task)
            task.add_done_callback(self._finished_behind)
        return None

    async def stop(self) -> bool:
        """Stop the chat's work (Ctrl-C in a turn, ``/stop``); False when there was none here
        (another process may run the chat: it is stopped there)."""
        outcome = await self.aw.stop(self.world, self.chat)
        if not outcome.stopped:
            self.screen.note("nothing to stop here (a chat another process runs is stopped there)")
            return False
        killed, cancelled = len(outcome.killed), len(outcome.interrupted) - len(outcome.killed)
        done = [f"{killed} running command(s) killed"] if killed else []
        done += [f"{cancelled} running tool call(s) cancelled"] if cancelled else []
        done += [f"{len(outcome.skipped)} call(s) not run"] if outcome.skipped else []
        done += [f"{outcome.dropped} queued step(s) dropped"] if outcome.dropped else []
        self.screen.note("⏹ stopped" + (f": {', '.join(done)}" if done else ""))
        return True

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(0.5)
            self.view.tick()

    def _finished_behind(self, task: asyncio.Task[Any]) -> None:
        self._behind.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self.report(task.exception())

    def _on_sigint(self) -> None:
        if self._interrupted is not None:
            self._interrupted.set()
        else:
            self.prompts.interrupt(KeyboardInterrupt())

    # -- errors -------------------------------------------------------------------------------

    def report(self, exc: BaseException | None) -> None:
        self.screen.error(self._reason(exc))

    @staticmethod
    def _reason(exc: BaseException | None) -> str:
        """One line, as the commands say it (a setting named by its flag)."""
        from agentworld.cli.common import name_flags
        from agentworld.errors import InvalidInputError

        text = str(exc) or type(exc).__name__
        return name_flags(text) if isinstance(exc, InvalidInputError) else text


def _chain(future: asyncio.Future[None], task: asyncio.Future[None]) -> None:
    """Let ``future`` end as ``task`` does (the caller holds the future, the task runs)."""

    def finish(done: asyncio.Future[None]) -> None:
        if future.done():
            return
        if done.cancelled():
            future.cancel()
        elif (error := done.exception()) is not None:
            future.set_exception(error)
        else:
            future.set_result(None)

    task.add_done_callback(finish)
    future.add_done_callback(lambda f: task.cancel() if f.cancelled() else None)
