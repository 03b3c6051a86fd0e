"""Every test in this suite can fail: it asserts, or expects an exception, itself or through a helper.

A static check (the source, not a run): each ``test_*`` function must contain an ``assert``, a call
whose name starts with ``assert`` (``np.testing.assert_array_equal``, ``chex.assert_trees_all_close``,
``helpers.assert_same_encoding``), ``pytest.raises`` / ``pytest.warns``, a library check that raises on
a violation (CHECKERS), or a call of a function defined in tests/ that does one of these (followed
transitively, by name).
"""

from __future__ import annotations

import ast
import pathlib

TESTS = pathlib.Path(__file__).resolve().parent
EXPECTS = ("raises", "warns", "fail")  # pytest.raises(...), pytest.warns(...), pytest.fail(...)
CHECKERS = {  # wpbjax's and JAX's checks: each raises when what it checks does not hold
    "max_traces",  # wpbjax.testing: a second trace (compile) of the program inside the block
    "check_policy",  # wpbjax.testing: a policy breaking the contract (declared emits and layout, one trace, O(1) per step)
    "validate_episode",  # wpbjax.episodes.jsonl: an episode the file checks refuse
    "check_grads",  # jax.test_util: gradients unlike finite differences
}


def _called_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _direct_check(node: ast.AST) -> bool:
    for inner in ast.walk(node):
        if isinstance(inner, ast.Assert):
            return True
        if isinstance(inner, ast.Call):
            name = _called_name(inner)
            if name.startswith("assert") or name in EXPECTS or name in CHECKERS:
                return True
    return False


def _functions() -> dict[str, list[tuple[str, ast.FunctionDef]]]:
    """name -> [(file, definition)] for every function defined anywhere in tests/*.py."""
    found: dict[str, list] = {}
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.setdefault(node.name, []).append((path.name, node))
    return found


def test_every_test_asserts_or_expects_an_exception():
    functions = _functions()
    checking = {name for name, defs in functions.items() if any(_direct_check(node) for _, node in defs)}
    while True:  # a helper that calls a checking helper checks too
        more = {
            name
            for name, defs in functions.items()
            if name not in checking
            and any(
                isinstance(inner, ast.Call) and _called_name(inner) in checking
                for _, node in defs
                for inner in ast.walk(node)
            )
        }
        if not more:
            break
        checking |= more
    silent = sorted(
        f"{file}::{name}"
        for name, defs in functions.items()
        for file, node in defs
        if name.startswith("test_")
        and file.startswith("test_")
        and not (
            _direct_check(node)
            or any(isinstance(inner, ast.Call) and _called_name(inner) in checking for inner in ast.walk(node))
        )
    )
    assert not silent, "tests that cannot fail (no assert, no expected exception): " + ", ".join(silent)


def test_the_check_sees_a_silent_test(tmp_path):
    """The check itself can fail: a test body with neither an assert nor an expected exception."""
    silent = ast.parse("def test_x():\n    total = sum([1, 2])\n    print(total)\n").body[0]
    loud = ast.parse("def test_y():\n    with pytest.raises(ValueError):\n        int('x')\n").body[0]
    assert not _direct_check(silent) and _direct_check(loud)
