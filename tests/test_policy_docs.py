"""The "your own policy" example of docs/policies.md runs as written, and every zoo name is documented."""
import contextlib
import io
import pathlib
import re

from wpbjax.policies import make, names
from wpbjax.policies.zoo import ZOO_NAMES

DOC = pathlib.Path(__file__).resolve().parents[1] / "docs" / "policies.md"


def test_your_own_policy_example_runs():
    text = DOC.read_text()
    section = text.split("## Your own policy", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert 15 <= len([line for line in code.splitlines() if line.strip()]) <= 30
    namespace, printed = {}, io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, str(DOC), "exec"), namespace)
    table = namespace["table"]
    assert "streak_head" in names() and make("streak_head").params == {"keep": 1}
    assert len(table) == 10 * 2 * 4 and sorted(table.param_keep.unique()) == [1, 2, 4, 8]
    # with room for everything, keeping more of each run of an api writes more
    writes = table[table.budget_bytes == 102400].groupby("param_keep").write_actions.sum()
    assert writes.is_monotonic_increasing and writes.iloc[0] < writes.iloc[-1]
    assert "budget_bytes" in printed.getvalue()


def test_every_zoo_policy_is_registered_and_documented():
    text = DOC.read_text()
    assert len(ZOO_NAMES) == 17
    for name in ZOO_NAMES:
        policy = make(name)
        assert f"| `{name}` |" in text, name
        for param in policy.params:
            assert f"`{param}`" in text, (name, param)
