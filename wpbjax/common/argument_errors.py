"""Errors about a caller's arguments, naming each argument as that caller wrote it: ``num_processes``
for a Python caller (``wj.sweep(..., out=...)``, ``wpbjax.runtime.distributed.initialize(...)``),
``--num-processes`` on the command line.

A library check writes its message once, marking each argument it names with :func:`arg`::

    raise ArgumentError(f"{arg('process_id')}: expected 0..{n - 1} ({arg('num_processes')} {n}), got {i}")

``str(error)`` (what a Python caller sees) spells every marked argument as its Python name:
``process_id: expected 0..1 (num_processes 2), got 2``. The CLI prints ``error.render(flag)``
instead (:func:`wpbjax.cli.failures.run_command`, whose ``flag`` maps a Python name to its flag), so
the same check says ``--process-id: expected 0..1 (--num-processes 2), got 2`` there.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_MARK = "\x1f"  # ASCII unit separator: found in no argument name and in no message text
_MARKED = re.compile(f"{_MARK}([A-Za-z_][A-Za-z0-9_]*){_MARK}")


def arg(name: str) -> str:
    """``name`` (a Python argument name, ``num_processes``) marked for :class:`ArgumentError`."""
    return f"{_MARK}{name}{_MARK}"


def python_name(name: str) -> str:
    """How a Python caller reads a marked argument: its name as it is."""
    return name


class ArgumentError(ValueError):
    """A bad input (an argument value, or a file that a rerun with other arguments would mend) whose
    message names arguments; ``template``: the message with each argument marked by :func:`arg`.
    ``arguments``: the marked names, in order of first mention."""

    def __init__(self, template: str):
        self.template = template
        self.arguments = tuple(dict.fromkeys(_MARKED.findall(template)))
        super().__init__(self.render(python_name))

    def render(self, spell: Callable[[str], str]) -> str:
        """The message with each marked argument spelled by ``spell`` (name -> text)."""
        return _MARKED.sub(lambda match: spell(match.group(1)), self.template)

    def __reduce__(self):  # pickles (e.g. across processes) with its marks, not only its Python text
        return type(self), (self.template,)


def refuse_repeats(argument: str, values, error: type[ValueError] = ValueError) -> None:
    """Refuse a list that names a value twice: a repeated budget, policy or package would give
    duplicate rows that a report counts as extra episodes (the CLI drops repeats with a warning
    before it gets here; a library caller gets this error). ``argument``: its name, as :func:`arg`
    marks it for an ArgumentError."""
    seen, repeated = set(), []
    for value in values:
        (repeated.append if value in seen else seen.add)(value)
    if repeated:
        raise error(f"{argument} lists {', '.join(map(str, dict.fromkeys(repeated)))} more than once")
