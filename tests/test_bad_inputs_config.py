"""Bad command-line and config inputs through the real CLI (``snakemake -n``): each either plans
cleanly (nested --config values are strings that the config coerces to the schema's types) or
stops before any job with one line per problem, ``augbench: ...`` naming the key or file and
what to change, exit status 1 and no Python traceback. An earlier result in the working
directory is never touched."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from conftest import REPO, run_snakemake

pytestmark = pytest.mark.workflow  # every case runs the real CLI

EARLIER = Path("results/tables/all_results.csv")
EARLIER_TEXT = "machine,library,transform\nearlier-run,pillow,HorizontalFlip\n"


@dataclass(frozen=True)
class Case:
    id: str
    config: tuple[str, ...]
    # Fragments of the error lines (all in the `augbench:` lines); empty: the dry run plans.
    errors: tuple[str, ...] = ()
    lines: int = 1  # how many `augbench:` lines (one per problem)
    targets: tuple[str, ...] = ()
    # For a clean plan: fragments of the printed shell commands (-p) showing the coerced values.
    planned: tuple[str, ...] = ()
    # A config file that replaces config/config.yaml (--replace-workflow-config): drop these
    # dotted keys from it.
    drop_from_config_yaml: tuple[str, ...] = ()
    # More command-line arguments ({tmp} is the test's working directory).
    args: tuple[str, ...] = ()
    prefix: str = "augbench: config error at "  # how every error line starts


# {archive} is replaced by a path in the test's working directory.
TABLE = [
    # -- plans cleanly: nested --config values arrive as strings and are coerced ------------------
    Case("nested-integer", ("micro={values: 3}",), planned=("--values 3 ",)),
    Case("nested-integer-list", ("cpu_dataloader={workers: [0, 2]}",)),
    Case(
        "decoders-list",
        ("cpu_dataloader={decoders: [native, simplejpeg]}",),
        planned=("--decoders native,simplejpeg ",),
    ),
    Case("top-level-boolean", ("disable_slow_skip=true",), planned=('"enabled": false',)),
    Case("integer-list", ("resolutions=[224]",), planned=("resize_dataset",)),
    Case("nested-null-and-number", ("cpu_dataloader={num_images: null, batch_timeout_s: 2.5}",)),
    Case(
        "placement-integers",
        ("cloud={regimes: {micro: {machine_type: c3-standard-8, cpus: 8, memory_mb: 30000}}}",),
    ),
    Case("starvation-target-model", ("starvation={target: resnet50-v100-amp}",)),
    Case("starvation-target-rate", ("starvation={target: 450}",)),
    # -- one line each, exit 1 ---------------------------------------------------------------------
    Case(
        "starvation-target-unknown",
        ("starvation={target: resnet51}",),
        (
            "config error at starvation.target: 'resnet51' is neither a known model nor a "
            "positive number of images per second; models: ['resnet50-a100-amp', "
            "'resnet50-v100-amp']",
        ),
    ),
    Case(
        "unknown-top-level-key",
        ("micor={values: 3}",),
        ("config error at micor: unknown key; did you mean 'micro'? (valid: preset, machine,",),
    ),
    Case(
        "unknown-nested-key",
        ("micro={valuse: 3}",),
        ("config error at micro.valuse: unknown key; did you mean 'values'? (valid: processes,",),
    ),
    Case(
        "uncoercible-type",
        ("micro={values: many}",),
        ("config error at micro.values: 'many' is not of type 'integer'",),
    ),
    Case(
        "two-problems-two-lines",
        ("micro={valuse: 3, warmups: -1}",),
        ("micro.valuse: unknown key", "micro.warmups: -1 is less than the minimum of 0"),
        lines=2,
    ),
    Case(
        "coerced-but-out-of-range",
        ("micro={values: 0}",),
        ("config error at micro.values: 0 is less than the minimum of 1",),
    ),
    Case(
        "not-a-boolean",
        ("disable_slow_skip=maybe",),
        ("config error at disable_slow_skip: 'maybe' is not of type 'boolean'",),
    ),
    Case(
        "unknown-key-in-a-list-item",
        ("pipelines=[{nme: flip, steps: [HorizontalFlip]}]",),
        ("config error at pipelines[0].nme: unknown key; did you mean 'name'?",),
    ),
    Case(
        "unknown-preset",
        ("preset=smok",),
        ("config error at preset: unknown preset 'smok'; allowed: [", "did you mean 'smoke'?"),
    ),
    Case(
        "unknown-regime",
        ("regimes=[mikro]",),
        ("config error at regimes[0]: 'mikro' is not one of ['micro',", "did you mean 'micro'?"),
    ),
    Case(
        "unknown-decoder",
        ("cpu_dataloader={decoders: [native, turbojepg]}",),
        (
            "config error at cpu_dataloader.decoders[1]: 'turbojepg' is not one of ['native', "
            "'pil', 'opencv', 'torchvision', 'simplejpeg', 'turbojpeg']; did you mean "
            "'turbojpeg'?",
        ),
    ),
    Case(
        "regime-without-a-configured-library",
        ("libraries=[pillow]", "regimes=[dali]"),
        (
            "config error at regimes: 'dali' measures ['dali'], none of which is in libraries "
            "['pillow']; add one to libraries or drop the regime",
        ),
    ),
    Case(
        "resolution-regime-not-configured",
        ("regimes=[micro]", "resolutions=[224]", "resolution_regimes=[cpu_dataloader]"),
        ("config error at resolution_regimes: 'cpu_dataloader' is not in regimes ['micro']",),
    ),
    Case(
        "missing-archive",
        ("dataset={archive: {archive}}",),
        ("dataset archive not found", "nope/x.tar"),
    ),
    Case(
        "unknown-transform",
        ("transforms=[HorizontalFlp]",),
        ("config error at transforms[0]: 'HorizontalFlp' is not one of", "'HorizontalFlip'?"),
    ),
    Case(
        "plot-from-missing-folder",
        ("plot_from={x: [nowhere]}",),
        ("config error at plot_from.x: result source 'nowhere' does not exist",),
        targets=("plots",),
    ),
    # -- a job that cannot fit its machine: refused before any job (augbench.planning.memory) ------
    Case(
        "does-not-fit-the-memory-given",
        ("libraries=[kornia]", "regimes=[micro]", "pipelines=[]", "lazy_outputs={enabled: false}"),
        (
            "memory: rule micro needs up to ",
            "library kornia",
            "--resources mem_mb has 500 MB",
            "lower micro.max_megapixels or micro.num_images",
        ),
        args=("--resources", "mem_mb=500"),
        prefix="augbench: memory: ",
    ),
    Case(
        "does-not-fit-its-cloud-machine",
        (
            "libraries=[kornia]",
            "regimes=[micro]",
            "pipelines=[]",
            "lazy_outputs={enabled: false}",
            "cloud={regimes: {micro: {machine_type: c3-standard-4, cpus: 4, memory_mb: 600}}}",
        ),
        (
            "memory: rule micro needs up to ",
            "c3-standard-4 (cloud.regimes.micro.memory_mb) has 600 MB",
            "or a larger machine (cloud.regimes.micro)",
        ),
        args=("--default-storage-provider", "fs", "--default-storage-prefix", "{tmp}/bucket"),
        prefix="augbench: memory: ",
    ),
    Case(
        "machine-class-without-memory",
        (),
        ("config error at cloud.regimes.micro: 'memory_mb' is a required property",),
        drop_from_config_yaml=("cloud.regimes.micro.memory_mb",),
    ),
    Case(
        "cloud-regimes-without-a-placement",
        (),
        (
            "config error at cloud.regimes: no placement for 'micro' (rules micro,",
            "add cloud.regimes.micro",
        ),
        drop_from_config_yaml=("cloud.regimes.micro",),
    ),
]


def _config_file(workdir: Path, drop: tuple[str, ...]) -> Path:
    """config/config.yaml without the ``drop`` keys, written into ``workdir``."""
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    for dotted in drop:
        *parents, leaf = dotted.split(".")
        node = config
        for key in parents:
            node = node[key]
        del node[leaf]
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.parametrize("case", TABLE, ids=[case.id for case in TABLE])
def test_bad_input_is_one_line_or_plans_cleanly(case: Case, tmp_path: Path) -> None:
    earlier = tmp_path / EARLIER
    earlier.parent.mkdir(parents=True)
    earlier.write_text(EARLIER_TEXT)
    os.utime(earlier, ns=(1_600_000_000_000_000_000, 1_600_000_000_000_000_000))
    before = earlier.stat().st_mtime_ns

    archive = str(tmp_path / "nope" / "x.tar")
    config = [entry.replace("{archive}", archive) for entry in case.config]
    replace = ()
    if case.drop_from_config_yaml:
        path = _config_file(tmp_path, case.drop_from_config_yaml)
        replace = ("--replace-workflow-config", "--configfile", str(path))
    if not any(entry.startswith("preset=") for entry in config):
        config.insert(0, "preset=smoke")
    extra = [arg.replace("{tmp}", str(tmp_path)) for arg in case.args]
    proc = run_snakemake(
        tmp_path, "-n", "-p", *replace, *extra, *case.targets, "--config", *config, check=False
    )
    out = proc.stdout + proc.stderr

    assert "Traceback" not in out and '  File "' not in out, out[-4000:]
    lines = [line for line in out.splitlines() if line.startswith("augbench: ")]
    if case.errors:
        assert proc.returncode == 1, out[-4000:]
        assert len(lines) == case.lines, out[-4000:]
        assert all(line.startswith(case.prefix) for line in lines) or (
            case.id == "missing-archive"
        ), lines
        for fragment in case.errors:
            assert any(fragment in line for line in lines), (fragment, lines)
    else:
        assert proc.returncode == 0, out[-4000:]
        assert not lines, lines
        for fragment in case.planned:
            assert fragment in out, fragment
    # Nothing was written under results/, and the earlier result is as it was.
    assert earlier.read_text() == EARLIER_TEXT
    assert earlier.stat().st_mtime_ns == before
    assert [p for p in (tmp_path / "results").rglob("*") if p.is_file()] == [earlier]


def test_a_bad_plot_from_source_fails_its_job_in_one_line(tmp_path: Path) -> None:
    """A user error inside a rule's script (collect_results, via augbench.logs.redirect_to_log):
    one line in the log and on the terminal, exit 1, no Python traceback."""
    (tmp_path / "notes.json").write_text('{"not": "a result file"}')
    proc = run_snakemake(
        tmp_path, "--cores", "1", "plots",
        "--config", "preset=smoke", "plot_from={x: [notes.json]}",
        check=False,
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-4000:]
    assert "Traceback" not in out, out[-4000:]
    log = (tmp_path / "logs/plots/x/collect.log").read_text()
    assert "notes.json" in log and "Traceback" not in log, log
    assert [line for line in log.splitlines() if "notes.json" in line], log
    assert not (tmp_path / "results/plots/x/tables/all_results.csv").exists()


# -- the mechanism: augbench.logs ------------------------------------------------------------------
SCRIPT = """
import sys
from augbench.logs import redirect_to_log
{imports}
with redirect_to_log(sys.argv[1]):
    print("started")
    {body}
"""


@pytest.mark.parametrize(
    ("imports", "body", "line"),
    [
        (
            "from augbench.logs import UserError",
            "raise UserError('plot_from.x: no result files in [\\'a\\']; fix it')",
            "augbench: plot_from.x: no result files in ['a']; fix it",
        ),
        (  # the dataset engineer's errors need nothing but raising inside the block
            "from augbench.planning.dataset import DatasetError",
            "raise DatasetError('dataset archive not found: x.tar\\n(config dataset.archive)')",
            "augbench: dataset archive not found: x.tar (config dataset.archive)",
        ),
        (
            "from augbench.planning.config import ConfigError",
            "raise ConfigError('config error at a: one', 'config error at b: two')",
            "augbench: config error at a: one\naugbench: config error at b: two",
        ),
    ],
)
def test_a_user_error_in_a_script_is_one_line_per_problem(
    imports: str, body: str, line: str, tmp_path: Path
) -> None:
    log = tmp_path / "logs/rule.log"
    proc = _python(SCRIPT.format(imports=imports, body=body), str(log))
    assert proc.returncode == 1
    assert proc.stderr == line + "\n" and proc.stdout == ""
    assert log.read_text() == "started\n" + line + "\n"


def test_a_bug_in_a_script_keeps_its_traceback_in_the_log(tmp_path: Path) -> None:
    log = tmp_path / "rule.log"
    proc = _python(SCRIPT.format(imports="", body="{}['missing']"), str(log))
    assert proc.returncode == 1
    assert "Traceback" in log.read_text() and "KeyError: 'missing'" in log.read_text()
    assert f"error: KeyError: 'missing' (full log: {log})" in proc.stderr


def test_exit_with_prints_each_problem_on_one_line() -> None:
    code = (
        "from augbench.logs import exit_with, exit_on_user_error\n"
        "from augbench.planning.sweep import PlanError\n"
        "try:\n"
        "    with exit_on_user_error():\n"
        "        raise PlanError('config error at cloud.regimes:\\n no placement')\n"
        "except SystemExit as exc:\n"
        "    assert exc.code == 1\n"
        "exit_with('augbench: already prefixed', 'two  words')\n"
    )
    proc = _python(code)
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        "augbench: config error at cloud.regimes: no placement",
        "augbench: already prefixed",
        "augbench: two words",
    ]


def _python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
