"""`jaxsched data list | get` and trace names: the registry of published traces, the data
folder, resolving a name to its file there, and downloading with a checksum. Downloads here
read file:// copies of the fixtures; nothing touches the network."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import urllib.request
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from jaxsched.cli import main
from jaxsched.errors import ConfigError
from jaxsched.outputs import file_mode
from jaxsched.workload import datasets as ds
from jaxsched.workload import read_trace
from jaxsched.workload.formats import FORMAT_NAMES

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "traces"
AZURE_FIXTURE = FIXTURES / "azure_llm_2024.csv"


@pytest.fixture
def data_folder(tmp_path, monkeypatch) -> Path:
    """An empty data folder named by $JAXSCHED_DATA."""
    folder = tmp_path / "data"
    monkeypatch.setenv(ds.DATA_ENV, str(folder))
    return folder


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Any URL but file:// fails the test: downloads here never leave the machine."""
    real = urllib.request.urlopen

    def local_only(url, *a, **kw):
        assert str(url).startswith("file://"), f"a test tried the network: {url}"
        return real(url, *a, **kw)

    monkeypatch.setattr(urllib.request, "urlopen", local_only)


def _local_entry(monkeypatch, name: str, source: Path, **changes) -> ds.Dataset:
    """Point registry entry `name` at a file:// URL of `source` (and apply `changes`)."""
    entry = replace(ds.TRACES[name], url=source.resolve().as_uri(), **changes)
    monkeypatch.setitem(ds.TRACES, name, entry)
    return entry


def test_registry_entries_are_well_formed():
    assert len(ds.TRACES) >= 8
    for name, d in ds.TRACES.items():
        assert d.name == name and d.format in FORMAT_NAMES and d.licence and d.what
        assert d.url.startswith("https://") and d.source.startswith("https://")
        # The stored name is the published one (gzip downloads are stored decompressed), so
        # a file put there by hand is found.
        assert d.url.rsplit("/", 1)[1] == d.filename + (".gz" if d.gzip else "")
        assert d.sha256 is None or len(d.sha256) == 64
    names = set(ds.TRACES)
    assert {"burstgpt_1", "azure_2023_code", "azure_2023_conv", "azure_2024_code", "azure_2024_conv"} <= names
    assert {"azure_lmm_2025", "mooncake_conversation"} <= names


def test_data_folder_precedence(tmp_path, monkeypatch):
    monkeypatch.delenv(ds.DATA_ENV, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert ds.data_dir() == tmp_path / "xdg" / "jaxsched"
    monkeypatch.setenv("XDG_DATA_HOME", "")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert ds.data_dir() == tmp_path / "home" / ".local" / "share" / "jaxsched"
    monkeypatch.setenv(ds.DATA_ENV, str(tmp_path / "env"))
    assert ds.data_dir() == tmp_path / "env"
    assert ds.data_dir(tmp_path / "flag") == tmp_path / "flag"  # --dir wins


def test_list_shows_every_name_and_presence(data_folder, capsys):
    data_folder.mkdir()
    shutil.copy(AZURE_FIXTURE, data_folder / ds.TRACES["azure_2024_code"].filename)
    assert main(["data", "list"]) == 0
    out = capsys.readouterr().out
    assert f"data folder: {data_folder}" in out
    lines = {line.split()[0]: line for line in out.splitlines() if line and not line.startswith(" ")}
    for name, d in ds.TRACES.items():
        assert name in lines, name
        assert d.url in out and d.licence in out
        assert lines[name].split()[1] == ("present" if name == "azure_2024_code" else "absent"), lines[name]


def test_list_dir_option_overrides_the_environment(data_folder, tmp_path, capsys):
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(AZURE_FIXTURE, other / ds.TRACES["azure_2023_conv"].filename)
    assert main(["data", "list", "--dir", str(other)]) == 0
    out = capsys.readouterr().out
    assert f"data folder: {other}" in out
    assert next(ln for ln in out.splitlines() if ln.startswith("azure_2023_conv ")).split()[1] == "present"


def test_a_known_name_reads_from_the_data_folder(data_folder):
    data_folder.mkdir()
    shutil.copy(AZURE_FIXTURE, data_folder / ds.TRACES["azure_2024_conv"].filename)
    assert ds.resolve_trace("azure_2024_conv") == data_folder / "AzureLLMInferenceTrace_conv_1week.csv"
    by_name, by_path = read_trace("azure_2024_conv", times=True), read_trace(AZURE_FIXTURE, times=True)
    assert by_name == by_path and by_name.prompt.tolist() == by_path.prompt.tolist()
    assert np.array_equal(by_name.arrival_s, by_path.arrival_s)


def test_an_existing_path_wins_over_a_name(data_folder, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(AZURE_FIXTURE, tmp_path / "azure_2023_code")  # a file that happens to bear the name
    assert ds.resolve_trace("azure_2023_code") == Path("azure_2023_code")
    assert read_trace("azure_2023_code").num_requests is None  # read from the working directory


def test_a_missing_name_says_how_to_get_it(data_folder, capsys):
    with pytest.raises(ConfigError, match=r"`jaxsched data get azure_2023_conv`") as e:
        read_trace("azure_2023_conv")
    assert str(data_folder) in str(e.value) and "AzureLLMInferenceTrace_conv.csv" in str(e.value)
    # Every command that takes a trace inherits it, as one error line.
    assert main(["run", "--trace", "mooncake_conversation", "--steps", "10", "--seeds", "1", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "`jaxsched data get mooncake_conversation`" in err[0]


def test_unknown_names_stay_missing_paths(data_folder):
    with pytest.raises(ConfigError, match="does not exist"):
        read_trace("no_such_trace")


def test_get_downloads_and_records_the_checksum(data_folder, monkeypatch, capsys):
    _local_entry(monkeypatch, "azure_2024_code", AZURE_FIXTURE)
    want = hashlib.sha256(AZURE_FIXTURE.read_bytes()).hexdigest()
    assert main(["data", "get", "azure_2024_code"]) == 0
    out, err = capsys.readouterr()
    target = data_folder / "AzureLLMInferenceTrace_code_1week.csv"
    assert target.read_bytes() == AZURE_FIXTURE.read_bytes()
    assert f"sha256: {want}" in out and str(target) in out
    size = AZURE_FIXTURE.stat().st_size
    assert f"azure_2024_code: 0.0 of {size / 1e6:.1f} MB (100%)" in err  # the progress line
    manifest = json.loads((data_folder / ds.MANIFEST).read_text())
    assert manifest["azure_2024_code"]["sha256"] == want
    assert manifest["azure_2024_code"]["file"] == target.name
    assert manifest["azure_2024_code"]["bytes"] == AZURE_FIXTURE.stat().st_size
    assert sorted(p.name for p in data_folder.iterdir()) == sorted([target.name, ds.MANIFEST])  # no .part left
    assert target.stat().st_mode & 0o777 == file_mode()  # the umask's bits, not mkstemp's 0600
    assert read_trace("azure_2024_code") == read_trace(AZURE_FIXTURE)
    # A second get keeps the file unless --force.
    assert main(["data", "get", "azure_2024_code"]) == 2
    assert "--force" in capsys.readouterr().err
    assert main(["data", "get", "azure_2024_code", "--force", "--sha256", want.upper(), "--quiet"]) == 0
    assert "verified" in capsys.readouterr().out


def test_get_refuses_a_wrong_known_checksum(data_folder, monkeypatch, capsys):
    _local_entry(monkeypatch, "azure_2023_code", AZURE_FIXTURE, sha256="0" * 64)
    with pytest.raises(ConfigError, match="expected checksum is 0{64}"):
        ds.download("azure_2023_code", progress=False)
    assert not (data_folder / "AzureLLMInferenceTrace_code.csv").exists()
    assert not (data_folder / ds.MANIFEST).exists()
    assert [p.name for p in data_folder.iterdir()] == []  # the temporary file is gone too
    # The same through the command line and --sha256: one error line.
    _local_entry(monkeypatch, "azure_2023_code", AZURE_FIXTURE)
    assert main(["data", "get", "azure_2023_code", "--sha256", "f" * 64]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("jaxsched: error:") and "not kept" in err[-1]
    assert main(["data", "get", "azure_2023_code", "--sha256", "xyz"]) == 2
    assert "64 hexadecimal digits" in capsys.readouterr().err


def test_get_decompresses_a_gzip_download(data_folder, tmp_path, monkeypatch):
    archive = tmp_path / "AzureLMMInferenceTrace_multimodal.csv.gz"
    raw = (FIXTURES / "azure_lmm_2025.csv").read_bytes()
    archive.write_bytes(gzip.compress(raw))
    _local_entry(monkeypatch, "azure_lmm_2025", archive)
    path, sha = ds.download("azure_lmm_2025", progress=False)
    assert path == data_folder / "AzureLMMInferenceTrace_multimodal.csv" and path.read_bytes() == raw
    assert sha == hashlib.sha256(archive.read_bytes()).hexdigest()  # the download's checksum
    assert read_trace("azure_lmm_2025").num_images is not None


def test_offline_get_is_one_line_saying_where_the_file_goes(data_folder, tmp_path, monkeypatch, capsys):
    _local_entry(monkeypatch, "burstgpt_1", tmp_path / "absent.csv")  # an unreachable source
    assert main(["data", "get", "burstgpt_1", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and err[0].startswith("burstgpt_1: ")  # the source line, then the error
    assert "offline" in err[1] and str(data_folder / "BurstGPT_without_fails_1.csv") in err[1]
    assert not any(data_folder.iterdir())


def test_unknown_name_for_get(data_folder, capsys):
    assert main(["data", "get", "nope"]) == 2
    err = capsys.readouterr().err
    assert "must be one of" in err and "azure_2023_conv" in err
