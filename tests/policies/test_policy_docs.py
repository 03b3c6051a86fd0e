"""The "your own policy" example of docs/policies.md runs as written, and every zoo name is documented."""

import contextlib
import io
import pathlib
import re

import numpy as np
import pandas as pd

from wpbjax.cli import main
from wpbjax.policies import make, names
from wpbjax.policies.zoo import ZOO_NAMES

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "policies.md"


def test_your_own_policy_written_from_the_docs_checks_and_sweeps_from_python_and_the_cli(tmp_path, monkeypatch):
    """The issue's "done when": a user's own policy, written against docs/policies.md only, passes
    check_policy and sweeps from Python and from the CLI (the doc's blocks, run as written)."""
    section = DOC.read_text().split("## Your own policy", 1)[1].split("\n## ", 1)[0]
    module, script = re.findall(r"```python\n(.*?)```", section, re.S)[:2]
    command = re.search(r"```bash\n(.*?)```", section, re.S).group(1).split()
    assert module.startswith("# my_policies.py\n") and len(module.splitlines()) <= 25
    (tmp_path / "my_policies.py").write_text(module)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    namespace, printed = {}, io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(script, str(DOC), "exec"), namespace)  # check_policy, register, run_sweep
    table = namespace["table"]
    assert "streak_head" in names() and make("streak_head").params == {"keep": 1}
    assert len(table) == 10 * 2 * 4 and sorted(table.param_keep.unique()) == [1, 2, 4, 8]
    # with room for everything, keeping more of each run of an api writes more
    writes = table[table.budget_bytes == 102400].groupby("param_keep").write_actions.sum()
    assert writes.is_monotonic_increasing and writes.iloc[0] < writes.iloc[-1]
    assert "budget_bytes" in printed.getvalue()

    assert command[:2] == ["wpbjax", "sweep"]
    assert main(command[1:] + ["--quiet"]) == 0
    rows = pd.read_csv(tmp_path / "streak.csv")
    assert set(rows.policy) == {"my_policies.py:STREAK_HEAD"} and len(rows) == len(table)
    ours = table.sort_values(["param_keep", "budget_bytes", "episode_id"]).reset_index(drop=True)
    theirs = rows.sort_values(["param_keep", "budget_bytes", "episode_id"]).reset_index(drop=True)
    assert np.allclose(ours.f1, theirs.f1) and (ours.write_actions.values == theirs.write_actions.values).all()


def test_every_zoo_policy_is_registered_and_documented():
    text = DOC.read_text()
    assert len(ZOO_NAMES) == 20
    for name in ZOO_NAMES:
        policy = make(name)
        assert f"| `{name}` |" in text, name
        for param in policy.params:
            assert f"`{param}`" in text, (name, param)
