# Sourced by bash through BASH_ENV (set in container/Dockerfile) before the script it runs. It acts
# only in the job script of snakemake-executor-plugin-googlebatch 0.5.1, which runs our container
# as `/bin/bash /tmp/workdir/entrypoint.sh`, a script that the plugin writes as
#
#   <the job command: pip install --target .snakemake/pip-deployments <storage plugins>
#                     && python -m snakemake --deploy-sources ... && python -m snakemake ...>
#   python3 -m pip install boto3==1.33.11       # the plugin's COS template, after the job
#   python3 -m pip install urllib3==1.26.17
#
# Two things in it are wrong for us, and 0.5.1 has no setting for either (docs/cloud.md):
# 1. Each job pip-installs the storage plugins (unpinned, from the internet) although the image
#    has the locked ones. `pip` below skips that install when every package is already in the
#    image, and defers to the real pip otherwise.
# 2. The script's exit status is that of its last line, the urllib3 install, so a failed job
#    made a succeeded Batch task. `python3` below skips the two post-job installs (the image
#    needs neither) and returns the status of the command before it: the script exits with the
#    job's own status. tests/test_batch_spec.py runs the plugin-written script with a failing job.
# Anywhere else (Snakemake's own `shell:` commands, a user's shell) this file defines nothing.

if [ "$0" = "${AUGBENCH_BATCH_ENTRYPOINT:-/tmp/workdir/entrypoint.sh}" ]; then
    pip() {
        if [ "$1" = install ] && [ "$2" = --target ]; then
            local pkgs=("${@:4}")
            if python -c 'import sys, importlib.metadata as m; [m.version(p) for p in sys.argv[1:]]' \
                "${pkgs[@]}" 2>/dev/null; then
                echo "augbench image: ${pkgs[*]} already installed, nothing to install" >&2
                return 0
            fi
        fi
        command pip "$@"
    }
    python3() {
        local status=$?
        if [ "$1 $2 $3" = "-m pip install" ]; then
            case "$4" in boto3==* | urllib3==*)
                echo "augbench image: skipped the plugin's post-job '$4' install" >&2
                return "$status"
                ;;
            esac
        fi
        command python3 "$@"
    }
fi
