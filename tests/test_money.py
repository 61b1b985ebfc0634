"""Cost in money (judge/accounting/prices.py, judge/engine/hosted_cost.py, the OpenAI backend's spend): the shipped
price table and a user's over it, --check's estimate in dollars (synchronous and batch) without contacting
the server, the cost of a run from the usage the server reported (printed and recorded), and --max-cost:
a run estimated above the cap is refused, a running one stops before the spend could pass it, and a rerun
with a higher cap goes on from the cache."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from judge.accounting.prices import dollars, load_prices
from judge.accounting.spend import OverBudget
from judge.backends import create_backend
from judge.backends.layer import innermost
from judge.core.config import GenerateConfig
from judge.core.errors import InputError
from judge.data.items import SYSTEM, USER, Item, Turn
from judge.engine.cache import Cache, CachedBackend
from judge.prompts.templates import get_prompt
from judge.scorers.llm import LLMJudge
from tests.fault_server import FaultServer, prompt_tokens

pytest.importorskip("openai")

ROOT = Path(__file__).resolve().parents[1]
#: A price for the fault server's model: a thousandth of a dollar per token, so a run costs cents.
PRICES = ('[[models]]\nmodel = "fault-model"\ninput = 1000.0\ncached_input = 500.0\noutput = 2000.0\n'
          'batch_discount = 0.5\nchecked = 2026-11-28\nsource = "a test"\n')


def test_every_shipped_row_says_when_and_where_its_prices_were_read():
    data = tomllib.loads((ROOT / "judge" / "accounting" / "prices.toml").read_text())
    assert len(data["models"]) >= 10
    for row in data["models"]:
        assert row["checked"].year >= 2025 and "OpenAI pricing page" in row["source"], row
        assert 0 < row["cached_input"] <= row["input"] < row["output"] and row["batch_discount"] == 0.5, row
    table = load_prices()
    mini = table.get("gpt-4o-mini")
    assert mini is not None and (mini.input, mini.cached_input, mini.output) == (0.15, 0.075, 0.60)
    assert table.get("gpt-4o-mini-2024-07-18") is mini
    # 1M prompt tokens of which half cached, 1,000 answer tokens
    assert mini.cost(1_000_000, 1_000, cached_tokens=500_000) == pytest.approx(0.075 + 0.0375 + 0.0006)
    assert mini.cost(1_000_000, 0, batch=True) == pytest.approx(0.075)


def test_an_unknown_model_has_no_price_and_a_users_table_adds_one(tmp_path):
    table = load_prices()
    assert table.get("fault-model") is None and table.get("gpt-4o-mini-2099-01-01") is None
    assert "no price for model 'fault-model'" in table.missing("fault-model") and "--prices" in table.missing("x")
    mine = tmp_path / "prices.toml"
    mine.write_text(PRICES + '[[models]]\nmodel = "gpt-4o-mini"\ninput = 9.0\noutput = 9.0\n')
    table = load_prices(mine)
    assert table.get("fault-model").input == 1000.0
    over = table.get("gpt-4o-mini")
    assert (over.input, over.cached_input, over.batch_discount, over.source) == (9.0, 9.0, 0.0, str(mine))
    assert str(mine) in table.origin


@pytest.mark.parametrize(("text", "where"), [
    ('[[models]]\nmodel = "m"\ninput = -1\noutput = 1\n', "record models[0] (m), field 'input'"),
    ('[[models]]\nmodel = "m"\noutput = 1\n', "record models[0] (m), field 'input'"),
    ('[[models]]\nmodel = "m"\ninput = 1\noutput = 1\nbatch_discount = 1.5\n', "field 'batch_discount'"),
    ('[[models]]\nmodel = "m"\ninput = 1\noutput = 1\nprice = 3\n', "field 'price'"),
    ("models = 3\n", "field 'models'"),
    ("not toml [", "not a TOML file"),
])
def test_a_bad_price_file_is_a_clear_error(tmp_path, text, where):
    f = tmp_path / "p.toml"
    f.write_text(text)
    with pytest.raises(InputError, match=re.escape(where)) as err:
        load_prices(f)
    assert str(f) in str(err.value)


def test_dollars_read_as_people_write_them():
    assert [dollars(x) for x in (0.0123, 1.5, 0, 0.0003, 0.000012, 12.34567)] == \
        ["$0.0123", "$1.5000", "$0.0000", "$0.00030", "$0.000012", "$12.3457"]


def test_check_prints_the_estimate_in_dollars_without_contacting_the_server(capsys):
    """The issue's command: `judge score examples/dialogues.jsonl --backend openai --model gpt-4o-mini --check`."""
    from judge.cli import main

    with FaultServer() as srv:
        assert main(["score", "examples/dialogues.jsonl", "--backend", "openai", "--model", "gpt-4o-mini",
                     "--base-url", srv.base_url, "--no-cache", "--check"]) == 0
        assert srv.requests == []
    out = capsys.readouterr().out
    row = re.search(r"^yesno-none-k0\s+12\s+0\s+12\s+([\d,]+)\s+\$(0\.\d+)\s+\$(0\.\d+)$", out, re.M)
    assert row, out
    tokens, sync, batch = int(row[1].replace(",", "")), float(row[2]), float(row[3])
    assert sync == pytest.approx((tokens * 0.15 + 12 * 0.60) / 1e6, rel=0.02)
    assert batch == pytest.approx(sync / 2, rel=0.05)  # each printed to two significant digits
    assert re.search(r"^total: 12 requests, ~[\d,]+ prompt tokens, ~\$0\.\d+ synchronous, ~\$0\.\d+ through the "
                     r"Batch API$", out, re.M), out
    assert "prices: gpt-4o-mini: $0.15 input, $0.075 cached input, $0.6 output per 1M tokens, batch 50% off " \
           "(checked 2025-07-04;" in out
    assert "note: prompt tokens are estimated without the hosted model's tokenizer" in out


def test_check_says_when_a_model_has_no_price(capsys):
    from judge.cli import main

    assert main(["score", "examples/dialogues.jsonl", "--backend", "openai", "--model", "my-own-model",
                 "--base-url", "http://127.0.0.1:9/v1", "--no-cache", "--check", "--limit", "2"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^yesno-none-k0\s+2\s+0\s+2\s+[\d,]+\s+n/a \(no price\)\s+n/a$", out, re.M), out
    assert "note: no price for model 'my-own-model' in judge/accounting/prices.toml: judge does not guess one" in out


def test_a_run_prints_and_records_what_it_cost(tmp_path, capsys):
    from judge.cli import main

    (tmp_path / "p.toml").write_text(PRICES)
    out = tmp_path / "scores.jsonl"
    with FaultServer() as srv:
        code = main(["score", "examples/dialogues.jsonl", "--backend", "openai", "--model", "fault-model",
                     "--base-url", srv.base_url, "--prices", str(tmp_path / "p.toml"), "--no-cache", "-o", str(out)])
        assert code == 0
        expected = sum(prompt_tokens(r.prompt) * 1000 + 2000 for r in srv.requests) / 1e6
    err = capsys.readouterr().err
    assert f"judge: API cost: {dollars(expected)} (the usage the server reported" in err, err
    meta = json.loads(out.with_suffix(".meta.json").read_text())
    assert meta["cost_usd"] == pytest.approx(expected, abs=1e-6)
    assert meta["usage"]["requests"] == 12 and meta["usage"]["completion_tokens"] == 12


def test_max_cost_refuses_a_run_estimated_above_it(tmp_path, capsys):
    from judge.cli import main

    (tmp_path / "p.toml").write_text(PRICES)
    with FaultServer() as srv:
        code = main(["score", "examples/dialogues.jsonl", "--backend", "openai", "--model", "fault-model",
                     "--base-url", srv.base_url, "--prices", str(tmp_path / "p.toml"), "--no-cache",
                     "--max-cost", "0.5"])
        assert code == 2 and srv.requests == []
    err = capsys.readouterr().err
    assert re.search(r"field '--max-cost': the run's estimated cost ~\$\d+\.\d+ is above --max-cost \$0\.5000", err), err
    with pytest.raises(InputError, match="--max-cost needs the model's price: no price for model 'fault-model'"):
        create_backend("openai", "fault-model", GenerateConfig(), base_url="http://127.0.0.1:9/v1", max_cost=1.0)


def test_the_cost_layer_is_put_around_the_backend_and_gives_it_the_purse_every_path_asks(tmp_path):
    """create_backend puts the registered cost layer around the OpenAI backend: the backend's purse (what a
    synchronous request and a batch ask) is the layer's, and the spend is priced from the backend's token counts."""
    (tmp_path / "p.toml").write_text(PRICES)
    priced = create_backend("openai", "fault-model", GenerateConfig(), base_url="http://127.0.0.1:9/v1",
                            prices=str(tmp_path / "p.toml"), max_cost=1.0)
    inner = innermost(priced)
    assert inner is not priced and inner.purse is priced.purse and priced.purse.cap == 1.0
    inner.usage.add({"prompt_tokens": 100, "completion_tokens": 1})
    assert priced.counters()["cost_micro_usd"] == 102_000 and priced.spent() == pytest.approx(0.102)
    held = priced.purse.hold(100, 0)  # fits: set aside until its answer is counted
    assert held == pytest.approx(0.1)
    priced.purse.release(held)
    with pytest.raises(OverBudget, match=r"past --max-cost \$1\.0000 \(\$0\.1020 spent\)"):
        priced.purse.hold(1_000, 0)
    unpriced = create_backend("openai", "fault-model", GenerateConfig(), base_url="http://127.0.0.1:9/v1")
    innermost(unpriced).usage.add({"prompt_tokens": 5, "completion_tokens": 1})
    assert unpriced.counters()["unpriced_requests"] == 1 and "cost_micro_usd" not in unpriced.counters()
    for b in (priced, unpriced):
        b.close()


def test_max_cost_stops_before_the_spend_passes_it_and_a_rerun_goes_on_from_the_cache(tmp_path):
    its = [Item(id=f"m{i}", level="turn", context=(Turn(USER, "Where should I travel in May?"),
                                                       Turn(SYSTEM, "Somewhere warm?"), Turn(USER, "Yes, by the sea.")),
                response=f"Try the coast near Lisbon ({i}).") for i in range(20)]
    (tmp_path / "p.toml").write_text(PRICES)

    def judge(srv: FaultServer, cap: float) -> LLMJudge:
        cfg = GenerateConfig(concurrency=2, max_retries=1, cache_path=str(tmp_path / "c.sqlite"))
        inner = create_backend("openai", "fault-model", cfg, base_url=srv.base_url, prices=str(tmp_path / "p.toml"),
                               max_cost=cap)
        return LLMJudge(get_prompt("yesno"), CachedBackend(inner, Cache(tmp_path / "c.sqlite")), batch_size=64)

    with FaultServer() as srv:
        first = judge(srv, 0.5)
        scores = list(first.score(its))
        spent = first.backend.inner.spent()
        scored = [s for s in scores if s.ok]
        stopped = [s for s in scores if not s.ok]
        assert scored and stopped and len(scored) == len(srv.requests)
        assert spent <= 0.5 and spent == pytest.approx(sum(prompt_tokens(r.prompt) * 1000 + 2000 for r in srv.requests) / 1e6)
        assert all(s.error.startswith("not scored: sending it could take the spend past --max-cost $0.5000 (")
                   for s in stopped)
        first.backend.close()
        sent = len(srv.requests)
        again = judge(srv, 10.0)
        rescored = list(again.score(its))
        assert all(s.ok for s in rescored)
        assert len(srv.requests) - sent == len(stopped)  # only what the cap stopped was sent
        assert again.backend.hits == len(scored)
        again.backend.close()


def test_the_documented_check_command_prints_the_documented_money_lines(tmp_path, monkeypatch, capsys):
    """docs/backends-api.md, "Cost in money": its command, run as written from an empty cache, prints the
    documented table (the counts and dollars are exact: the token estimate is a function of the text)."""
    from judge.cli import main

    section = (ROOT / "docs" / "backends-api.md").read_text().split("## Cost in money", 1)[1].split("\n## ", 1)[0]
    shown = re.search(r"```\n\$ (judge score [^\n]*)\n\.\.\.\n(.*?)```", section, re.S)
    assert shown, "the section shows a command and its output"
    monkeypatch.setenv("JUDGE_CACHE", str(tmp_path / "cache.sqlite"))
    monkeypatch.chdir(ROOT)
    assert main(shown[1].split()[1:]) == 0
    printed = capsys.readouterr().out.splitlines()
    expected = shown[2].rstrip("\n").splitlines()
    start = printed.index(expected[0])
    assert printed[start:start + len(expected)] == expected


def test_run_check_prices_its_hosted_cells(tmp_path, data_dir, monkeypatch, capsys):
    from judge.cli import main

    monkeypatch.setenv("JUDGE_CACHE", str(tmp_path / "cache.sqlite"))
    config = tmp_path / "h.toml"
    config.write_text('name = "h"\nlimit = 2\ndatasets = ["DGR"]\n[[methods]]\nname = "m"\nprompt = "yesno"\n'
                      'backend = "mock"\n[[methods]]\nname = "api"\nprompt = "yesno"\nbackend = "openai"\n'
                      'model = "gpt-4o-mini"\noptions = { base_url = "http://127.0.0.1:9/v1" }\n')
    assert main(["run", str(config), "--data-dir", str(data_dir), "--check"]) == 0
    out = capsys.readouterr().out
    hosted = re.findall(r"^api DGR \S+\s+2\s+0\s+2\s+[\d,]+\s+\$0\.\d+\s+\$0\.\d+$", out, re.M)
    assert hosted and not re.search(r"^m DGR .*\$", out, re.M), out  # the mock cells cost nothing, unlisted
    assert re.search(r"^total: \d+ requests, ~[\d,]+ prompt tokens, ~\$0\.\d+ synchronous", out, re.M), out


def test_a_harness_run_records_its_cost_in_the_summary_and_respects_max_cost(tmp_path, data_dir, monkeypatch, capsys):
    from judge.cli import main

    monkeypatch.setenv("JUDGE_CACHE", str(tmp_path / "cache.sqlite"))
    (tmp_path / "p.toml").write_text(PRICES)
    with FaultServer() as srv:
        def config(extra: str) -> Path:
            path = tmp_path / "h.toml"
            path.write_text(f'name = "h"\nlimit = 3\ndatasets = ["DGR"]\noutput = "{tmp_path / "out"}"\n'
                            '[[methods]]\nname = "api"\nprompt = "yesno"\nbackend = "openai"\nmodel = "fault-model"\n'
                            f'options = {{ base_url = "{srv.base_url}", prices = "{tmp_path / "p.toml"}"{extra} }}\n')
            return path

        assert main(["run", str(config(", max_cost = 0.01")), "--data-dir", str(data_dir), "--no-progress"]) == 2
        assert srv.requests == [] and "is above --max-cost $0.0100" in capsys.readouterr().err
        assert main(["run", str(config("")), "--data-dir", str(data_dir), "--no-progress"]) == 0
        expected = sum(prompt_tokens(r.prompt) * 1000 + 2000 for r in srv.requests) / 1e6
        sent = len(srv.requests)
        summary = json.loads((tmp_path / "out" / "summary.json").read_text())
        assert summary["cost_usd"] == pytest.approx(expected, abs=1e-6) and summary["counters"]["requests"] == sent
        # a cap (or pacing) only changes how requests are sent: the folder resumes with another one
        assert main(["run", str(config(", max_cost = 100.0, rpm = 6000")), "--data-dir", str(data_dir),
                     "--no-progress"]) == 0
        assert len(srv.requests) == sent
    assert f"judge: API cost: {dollars(expected)}" in capsys.readouterr().err
    # the summary of the last pass (everything from the folder: nothing sent, nothing spent)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary.get("cost_usd", 0.0) == 0.0
