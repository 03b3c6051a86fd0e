"""``wpbjax report`` on a package sweep's table: summary with intervals and the ratio-vs-budget figure."""

import pandas as pd
import pytest

from wpbjax.cli import main
from wpbjax.packages import sweeps
from wpbjax.reports import load_results
from wpbjax.reports.packages import check_package_results, summary_markdown


@pytest.fixture(scope="module")
def package_table(tmp_path_factory):
    table = sweeps.run_distribution("memaudit_small", range(30), [1, 4, 8], ["opt", "oracle_gvt", "density_only"])
    path = tmp_path_factory.mktemp("pk") / "pk.csv"
    table.to_csv(path, index=False)
    return table, path


def test_report_command_on_package_results(package_table, tmp_path):
    table, path = package_table
    assert main(["report", str(path), "--out", str(tmp_path / "rep"), "--quiet"]) == 0
    names = {p.name for p in (tmp_path / "rep").iterdir()}
    assert names == {"package_summary.csv", "package_summary.md", "ratio_vs_budget_memaudit_small.png"}
    summ = pd.read_csv(tmp_path / "rep" / "package_summary.csv")
    means = table.groupby(["method", "budget"])["ratio"].mean()
    for _, row in summ.iterrows():
        assert row["mean_ratio"] == pytest.approx(means[(row["method"], row["budget"])], abs=1e-12)
        assert row["ci_low"] <= row["mean_ratio"] <= row["ci_high"] and row["n"] == 30
    opt_rows = summ[summ.method == "opt"]
    assert (opt_rows[["mean_ratio", "ci_low", "ci_high"]] == 1.0).all().all()
    text = (tmp_path / "rep" / "package_summary.md").read_text()
    assert "| oracle_gvt |" in text and "B=8" in text and "30 packages" in text


def test_package_table_checks(package_table, tmp_path):
    table, path = package_table
    assert list(load_results(path).columns) == list(table.columns)
    with pytest.raises(ValueError, match="missing columns opt"):
        check_package_results(table.drop(columns=["opt"]), "pk.csv")
    bad = table.astype({"ratio": object})
    bad.loc[3, "ratio"] = "high"
    with pytest.raises(ValueError, match="row 4: column 'ratio'"):
        check_package_results(bad, "pk.csv")
    with pytest.raises(ValueError, match="1 duplicate rows"):
        check_package_results(pd.concat([table, table.iloc[:1]]), "pk.csv")
    with pytest.raises(ValueError, match="density_only at budget 8 .* has 29 rows where others have 30"):
        check_package_results(
            table.drop(index=table.index[(table.method == "density_only") & (table.budget == 8)][:1]), "pk.csv"
        )
    stray = pd.concat(
        [table, pd.DataFrame([{"distribution": "1", "seed": 2}])], ignore_index=True
    )  # a glued "1,2" line
    with pytest.raises(ValueError, match="nan at budget nan .* has 1 rows where others have 30"):
        check_package_results(stray, "pk.csv")
    assert "oracle_gvt" in summary_markdown(sweeps.summary(table, n_boot=10))
