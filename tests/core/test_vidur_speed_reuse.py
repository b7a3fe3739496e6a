"""`python -m benchmarks.vidur.speed --vidur-json FILE`: Vidur's rates reused from an earlier
run's speed JSON (no Vidur needed), jaxsched measured here, the ratio across machines; the
mismatch errors; and the pure parts of the large-S guards (seed chunks, projected time)."""

from __future__ import annotations

import json

import pytest

from benchmarks.vidur import speed

N = 20
LOOP_S = (0.010, 0.030, 0.020)  # Vidur's event-loop seconds per process: median 0.02 s
MACHINE = "2 CPU cores (test CPU), jax 0.0 on cpu"


def vidur_run(seed: int, loop_s: float, load: float) -> dict:
    line = f"10:00:0{seed} up 1 day,  0 user,  load average: {load:.2f}, 1.00, 1.00"
    return dict(
        kind="vidur",
        seed=seed,
        wall_s=2.0 + loop_s,
        startup_s=1.9,
        simulation_s=loop_s + 0.1,
        completed=N,
        all_finished=True,
        uptime_before=line,
        uptime_after=line,
        imports_s=1.5,
        build_s=0.05,
        loop_s=loop_s,
        write_s=0.05,
    )


def earlier_run(path, schedulers=("sarathi",), table_size=64, **settings_over) -> dict:
    """A speed.json as an earlier run with Vidur would write it (Vidur rows only)."""
    settings = (
        dict(requests=N, seeds=[1], vidur_seeds=len(LOOP_S), table_size=table_size, machine="2 CPU cores")
        | speed.workload_settings()
    )
    settings |= settings_over
    cells = []
    for s in schedulers:
        runs = [vidur_run(i, x, 0.5 + i) for i, x in enumerate(LOOP_S)]
        cells.append(dict(scheduler=s, runs=runs, summary=speed.summarize(runs, settings["requests"], ())))
    rec = dict(
        command="python -m benchmarks.vidur.speed --requests 20",
        vidur_commit="abc123",
        settings=settings,
        environment=dict(machine=MACHINE),
        uptime_before="10:00:00 up 1 day,  0 user,  load average: 0.40, 1.00, 1.00",
        uptime_after="10:00:09 up 1 day,  0 user,  load average: 2.50, 1.00, 1.00",
        total_wall_s=9.0,
        cells=cells,
    )
    path.write_text(json.dumps(rec))
    return rec


def test_reuse_measures_jaxsched_against_the_reused_vidur_rate(tmp_path, capsys):
    src = tmp_path / "earlier.json"
    earlier_run(src)
    out = tmp_path / "out"
    argv = ["--vidur-json", str(src), "--seeds", "1,4", "--jax-calls", "2", "--name", "reuse", "--out", str(out)]
    assert speed.main(argv) == 0
    report = json.loads((out / "reuse.json").read_text())
    md = (out / "reuse.md").read_text()
    assert report["complete"] and report["running"] is None
    assert report["vidur_reused"]["machine"] == MACHINE and report["vidur_reused"]["vidur_commit"] == "abc123"
    assert report["settings"]["requests"] == N and report["settings"]["table_size"] == 64
    [cell] = report["cells"]
    assert cell["scheduler"] == "sarathi" and cell["skipped"] == []
    vidur, *jax_rows = cell["summary"]
    # The reused rate: N requests over the median loop time of the reused processes.
    assert vidur["simulator"] == "Vidur" and vidur["reused"] and vidur["measured_on"] == MACHINE
    assert vidur["rate_per_s"] == pytest.approx(N / 0.020, rel=1e-12) and vidur["runs"] == 3
    assert [r["seeds"] for r in jax_rows] == [1, 4]
    jax_runs = [r for r in cell["runs"] if r["kind"] == "jax"]
    assert [r["seeds"] for r in jax_runs] == [1, 4, 1, 4]  # jax-calls rounds over S
    assert [r["first_call"] for r in jax_runs] == [True, True, False, False]
    assert all(r["reused"] for r in cell["runs"] if r["kind"] == "vidur")
    for row in jax_rows:
        s = row["seeds"]
        first, warm = [r for r in jax_runs if r["seeds"] == s]
        assert first["compilations"] > 0 and warm["compilations"] == 0
        assert row["completed"] == s * N and row["all_finished"] and first["all_finished"] and warm["all_finished"]
        # Simulation time = the later (non-compiling) call; the rate and the ratio from it.
        assert row["simulation_s"] == warm["wall_s"] and row["compile_s"] == first["compile_s"]
        assert row["rate_per_s"] == pytest.approx(s * N / warm["wall_s"], rel=1e-12)
        assert row["ratio"] == pytest.approx(row["rate_per_s"] / vidur["rate_per_s"], rel=1e-12)
    # The report says where Vidur ran and that the ratio crosses machines.
    assert "Vidur was not run here" in md and MACHINE in md and "cross-machine" in md
    assert "Vidur (reused)" in md and str(src) in md
    printed = capsys.readouterr().out
    assert f"requests/s, x1.0 (reused, measured on {MACHINE})" in printed


def test_reuse_time_limit_lists_the_calls_not_run(tmp_path):
    src = tmp_path / "earlier.json"
    earlier_run(src)
    out = tmp_path / "out"
    argv = ["--vidur-json", str(src), "--seeds", "1,4", "--jax-calls", "2", "--time-limit", "0.001"]
    assert speed.main(argv + ["--out", str(out)]) == 0
    report = json.loads((out / "speed_reuse.json").read_text())
    [cell] = report["cells"]
    # The first call has no projection and runs; every later one is projected past the limit.
    assert [(r["seeds"], r["first_call"]) for r in cell["runs"] if r["kind"] == "jax"] == [(1, True)]
    assert [k["seeds"] for k in cell["skipped"]] == [4, 1, 4]
    assert all(k["reason"].startswith("not run: projected") for k in cell["skipped"])
    rows = {r["seeds"]: r for r in cell["summary"] if r["simulator"] == "jaxsched"}
    assert rows[4]["runs"] == 0 and rows[4]["rate_per_s"] is None
    assert rows[1]["runs"] == 1 and rows[1]["all_finished"] and rows[1]["completed"] == N
    md = (out / "speed_reuse.md").read_text()
    assert "| jaxsched | 4 | 0 | - | not run |" in md and "- S = 4: not run: projected" in md


@pytest.mark.parametrize(
    "argv, field",
    [
        (["--requests", "30"], "settings.requests = 20"),
        (["--table-size", "128"], "settings.table_size = 64"),
        (["--schedulers", "vllm"], "'vllm' has no Vidur runs"),
        (["--vidur-seeds", "2"], "--vidur-seeds does not go with --vidur-json"),
    ],
)
def test_reuse_mismatch_is_one_error_naming_the_field(tmp_path, capsys, argv, field):
    src = tmp_path / "earlier.json"
    earlier_run(src)
    with pytest.raises(SystemExit) as exc:
        speed.main(["--vidur-json", str(src), "--seeds", "1", "--out", str(tmp_path / "out")] + argv)
    assert exc.value.code == 2
    assert field in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_reuse_rejects_another_workload_and_broken_records(tmp_path, capsys):
    def error(src) -> str:
        with pytest.raises(SystemExit):
            speed.main(["--vidur-json", str(src), "--out", str(tmp_path / "out")])
        return capsys.readouterr().err

    other = tmp_path / "other.json"
    earlier_run(other, load=0.7)
    assert "settings.load = 0.7" in error(other)
    broken = tmp_path / "broken.json"
    rec = earlier_run(broken)
    del rec["cells"][0]["runs"][1]["loop_s"]
    broken.write_text(json.dumps(rec))
    assert "no field cells[0] (sarathi) Vidur run 1: loop_s" in error(broken)
    edited = tmp_path / "edited.json"
    rec = earlier_run(edited)
    rec["cells"][0]["summary"][0]["rate_per_s"] *= 2
    edited.write_text(json.dumps(rec))
    assert "is not that of its runs" in error(edited)
    assert "not a readable speed JSON" in error(tmp_path / "missing.json")
    # The reused file itself is never the output.
    same = tmp_path / "speed_reuse.json"
    earlier_run(same)
    with pytest.raises(SystemExit):
        speed.main(["--vidur-json", str(same), "--out", str(tmp_path)])
    assert "would overwrite the reused --vidur-json" in capsys.readouterr().err


def test_reuse_of_a_reuse_report_keeps_the_machine_that_ran_vidur(tmp_path):
    src = tmp_path / "earlier.json"
    earlier_run(src)
    rec = json.loads(src.read_text())
    rec["environment"] = dict(machine="1 x NVIDIA H200 (gpu), 16 CPU cores, jax 0.0 on gpu")
    rec["vidur_reused"] = dict(machine=MACHINE, command="first", uptime_before="u0", uptime_after="u1")
    src.write_text(json.dumps(rec))
    got = speed.read_vidur_record(src)
    assert got["machine"] == MACHINE and got["command"] == "first" and got["uptime_after"] == "u1"
    assert list(got["cells"]) == ["sarathi"] and [r["loop_s"] for r in got["cells"]["sarathi"]] == list(LOOP_S)


def test_seed_chunk_and_projected_time():
    # All seeds at once while they fit in half the device memory (or the memory is unknown).
    assert speed.seed_chunk(65536, 188_000, None) is None
    assert speed.seed_chunk(65536, 188_000, 140 * 2**30) is None
    assert speed.seed_chunk(65536, 188_000, 16 * 2**30) == int(0.5 * 16 * 2**30 // 188_000)
    assert speed.seed_chunk(10, 2**40, 2**30) == 1
    run = dict(kind="jax", seeds=4, wall_s=3.0, compile_s=2.0, completed=4 * N)
    assert speed.projected_s([], 4, N) is None
    assert speed.projected_s([dict(kind="vidur")], 4, N) is None
    assert speed.projected_s([run], 4, N) == 1.0  # the same S: its simulation time
    # A new S: its requests at the best rate so far (80 requests/s), plus the longest compile.
    assert speed.projected_s([run], 16, N) == pytest.approx(16 * N / 80.0 + 2.0)
    assert speed.is_out_of_memory(RuntimeError("RESOURCE_EXHAUSTED: Out of memory allocating 1 bytes"))
    assert not speed.is_out_of_memory(ValueError("table_size must be >= 1"))


def test_a_call_that_does_not_finish_its_requests_is_flagged():
    import dataclasses

    cfg, params = speed.jax_run(N, "sarathi", 64)
    short = dataclasses.replace(cfg, horizon_s=3.0)  # ends before the stream's requests are served
    rec = dict(kind="jax", first_call=True, **speed.time_jax(short, params, 2, speed.CompileCounter()))
    assert rec["completed"] < 2 * N and not rec["all_finished"]
    [row] = speed.summarize([rec], N, (2,))
    assert not row["all_finished"] and row["ratio"] is None
    assert "NOT all finished" in speed.table_row(row)[5]
