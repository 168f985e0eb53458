"""The turn as messages, named as facts. Workers post them; handlers on the app own the state."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.message import Message

if TYPE_CHECKING:
    from ..fallback import FallbackResult
    from ..route import Decision, Router
    from ..session import Turn


class RouterReady(Message):
    """The catalog, retrieval index and backend are loaded."""

    def __init__(self, router: Router) -> None:
        super().__init__()
        self.router = router


class LoadProgress(Message):
    """How far the loading worker is in embedding the catalog (a first start on a large one)."""

    def __init__(self, done: int, total: int) -> None:
        super().__init__()
        self.done = done
        self.total = total


class ArgumentsStarted(Message):
    """Turn `index` is decided; its arguments are being built (a configured command may take its time)."""

    def __init__(self, index: int, command: list[str]) -> None:
        super().__init__()
        self.index = index
        self.command = command


class TurnSubmitted(Message):
    """The operator sent a message to be routed."""

    def __init__(self, message: str) -> None:
        super().__init__()
        self.message = message


class DecisionReady(Message):
    """The router decided a turn."""

    def __init__(self, index: int, decision: Decision, turn: Turn | None = None) -> None:
        super().__init__()
        self.index = index
        self.decision = decision
        self.turn = turn  # the Turn object routed, so an answer for a switched-away session is dropped


class OutcomeRecorded(Message):
    """The operator approved, declined or re-routed a turn (rerouted_to names the new option)."""

    def __init__(self, index: int, outcome: str, rerouted_to: str | None = None) -> None:
        super().__init__()
        self.index = index
        self.outcome = outcome
        self.rerouted_to = rerouted_to


class LabelChanged(Message):
    """A turn got a label (None: the label was cleared)."""

    def __init__(self, index: int, label: str | None) -> None:
        super().__init__()
        self.index = index
        self.label = label


class FallbackFinished(Message):
    """The fallback command ran for a turn (successfully or not)."""

    def __init__(self, index: int, result: FallbackResult) -> None:
        super().__init__()
        self.index = index
        self.result = result


class FallbackOutput(Message):
    """The running fallback command printed more (text: all of its output so far)."""

    def __init__(self, index: int, text: str) -> None:
        super().__init__()
        self.index = index
        self.text = text


class SessionSaved(Message):
    """The session file was written (seq orders writes: only the newest counts)."""

    def __init__(self, path: Path, seq: int) -> None:
        super().__init__()
        self.path = path
        self.seq = seq


class ReplayStarted(Message):
    """The router is ready and replay mode routes its first turn (a slow server answers it last)."""

    def __init__(self, router: Router) -> None:
        super().__init__()
        self.router = router


class ReplayRowReady(Message):
    """One recorded turn was re-routed in replay mode."""

    def __init__(self, position: int, row: Any, decision: Decision) -> None:
        super().__init__()
        self.position = position
        self.row = row
        self.decision = decision


class ReplayFinished(Message):
    """Every turn of the replayed session was re-routed."""

    def __init__(self, report: Any) -> None:
        super().__init__()
        self.report = report


class ReviewQueueRead(Message):
    """The sessions folder was read for the review queue (in a worker): its queue, or why not."""

    def __init__(
        self, review: Any = None, own: Any = None, problem: list[str] | None = None, unread: list[list[str]] | None = None
    ) -> None:
        super().__init__()
        self.review = review  # tui_router.review.Review
        self.own = own  # the console's session the queue was built with (None: not saved yet)
        self.problem = problem
        self.unread = unread or []  # why, for each file of the folder that did not read (left out)


class FilesReadProgress(Message):
    """How many of the session files a reading worker has read (the loading screen counts them)."""

    def __init__(self, done: int, total: int) -> None:
        super().__init__()
        self.done = done
        self.total = total


class ReviewFilesRead(Message):
    """`tui-router review FILES`: the files were read (in a worker, after the first frame)."""

    def __init__(self, review: Any, problems: list[list[str]]) -> None:
        super().__init__()
        self.review = review  # tui_router.review.Review over the files that read
        self.problems = problems  # for each file that did not, why (the file is left as it is)


class SessionRead(Message):
    """A session file was read in a worker (`tui-router open FILE`, or an open from the console)."""

    def __init__(self, path: Path, request: int, session: Any, problem: list[str] | None = None) -> None:
        super().__init__()
        self.path = path
        self.request = request  # 0: the file named at start; else which open it answers
        self.session = session  # tui_router.session.Session, None when it could not be read
        self.problem = problem
