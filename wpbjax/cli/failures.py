"""How a command ends when it cannot finish: one line on stderr and an exit status, never a traceback.

2    bad input (an argument, a file, a line of a file): the line names it (an argument by its
     flag: :class:`wpbjax.common.argument_errors.ArgumentError`)
130  interrupted (Ctrl-C / SIGINT)
141  stdout closed by its reader (``wpbjax sweep | head``): silent, like a program SIGPIPE ends
1    a bug in wpbjax: the exception in one line (``WPBJAX_TRACEBACK=1`` re-raises it)
"""

from __future__ import annotations

import _thread
import argparse
import os
import signal
import sys
import threading
from collections.abc import Callable

from wpbjax.common.argument_errors import ArgumentError

BAD_INPUT = 2
INTERRUPTED = 130  # the shell's status for a command ended by SIGINT (128 + 2)
BUG = 1
CLOSED_PIPE = 141  # 128 + SIGPIPE: what the shell reports for `yes | head`
INTERRUPT_GRACE_S = 2.0  # after Ctrl-C, time to clean up (temporary files) before the process ends anyway

_interrupt_reported = threading.Event()

# A Python API argument whose flag is not its name with dashes (``--param`` is given once per param;
# the API takes them all as ``params``). The one table of such names: every other argument
# ``some_name`` is the flag ``--some-name``.
FLAG_OF_ARGUMENT = {"params": "--param"}


def flag(argument: str) -> str:
    """The command-line flag of the Python API argument ``argument`` (``num_processes`` ->
    ``--num-processes``), as an :class:`ArgumentError` names it to a CLI user."""
    return FLAG_OF_ARGUMENT.get(argument) or "--" + argument.replace("_", "-")


def cli_message(err: BaseException) -> str:
    """``err``'s message for a command-line user: the arguments an ArgumentError names, as flags."""
    return err.render(flag) if isinstance(err, ArgumentError) else str(err)


def _fresh_line() -> str:
    """On a terminal, return to the start of the line and clear it: a progress line (written with
    a carriage return and no newline) may be showing."""
    try:
        return "\r\x1b[K" if sys.stderr.isatty() else ""
    except (AttributeError, ValueError):  # a replaced or closed stderr
        return ""


def one_line(text) -> str:
    """``text`` with its lines joined by spaces (an error message must stay one line)."""
    return " ".join(part.strip() for part in str(text).splitlines() if part.strip())


class OneLineParser(argparse.ArgumentParser):
    """Argument errors in one line on stderr and status 2 (argparse's default prints the usage too)."""

    def error(self, message):
        self.exit(BAD_INPUT, f"{self.prog}: error: {one_line(message)} (see {self.prog} --help)\n")


def _print_interrupted(prog: str) -> None:
    print(f"{_fresh_line()}{prog}: interrupted", file=sys.stderr, flush=True)


def report_interrupt(prog: str) -> int:
    """Print the 'interrupted' line unless the SIGINT handler already did; return status 130."""
    if not _interrupt_reported.is_set():
        _print_interrupted(prog)
    return INTERRUPTED


def run_command(prog: str, command: Callable[[], int]) -> int:
    """``command()``'s status, or the status of the one line it failed with."""
    try:
        return command()
    except KeyboardInterrupt:
        return report_interrupt(prog)
    except BrokenPipeError:  # every file was written; only the reader of stdout went away
        return CLOSED_PIPE
    except (ValueError, OSError) as err:  # EpisodeFormatError is a ValueError
        print(f"{_fresh_line()}{prog}: error: {one_line(cli_message(err))}", file=sys.stderr)
        return BAD_INPUT
    except Exception as err:
        if isinstance(err, MemoryError) or str(err).startswith("RESOURCE_EXHAUSTED"):  # host, or device (XLA)
            print(
                f"{_fresh_line()}{prog}: error: out of memory ({_brief(err) or 'no details'}); use a smaller "
                "--memory-cap or fewer episodes",
                file=sys.stderr,
            )
            return BAD_INPUT
        if os.environ.get("WPBJAX_TRACEBACK"):
            raise
        print(
            f"{_fresh_line()}{prog}: internal error: {type(err).__name__}: {_brief(err)} (a bug: please report it; "
            "WPBJAX_TRACEBACK=1 shows the traceback)",
            file=sys.stderr,
        )
        return BUG


def _brief(err: BaseException, limit: int = 300) -> str:
    """A foreign exception's message in one line of at most ``limit`` characters (XLA's run long)."""
    text = one_line(err)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def exit_promptly_on_interrupt(prog: Callable[[], str]) -> None:
    """On SIGINT: the one line at once, KeyboardInterrupt so the command can clean up, and the process
    ends with status 130 after INTERRUPT_GRACE_S even if running XLA work or worker threads hold it."""

    def on_sigint(signum, frame):
        if not _interrupt_reported.is_set():  # a second Ctrl-C within the grace period prints nothing more
            _interrupt_reported.set()
            _print_interrupted(prog())
        timer = threading.Timer(INTERRUPT_GRACE_S, os._exit, args=(INTERRUPTED,))
        timer.daemon = True
        timer.start()
        raise KeyboardInterrupt

    default_hook = sys.unraisablehook

    def on_unraisable(unraisable) -> None:
        # The KeyboardInterrupt can land in a callback whose exceptions Python only reports (JAX's garbage
        # collection callback): not an 8-line "Exception ignored" report, but the interrupt raised again in
        # the main thread, where the command cleans up (the line was printed already). From a moment later:
        # raised now, it would land in this hook, whose exceptions Python only reports too
        if isinstance(unraisable.exc_value, KeyboardInterrupt) and _interrupt_reported.is_set():
            again = threading.Timer(0.01, _thread.interrupt_main)
            again.daemon = True
            again.start()
            return
        default_hook(unraisable)

    signal.signal(signal.SIGINT, on_sigint)
    sys.unraisablehook = on_unraisable
