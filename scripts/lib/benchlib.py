"""Shared helpers for scripts/bench and scripts/bench-names.

Mounting and unmounting FUSE targets, finding their daemon, reading its memory,
dropping caches, timing, and printing median tables as text, Markdown and JSON.
Standard library only, so the scripts run with a bare python3 (3.9 or newer).
"""

from __future__ import annotations

import gc
import json
import os
import platform
import shlex
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_WORK_DIR = Path("/var/tmp/utf8fs-bench")
DEFAULT_UTF8FS = REPO / "target" / "release" / "utf8fs"


def die(msg: str) -> None:
    """Print one error line and exit with status 2."""
    print(f"{Path(sys.argv[0]).name}: {msg}", file=sys.stderr)
    sys.exit(2)


def log(msg: str) -> None:
    """Progress line on stderr, so stdout holds only the results."""
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- caches, timing


def can_drop_caches() -> bool:
    """Dropping caches needs root (write access to /proc/sys/vm/drop_caches)."""
    return os.access("/proc/sys/vm/drop_caches", os.W_OK)


def drop_caches(times: int = 1, settle: float = 0.0) -> None:
    """sync, then evict page cache, dentries and inodes (FUSE mounts get FORGETs)."""
    os.sync()
    for _ in range(times):
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    if settle:
        time.sleep(settle)


def timed(fn, *args) -> float:
    """Seconds taken by fn(*args), garbage collection paused so it adds no noise."""
    gc.collect()
    gc.disable()
    try:
        t0 = time.perf_counter()
        fn(*args)
        return time.perf_counter() - t0
    finally:
        gc.enable()


def run(cmd: list[str], **kw) -> None:
    """Run a command, failing with its stderr on a non-zero exit."""
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **kw)
    if r.returncode != 0:
        raise RuntimeError(f"{shlex.join(cmd)}: exit {r.returncode}: {r.stderr.decode(errors='replace').strip()}")


def rm_rf(path: Path) -> None:
    """Remove a tree natively (untimed cleanup)."""
    if os.path.lexists(path):
        run(["rm", "-rf", "--one-file-system", str(path)])


# ---------------------------------------------------------------- mounts


def _unescape_mountinfo(s: str) -> str:
    return s.encode().decode("unicode_escape") if "\\" in s else s


def mount_points() -> set[str]:
    """Mount points currently in this process's mount namespace."""
    out = set()
    with open("/proc/self/mountinfo") as f:
        for line in f:
            out.add(_unescape_mountinfo(line.split()[4]))
    return out


def is_mounted(path: Path) -> bool:
    return str(path) in mount_points()


def _pids_with_arg(arg: str) -> list[int]:
    """Processes (other than us) whose argv holds arg: how a detached daemon is found."""
    found = []
    me = os.getpid()
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == me:
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{d}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and arg.encode() in argv:
            found.append(int(d))
    return sorted(found)


def _alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def proc_rss_kib(pid: int | None) -> int | None:
    """VmRSS of a process in KiB, or None when unknown."""
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def proc_fd_count(pid: int | None) -> int | None:
    if pid is None:
        return None
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


def proc_threads(pid: int | None) -> int | None:
    if pid is None:
        return None
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return None


@dataclass
class Target:
    """A way to present SOURCE at a path: natively (no command) or via a mount command.

    `cmd` is a list of argv tokens where `{src}` and `{mnt}` are substituted.
    """

    name: str
    cmd: list[str] | None = None

    @property
    def is_native(self) -> bool:
        return self.cmd is None


@dataclass
class Mounted:
    """A live mount (or the native directory) with its daemon's PID when known."""

    target: Target
    src: Path
    path: Path
    pid: int | None = None
    proc: subprocess.Popen | None = None
    logfile: Path | None = None
    _log: object = field(default=None, repr=False)

    def daemon_pid(self) -> int | None:
        """The daemon's PID, found again when the process we started has since detached."""
        if self.target.is_native:
            return None
        if self.pid is not None and _alive(self.pid):
            return self.pid
        if self.proc is not None and self.proc.poll() is not None:
            self.proc.wait()
        pids = _pids_with_arg(str(self.path))
        self.pid = pids[0] if pids else None
        return self.pid

    def rss_kib(self) -> int | None:
        return proc_rss_kib(self.daemon_pid())

    def fd_count(self) -> int | None:
        return proc_fd_count(self.daemon_pid())

    def threads(self) -> int | None:
        return proc_threads(self.daemon_pid())


_LIVE: list[Mounted] = []


NOFILE: int | None = None
"""When set (--nofile), the open-file limit mount commands start with; else inherited."""


def _set_nofile() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_NOFILE, (NOFILE, NOFILE))


def mount(target: Target, src: Path, mnt: Path, logdir: Path, timeout: float = 30.0) -> Mounted:
    """Mount SOURCE at mnt with the target's command and wait until the mount shows up.

    Works for commands that detach (the daemon is then found by its argv) and for
    ones that stay in the foreground (the child itself is the daemon).
    """
    if target.is_native:
        return Mounted(target, src, src)
    mnt.mkdir(parents=True, exist_ok=True)
    if is_mounted(mnt):
        unmount_path(mnt)
    argv = [t.replace("{src}", str(src)).replace("{mnt}", str(mnt)) for t in target.cmd]
    logdir.mkdir(parents=True, exist_ok=True)
    logfile = logdir / f"{target.name}.log"
    lf = open(logfile, "ab")
    lf.write(f"\n== {time.strftime('%F %T')} {shlex.join(argv)}\n".encode())
    lf.flush()
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=lf, stderr=lf, start_new_session=True,
                                preexec_fn=_set_nofile if NOFILE else None)
    except OSError as e:
        lf.close()
        raise RuntimeError(f"{target.name}: cannot run {argv[0]}: {e.strerror}") from None
    m = Mounted(target, src, mnt, proc=proc, logfile=logfile, _log=lf)
    _LIVE.append(m)
    deadline = time.monotonic() + timeout
    while not is_mounted(mnt):
        rc = proc.poll()
        if rc not in (None, 0) or time.monotonic() > deadline:
            _LIVE.remove(m)
            if rc is None:
                proc.kill()
                proc.wait()
            lf.close()
            tail = logfile.read_text(errors="replace").strip().splitlines()[-5:]
            why = f"exit {rc}" if rc is not None else f"not mounted after {timeout:.0f} s"
            raise RuntimeError(f"{target.name}: mount of {mnt} failed ({why}): " + " | ".join(tail))
        time.sleep(0.02)
    m.pid = proc.pid
    m.daemon_pid()
    return m


def unmount_path(mnt: Path) -> None:
    """fusermount3 -u, retried while busy, then a lazy umount as the last resort."""
    for _ in range(50):
        if not is_mounted(mnt):
            return
        r = subprocess.run(["fusermount3", "-u", str(mnt)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if r.returncode != 0:
            r = subprocess.run(["umount", str(mnt)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if r.returncode == 0:
            return
        time.sleep(0.1)
    subprocess.run(["umount", "-l", str(mnt)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def unmount(m: Mounted, timeout: float = 15.0) -> None:
    """Unmount and wait for the daemon to exit (SIGTERM to our own daemon if it lingers)."""
    if m.target.is_native:
        return
    pid = m.daemon_pid()
    unmount_path(m.path)
    deadline = time.monotonic() + timeout
    while pid is not None and _alive(pid) and time.monotonic() < deadline:
        if m.proc is not None and m.proc.pid == pid and m.proc.poll() is not None:
            break
        time.sleep(0.02)
    if pid is not None and _alive(pid):
        log(f"warning: {m.target.name} daemon {pid} still running after unmount; sending SIGTERM")
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    if m.proc is not None:
        try:
            m.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            m.proc.kill()
            m.proc.wait()
    if m._log is not None:
        m._log.close()
    if m in _LIVE:
        _LIVE.remove(m)


def cleanup_all() -> None:
    """Unmount everything this process mounted (used on exit and on signals)."""
    for m in list(_LIVE):
        try:
            unmount(m, timeout=5.0)
        except Exception as e:  # cleanup must go on for the other mounts
            log(f"warning: cleanup of {m.path}: {e}")
    for img in list(_IMAGES):
        img.__exit__(None, None, None)


def install_cleanup() -> None:
    """Unmount on normal exit, on exceptions, and on SIGINT/SIGTERM/SIGHUP."""
    import atexit

    atexit.register(cleanup_all)

    def on_signal(signum, _frame):
        log(f"\ninterrupted by signal {signum}; unmounting")
        cleanup_all()
        os._exit(128 + signum)

    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, on_signal)


def add_nofile_arg(ap) -> None:
    ap.add_argument("--nofile", type=int, metavar="N",
                    help="start mount commands with RLIMIT_NOFILE N (default: inherited, see ulimit -n); "
                         "for daemons that keep an fd per inode and do not raise the limit themselves")


def apply_nofile(n: int | None) -> None:
    """Check --nofile now (raising the hard limit needs CAP_SYS_RESOURCE) so mounts do not fail later."""
    import resource

    global NOFILE
    if n is None:
        return
    if n < 64:
        die("--nofile must be at least 64")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and n > hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, n))
        except (ValueError, OSError):
            die(f"--nofile {n}: above the hard limit {hard} and cannot raise it (needs CAP_SYS_RESOURCE)")
    NOFILE = n


_IMAGES: list["BackingImage"] = []


class BackingImage:
    """A fresh journaled ext4 filesystem in a sparse image file, loop-mounted with direct I/O.

    Every target's SOURCE lives on it, so all of them meet the same, ordinary backing store:
    mkfs.ext4 defaults (journal on), inode tables written at mkfs time (no lazy-init thread
    working in the background), and direct I/O on the loop device so that drop_caches leaves
    nothing of it cached in the page cache of the file below.
    """

    def __init__(self, work: Path, size_gib: int):
        self.image = work / "backing-ext4.img"
        self.path = work / "backing"
        self.loop: str | None = None
        self.size_gib = size_gib

    def __enter__(self) -> "BackingImage":
        self.detach()
        self.image.unlink(missing_ok=True)
        with open(self.image, "wb") as f:
            f.truncate(self.size_gib << 30)
        run(["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", str(self.image)])
        r = subprocess.run(["losetup", "-f", "--show", "--direct-io=on", str(self.image)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"losetup {self.image}: {r.stderr.strip()}")
        self.loop = r.stdout.strip()
        self.path.mkdir(parents=True, exist_ok=True)
        run(["mount", self.loop, str(self.path)])
        _IMAGES.append(self)
        return self

    def detach(self) -> None:
        """Unmount and free a mount and loop device left by this or an earlier run."""
        if is_mounted(self.path):
            subprocess.run(["umount", str(self.path)], stderr=subprocess.DEVNULL)
        r = subprocess.run(["losetup", "-j", str(self.image)], capture_output=True, text=True)
        for line in r.stdout.splitlines():
            subprocess.run(["losetup", "-d", line.split(":", 1)[0]], stderr=subprocess.DEVNULL)

    def __exit__(self, *_exc) -> None:
        self.detach()
        self.image.unlink(missing_ok=True)
        if self in _IMAGES:
            _IMAGES.remove(self)


def balanced_order(n: int, rnd: int) -> list[int]:
    """The order of n targets in round rnd: the rows of a Williams Latin square, so that over
    n rounds (2n when n is odd) every target runs in every position once and right after every
    other target once. A heavy run (bindfs writing 1 GiB for 45 s) slows the disk for whichever
    target comes next, and a plain rotation always put the same target after it."""
    first, lo, hi = [0], 1, n - 1
    while len(first) < n:
        if len(first) % 2:
            first.append(lo)
            lo += 1
        else:
            first.append(hi)
            hi -= 1
    rows = [[(x + i) % n for x in first] for i in range(n)]
    if n % 2:
        rows += [row[::-1] for row in rows]
    return rows[rnd % len(rows)]


def describe_error(e: BaseException) -> str:
    """One line for a workload that failed on a target: errno text, or the command's error."""
    if isinstance(e, OSError):
        return e.strerror or str(e)
    return str(e).splitlines()[0][-120:]


def parse_mount_spec(spec: str) -> Target:
    """NAME='CMD ARGS {src} {mnt}' -> Target."""
    name, sep, cmd = spec.partition("=")
    name = name.strip()
    if not sep or not name or not cmd.strip():
        die(f"--mount {spec!r}: expected NAME='COMMAND {{src}} {{mnt}}'")
    if not name.replace("-", "").replace("_", "").replace(".", "").isalnum():
        die(f"--mount {spec!r}: NAME must be letters, digits, '-', '_' or '.'")
    argv = shlex.split(cmd)
    if not any("{src}" in a for a in argv) or not any("{mnt}" in a for a in argv):
        die(f"--mount {spec!r}: the command must contain {{src}} and {{mnt}}")
    return Target(name, argv)


def ensure_utf8fs(path: Path) -> Path:
    """The utf8fs binary; the default release path is built with cargo when missing."""
    path = path.resolve()
    if path.exists():
        return path
    if path == DEFAULT_UTF8FS.resolve():
        log(f"{path} missing; building it: cargo build --release --bin utf8fs")
        r = subprocess.run(["cargo", "build", "--release", "--bin", "utf8fs"], cwd=REPO)
        if r.returncode == 0 and path.exists():
            return path
    die(f"{path}: no such utf8fs binary (build with: cargo build --release)")
    raise AssertionError


# ---------------------------------------------------------------- results


def median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def fmt_secs(s: float | None) -> str:
    if s is None:
        return "-"
    if s >= 100:
        return f"{s:.0f}"
    if s >= 10:
        return f"{s:.1f}"
    if s >= 1:
        return f"{s:.2f}"
    return f"{s:.3f}"


def fmt_ratio(r: float | None) -> str:
    if r is None:
        return "-"
    return f"{r:.1f}×" if r >= 10 else f"{r:.2f}×"


def fmt_kib(k: int | None) -> str:
    if k is None:
        return "-"
    return f"{k / 1024:.1f} MiB"


def results_table(rows: list[str], cols: list[str], samples: dict, ref: str | None = "native", first: str = "workload"):
    """Median seconds per (row, col) and their ratio to the ref column.

    Returns (header, body rows of cells, medians, ratios).
    """
    med = {r: {c: median(samples.get(r, {}).get(c, [])) for c in cols} for r in rows}
    ratio = {}
    for r in rows:
        ratio[r] = {}
        base = med[r].get(ref) if ref else None
        for c in cols:
            v = med[r][c]
            ratio[r][c] = v / base if (v is not None and base) else None
    header = [first] + cols
    body = []
    for r in rows:
        cells = [r]
        for c in cols:
            v = med[r][c]
            if ref and ref in cols and c != ref and v is not None:
                cells.append(f"{fmt_secs(v)} ({fmt_ratio(ratio[r][c])})")
            else:
                cells.append(fmt_secs(v))
        body.append(cells)
    return header, body, med, ratio


def text_table(header: list[str], body: list[list[str]]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *body)]
    lines = ["  ".join(str(h).ljust(w) for h, w in zip(header, widths))]
    lines.append("  ".join("-" * w for w in widths))
    for row in body:
        lines.append("  ".join([str(row[0]).ljust(widths[0])] + [str(x).rjust(w) for x, w in zip(row[1:], widths[1:])]))
    return "\n".join(lines)


def md_table(header: list[str], body: list[list[str]]) -> str:
    esc = lambda s: str(s).replace("|", "\\|")  # noqa: E731
    lines = ["| " + " | ".join(esc(h) for h in header) + " |"]
    lines.append("|" + "|".join([":---"] + ["---:"] * (len(header) - 1)) + "|")
    for row in body:
        lines.append("| " + " | ".join(esc(x) for x in row) + " |")
    return "\n".join(lines)


def wakeup_round_trip_us(n: int = 20_000) -> float:
    """Median microseconds for one byte to go to another process over a pipe and back.

    Every FUSE request costs at least one such round trip (the client sleeps, the daemon
    wakes, then the other way), so this says how far any FUSE filesystem can get on this
    machine: where it is large (a VM whose idle CPUs halt), metadata workloads through FUSE
    cost many times native for every FUSE filesystem; where it is small, the gaps shrink.
    """
    r1, w1 = os.pipe()
    r2, w2 = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            for _ in range(5 * n):
                if not os.read(r1, 1):
                    break
                os.write(w2, b"x")
        finally:
            os._exit(0)
    samples = []
    try:
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(n):
                os.write(w1, b"x")
                os.read(r2, 1)
            samples.append((time.perf_counter() - t0) / n * 1e6)
    finally:
        for fd in (w1, r2, r1, w2):
            os.close(fd)
        os.waitpid(pid, 0)
    return statistics.median(samples)


def machine_info(work_dir: Path) -> dict:
    """What the figures depend on: kernel, CPUs, memory, backing filesystem."""
    fstype = "?"
    try:
        r = subprocess.run(["findmnt", "-no", "FSTYPE", "-T", str(work_dir)], capture_output=True, text=True)
        fstype = r.stdout.strip() or "?"
    except OSError:
        pass
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem_kib = 0
    try:
        with open("/proc/meminfo") as f:
            mem_kib = int(f.readline().split()[1])
    except OSError:
        pass
    return {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "kernel": platform.release(),
        "cpus": os.cpu_count(),
        "cpu": cpu,
        "mem_gib": round(mem_kib / 1024 / 1024, 1),
        "work_dir": str(work_dir),
        "work_fs": fstype,
        "python": platform.python_version(),
        "wakeup_rt_us": round(wakeup_round_trip_us(), 1),
        "command": shlex.join([Path(sys.argv[0]).name] + sys.argv[1:]),
    }


def machine_line(info: dict) -> str:
    return (
        f"Linux {info['kernel']}, {info['cpus']} CPUs ({info['cpu']}), {info['mem_gib']} GiB RAM, "
        f"backing store {info['work_fs']} at {info['work_dir']}, {info['date']}; "
        f"process wake-up round trip {info.get('wakeup_rt_us', '?')} µs (pipe ping-pong)"
    )


def write_json(path: str | None, data: dict) -> None:
    if path:
        Path(path).write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        log(f"wrote {path}")


def write_text(path: str | None, text: str) -> None:
    if path:
        Path(path).write_text(text)
        log(f"wrote {path}")
