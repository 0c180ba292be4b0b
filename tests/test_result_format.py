"""The raw result file format (augbench.result_format, workflow/schemas/result.schema.yaml): a
written file validates, a file that breaks the schema is refused in one line naming the file and
the first field at fault, the peer benchmark's published file reads through the declared
converter, the engines' pure-Python check agrees with the schema, and the analysis leaves a bad
file out and reads the others."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

from augbench import result_format
from augbench.analysis import tidy
from augbench.result_format import MEDIAN_THROUGHPUT, ResultFormatError
from augbench.results import non_ok_row, ok_row, result_file, write_result_file

FIXTURE = Path(__file__).parent / "fixtures" / "external-results" / "pillow_micro_results.json"
METADATA = {
    "machine": "m1",
    "regime": "micro",
    "scope": "memory",
    "library": "pillow",
    "dataset": {"key": "tiny-0123456789ab", "name": "tiny"},
    "benchmark_params": {"num_images": 8},
    "system_info": {"processor": "Test CPU", "hostname": "test"},
    "library_versions": {"pillow": "1.0"},
}


def _rows() -> dict[str, dict]:
    runs = [98.0, 100.0, 102.0]
    return {
        "Blur": ok_row(runs, [8 / r for r in runs], warmup_iterations=1),
        "Rotate": non_ok_row("unsupported", "no Rotate in this library"),
        "Sharpen": non_ok_row("early_stopped", "slower than 0.05 s/item"),
    }


def _payload() -> dict:
    """A version-1 file as the writer makes it, as a reader loads it."""
    return json.loads(json.dumps(result_file(METADATA, _rows())))


def _write(tmp_path: Path, payload: dict, name: str = "job.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(payload))
    return path


def _fault(payload: object, source: str = "f.json") -> str:
    """The full schema's one line; the engines' check must name the same field."""
    with pytest.raises(ResultFormatError) as full:
        result_format.validate(payload, source)
    with pytest.raises(ResultFormatError) as light:
        result_format.check(payload, source)
    line = str(full.value)
    assert "\n" not in line and line.startswith(f"{source}: ")
    field = line.split(": ")[1]
    assert str(light.value).split(": ")[1] == field, (line, str(light.value))
    return line


def test_a_written_file_validates_and_reads_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "raw" / "job.json"
    written = write_result_file(path, METADATA, _rows())
    assert written["metadata"]["schema_version"] == result_format.SCHEMA_VERSION
    payload = result_format.read(path)
    assert payload == json.loads(path.read_text())  # version 1: nothing converted
    assert payload["results"]["Blur"][MEDIAN_THROUGHPUT] == 100.0
    result_format.check(payload, path)
    rows = {r["transform"]: r for r in tidy.rows_from_file(path)}
    assert rows["Blur"]["status"] == "ok" and rows["Rotate"]["status"] == "unsupported"
    assert rows["Sharpen"]["reason"] == "slower than 0.05 s/item"


def test_a_row_without_status_is_named_in_one_line() -> None:
    payload = _payload()
    del payload["results"]["Rotate"]["status"]
    line = _fault(payload)
    assert line == "f.json: results.Rotate.status: missing"


def test_a_wrong_type_is_named_with_the_type_expected() -> None:
    payload = _payload()
    payload["results"]["Blur"][MEDIAN_THROUGHPUT] = "fast"
    assert _fault(payload) == "f.json: results.Blur.median_throughput: is string, expected number"
    payload = _payload()
    payload["results"]["Blur"]["throughputs"][1] = None
    assert _fault(payload) == "f.json: results.Blur.throughputs.1: is null, expected number"
    payload = _payload()
    payload["metadata"]["dataset"] = "tiny"
    assert _fault(payload) == "f.json: metadata.dataset: is string, expected object"
    payload = _payload()
    payload["results"]["Blur"] = 3
    assert _fault(payload) == "f.json: results.Blur: is integer, expected object"


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda p: p["results"]["Rotate"].pop("reason"),
         "results.Rotate.reason: missing (required when the row is not ok)"),
        (lambda p: p["results"]["Blur"].pop(MEDIAN_THROUGHPUT),
         "results.Blur.median_throughput: missing (required in an ok row)"),
        (lambda p: p["results"]["Blur"].update(status="fine"),
         "results.Blur.status: 'fine' is not one of ok, early_stopped, unsupported, skipped, "
         "error, env_failed"),
        (lambda p: p.pop("metadata"), "metadata: missing"),
        (lambda p: p["metadata"].update(schema_version=2),
         "metadata.schema_version: 2 is not one of 1"),
    ],
)  # fmt: skip
def test_what_the_schema_requires(change, expected: str) -> None:
    payload = _payload()
    change(payload)
    assert _fault(payload) == f"f.json: {expected}"


def test_the_first_fault_in_the_file_is_named() -> None:
    payload = _payload()
    payload["results"]["Sharpen"]["status"] = 7
    payload["results"]["Blur"]["num_successful_runs"] = 2.5
    assert (
        _fault(payload) == "f.json: results.Blur.num_successful_runs: is number, expected integer"
    )
    # An object's missing field comes before the faults of the fields it has.
    del payload["results"]["Blur"]["throughputs"]
    assert _fault(payload) == ("f.json: results.Blur.throughputs: missing (required in an ok row)")
    payload = _payload()
    payload["results"]["Rotate"]["status"] = "fine"  # no reason asked of an unknown status
    del payload["results"]["Rotate"]["reason"]
    assert _fault(payload).startswith("f.json: results.Rotate.status: 'fine' is not one of ok")


def test_read_names_the_file(tmp_path: Path) -> None:
    payload = _payload()
    del payload["results"]["Blur"]["status"]
    path = _write(tmp_path, payload)
    with pytest.raises(ResultFormatError) as caught:
        result_format.read(path)
    assert str(caught.value) == f"{path}: results.Blur.status: missing"
    broken = tmp_path / "broken.json"
    broken.write_text('{"metadata": {"machine": "m1"}, "results": {')
    with pytest.raises(ResultFormatError, match=r"broken.json: \(the file\): not readable JSON"):
        result_format.read(broken)


def test_the_writer_refuses_a_row_that_breaks_the_schema(tmp_path: Path) -> None:
    rows = _rows()
    rows["Blur"]["throughputs"] = ["fast"]
    path = tmp_path / "job.json"
    with pytest.raises(ResultFormatError, match=r"job.json: results.Blur.throughputs.0: is str"):
        write_result_file(path, METADATA, rows)
    assert not path.exists() and not list(tmp_path.iterdir())


def test_the_peer_benchmarks_published_file_reads_as_version_absent() -> None:
    raw = json.loads(FIXTURE.read_text())
    assert "schema_version" not in raw["metadata"]
    result_format.validate(raw, FIXTURE)
    payload = result_format.read(FIXTURE)
    assert payload["metadata"]["schema_version"] == result_format.SCHEMA_VERSION
    assert payload["metadata"][result_format.CONVERTED_FROM] == result_format.VERSION_ABSENT
    assert len(payload["results"]) == 24
    assert {row["status"] for row in payload["results"].values()} == {"ok"}
    result_format.validate(payload, FIXTURE)  # converted: a version-1 file
    result_format.check(payload, FIXTURE)


def test_the_converter_reads_the_flags_of_the_common_format() -> None:
    raw = json.loads(FIXTURE.read_text())
    raw["metadata"]["benchmark_params"]["slow_threshold_sec_per_item"] = 0.1
    raw["results"] = {
        "A": {"status": "error", "early_stopped": True, "error": "boom"},
        "B": {"supported": False},
        "C": {"early_stopped": "true", "median_throughput": 3.0},
        "D": {
            "status": "ok",
            "early_stopped": True,
            "median_throughput": 8.0,
            "throughputs": [8.0],
        },
        "E": {"status": "ok", "supported": False, "median_throughput": 0.0},
        "F": {"median_throughput": 0.0},
        "G": {"status": "ok", "median_throughput": 5.0, "throughputs": [5.0]},
    }
    original = copy.deepcopy(raw)
    result_format.validate(raw, "peer.json")
    converted = result_format.upgrade(raw, "peer.json")
    assert raw == original  # the file's own payload is not changed in place
    rows = converted["results"]
    assert {k: r["status"] for k, r in rows.items()} == {
        "A": "error", "B": "unsupported", "C": "early_stopped", "D": "early_stopped",
        "E": "unsupported", "F": "error", "G": "ok",
    }  # fmt: skip
    assert rows["A"]["reason"] == "boom"
    assert rows["B"]["reason"] == "not supported (supported: false in the file)"
    assert rows["D"]["reason"] == (
        "early-stopped by the run that wrote this file (its threshold: 0.1 s/item)"
    )
    assert rows["F"]["reason"] == result_format.NO_REASON
    assert "reason" not in rows["G"]
    assert result_format.CONVERTERS[result_format.VERSION_ABSENT] is result_format.from_common


def test_a_version_without_a_converter_is_refused_not_guessed() -> None:
    payload = _payload()
    payload["metadata"]["schema_version"] = 7
    with pytest.raises(ResultFormatError) as caught:
        result_format.upgrade(payload, "f.json")
    assert str(caught.value) == (
        "f.json: metadata.schema_version: version 7 is not one this reader knows (0, 1)"
    )


def test_the_schema_and_the_engines_check_declare_the_same_fields() -> None:
    schema = result_format.schema()
    assert schema["version"] == result_format.SCHEMA_VERSION
    defs = schema["$defs"]
    meta = defs["metadata"]["properties"]
    assert meta["schema_version"]["enum"] == [result_format.SCHEMA_VERSION]

    def kinds(node: dict) -> tuple[str, ...]:
        node = defs[node["$ref"].rsplit("/", 1)[1]] if "$ref" in node else node
        kind = node["type"]
        return (kind,) if isinstance(kind, str) else tuple(kind)

    assert {k: kinds(v) for k, v in meta.items()} == result_format.METADATA_TYPES
    row = defs["row"]
    assert {k: kinds(v) for k, v in row["properties"].items()} == result_format.ROW_TYPES
    assert row["properties"]["status"]["enum"] == list(result_format.STATUSES)
    assert tuple(row["required"]) == result_format.REQUIRED_ROW
    ok_rule, not_ok_rule = row["allOf"]
    assert ok_rule["if"]["properties"]["status"]["const"] == result_format.OK
    assert tuple(ok_rule["then"]["required"]) == result_format.REQUIRED_OK_ROW
    assert ok_rule["then"]["description"] == result_format.OK_ROW_NEEDS
    not_ok = [s for s in result_format.STATUSES if s != result_format.OK]
    assert not_ok_rule["if"]["properties"]["status"]["enum"] == not_ok
    assert tuple(not_ok_rule["then"]["required"]) == result_format.REQUIRED_NOT_OK_ROW
    assert not_ok_rule["then"]["description"] == result_format.NOT_OK_ROW_NEEDS
    assert tuple(schema["required"]) == result_format.REQUIRED_TOP
    lists = {k for k, v in row["properties"].items() if v.get("$ref") == "#/$defs/number_list"}
    assert lists == set(result_format.NUMBER_LISTS)
    import jsonschema

    jsonschema.Draft202012Validator.check_schema(schema)


def test_the_module_imports_only_the_standard_library() -> None:
    """Engines import it in library envs, which have no jsonschema or PyYAML."""
    code = (
        "import sys; import augbench.result_format, augbench.results; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'jsonschema', 'yaml', 'pandas', 'numpy'}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"


def test_published_raw_results_validate() -> None:
    """The committed raw results of real runs (docs/results) are version-1 files."""
    files = [
        path
        for path in sorted((REPO / "docs" / "results").rglob("*.json"))
        if "raw" in path.relative_to(REPO / "docs" / "results").parts
    ]
    assert len(files) > 20
    for path in files:
        payload = result_format.read(path)
        assert payload["metadata"]["schema_version"] == result_format.SCHEMA_VERSION, path
        assert result_format.CONVERTED_FROM not in payload["metadata"], path


def test_the_analysis_leaves_a_bad_file_out_and_reads_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.json"
    write_result_file(good, METADATA, _rows())
    payload = _payload()
    payload["results"]["Blur"][MEDIAN_THROUGHPUT] = "fast"
    bad = _write(tmp_path, payload, "bad.json")
    frame = tidy.load_results([tmp_path])
    assert set(frame["transform"]) == {"Blur", "Rotate", "Sharpen"} and len(frame) == 3
    lines = [line for line in capsys.readouterr().err.splitlines() if "bad.json" in line]
    assert lines == [
        f"augbench: skipped unreadable result file {bad}: "
        "results.Blur.median_throughput: is string, expected number"
    ]
    with pytest.raises(ValueError, match=r"cannot read result file .*bad.json: results.Blur"):
        tidy.load([tmp_path])  # without a list to name it in, as before: the path and why
    from augbench.logs import UserError

    with pytest.raises(UserError, match="no readable result file: 1 unreadable"):
        tidy.load_results([bad])
