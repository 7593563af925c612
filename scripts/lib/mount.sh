# Shared by scripts/demo, scripts/pjdfstest and scripts/fsx: build utf8fs, make a scratch
# directory, mount and unmount, and clean everything up on exit (even after a failure).
# Source it from a bash script that runs `set -euo pipefail`.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# The binary to test; set UTF8FS to test another build and skip the cargo build.
UTF8FS=${UTF8FS:-}
MOUNTED=()
WORK=

# Builds the release binary unless UTF8FS names one already.
build_utf8fs() {
    if [[ -z $UTF8FS ]]; then
        (cd "$ROOT" && cargo build --release --quiet --bin utf8fs)
        UTF8FS=$ROOT/target/release/utf8fs
    fi
    UTF8FS=$(realpath "$UTF8FS")
}

# Creates the scratch directory $WORK, removed on exit.
make_work() {
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/utf8fs-$1.XXXXXX")
}

# mount_utf8fs SOURCE MOUNTPOINT [utf8fs options...]: mounts (detached) and records it.
mount_utf8fs() {
    local src=$1 mnt=$2
    shift 2
    mkdir -p "$mnt"
    "$UTF8FS" "$src" "$mnt" "$@"
    MOUNTED+=("$mnt")
}

# unmount_utf8fs MOUNTPOINT: unmounts what mount_utf8fs mounted.
unmount_utf8fs() {
    fusermount3 -u "$1"
    local m kept=()
    for m in "${MOUNTED[@]}"; do
        [[ $m == "$1" ]] || kept+=("$m")
    done
    MOUNTED=("${kept[@]+"${kept[@]}"}")
}

cleanup_utf8fs() {
    local m
    for m in "${MOUNTED[@]+"${MOUNTED[@]}"}"; do
        if mountpoint -q "$m"; then
            fusermount3 -u "$m" 2>/dev/null || umount -l "$m" || true
        fi
    done
    if [[ -n $WORK && -d $WORK ]]; then
        rm -rf --one-file-system "$WORK"
    fi
}
trap cleanup_utf8fs EXIT
