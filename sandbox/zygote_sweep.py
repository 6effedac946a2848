"""The kernel server's sweep between phases: every process that is not the server's own is
killed, whatever its uid; every SysV IPC object goes; the folders a phase could write outside
the workspace are emptied of what the kernel uid left, without recursion.

Standard library only: ``forkserver.zygote_source()`` puts this source before the zygote's
(``sandbox/zygote.py``), which runs inside the sandbox image without the ``sandbox`` package.
Each step raises ``SweepFailed`` (one line: what is left, where) when it cannot finish: a
sweep that fails is an error answer, and the phase fails with it.
"""

import contextlib
import ctypes
import os
import stat
import time

SCRUB = ("/tmp", "/dev/shm", "/dev/mqueue")  # writable by the kernel uid, outside the workspace
PF_EXITING = 0x4  # the task is in do_exit: it never runs user code or a syscall again
IPC = (("shm", "shmid", "shmctl"), ("msg", "msqid", "msgctl"), ("sem", "semid", "semctl"))
IPC_RMID = 0
DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class SweepFailed(Exception):
    """Raised when a step of the sweep cannot finish; the message names what is left."""


def _libc():
    return ctypes.CDLL(None, use_errno=True)


@contextlib.contextmanager
def file_identity(uid, gid, back=None):
    """File operations of this (single-threaded) process as ``uid``/``gid`` (setfsuid), then
    as ``back`` (default: the effective uid) again."""
    libc = _libc()
    libc.setfsgid(gid)
    libc.setfsuid(uid)
    try:
        yield
    finally:
        libc.setfsuid(os.geteuid() if back is None else back)
        libc.setfsgid(os.getegid())


def fsuid():
    return _libc().setfsuid(-1)  # (uid_t)-1 changes nothing and returns the current fsuid


# -- processes -------------------------------------------------------------------------------


def processes():
    """Every process of this PID namespace: pid -> (uids, parent pid, whether it can still
    run code: not a zombie, not exiting)."""
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status", "rb") as f:
                status = f.read(4096).decode("ascii", "replace")
            with open(f"/proc/{name}/stat", "rb") as f:
                text = f.read(4096).decode("ascii", "replace")
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        uids = {int(u) for u in fields.get("Uid", "").split() if u.isdigit()}
        rest = text.rsplit(")", 1)[-1].split()
        state = rest[0] if rest else "?"
        parent = int(rest[1]) if len(rest) > 1 and rest[1].isdigit() else 0
        flags = int(rest[6]) if len(rest) > 6 and rest[6].isdigit() else 0
        found[int(name)] = (uids, parent, state not in ("Z", "X") and not flags & PF_EXITING)
    return found


def elders(pid=None):
    """The processes a server must never kill: pid 1, its own ancestors and the container's
    command (``sleep``, a child of pid 1, root's), as they are when the server starts,
    before any phase code ran."""
    pid = os.getpid() if pid is None else pid
    table = processes()
    kept = {1}
    up = table.get(pid, (set(), 0, True))[1]
    while up > 0 and up not in kept:
        kept.add(up)
        up = table.get(up, (set(), 0, True))[1]
    for other, (uids, parent, _) in table.items():
        if parent == 1 and uids == {0} and _cmdline(other).split(b"\0")[0] == b"sleep":
            kept.add(other)
    return kept


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read(4096)
    except OSError:
        return b""


def kill_all_but(kept, seconds, reap=lambda: None, kill=os.kill, listing=processes):
    """SIGKILL every process whose pid is not in ``kept`` until none is left that can run
    code; SweepFailed past ``seconds``. ``reap`` collects the caller's own dead children;
    ``listing`` is where the processes are found (``processes``).

    Done when two listings in a row find none that can run code AND only pids an earlier
    listing saw (and this loop killed, or saw dead): a process forks only before it is
    killed, so a child it made after one listing was read shows up, new, in the next; the
    second clean listing leaves no room for one the first missed while its parent ended."""
    deadline = time.monotonic() + seconds
    seen: set[int] = set()
    clean = 0
    while True:
        found = {pid: row[2] for pid, row in listing().items() if pid not in kept}
        left = [pid for pid, live in found.items() if live]
        clean = clean + 1 if not left and found.keys() <= seen else 0
        if clean == 2:
            return
        if time.monotonic() > deadline:
            raise SweepFailed(f"{len(left)} process(es) of the phase survive the sweep")
        for pid in left:
            try:
                kill(pid, 9)
            except OSError:
                pass
        seen.update(found)
        reap()
        time.sleep(0.001)


# -- SysV IPC --------------------------------------------------------------------------------


def ipc_objects(kind):
    """(id, creator uid) of every SysV IPC object of ``kind`` (shm, msg, sem) here."""
    id_column = dict((k, column) for k, column, _ in IPC)[kind]
    try:
        with open(f"/proc/sysvipc/{kind}", "rb") as f:
            lines = f.read().decode("ascii", "replace").splitlines()
    except OSError:
        return []
    if not lines:
        return []
    header = lines[0].split()
    found = []
    for line in lines[1:]:
        row = dict(zip(header, line.split(), strict=False))
        if row.get(id_column, "").isdigit() and row.get("cuid", "").isdigit():
            found.append((int(row[id_column]), int(row["cuid"])))
    return found


@contextlib.contextmanager
def effective_uid(uid):
    """This process's effective uid as ``uid`` (kept: the saved uid), then back, with the
    file identity it had."""
    old, files = os.geteuid(), fsuid()
    if uid == old:
        yield
        return
    os.setresuid(-1, uid, -1)
    try:
        yield
    finally:
        os.setresuid(-1, old, -1)
        _libc().setfsuid(files)


def remove_ipc():
    """Remove every SysV shared memory segment, message queue and semaphore set (each as its
    creator's uid, which may remove it); SweepFailed naming what is left."""
    libc = _libc()
    for kind, _, call in IPC:
        control = getattr(libc, call)
        for ident, creator in ipc_objects(kind):
            with effective_uid(creator):
                if kind == "sem":
                    control(ident, 0, IPC_RMID)
                else:
                    control(ident, IPC_RMID, None)
    left = [f"{len(ipc_objects(kind))} {kind}" for kind, _, _ in IPC if ipc_objects(kind)]
    if left:
        raise SweepFailed(f"SysV IPC objects survive the sweep: {', '.join(left)}")


# -- folders ---------------------------------------------------------------------------------


def scrub(folders=SCRUB, seconds=60.0):
    """Remove what the file identity's uid left in ``folders`` (its entries at their top, and
    all below them), iteratively: one descriptor at a time, however deep. SweepFailed naming
    the first entry that could not go, or past ``seconds``."""
    me = fsuid()
    deadline = time.monotonic() + seconds
    for folder in folders:
        try:
            top = os.open(folder, DIRECTORY)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise SweepFailed(f"cannot open {folder} to empty it: {exc.strerror}") from None
        try:
            for name in os.listdir(top):
                try:
                    st = os.lstat(name, dir_fd=top)
                except FileNotFoundError:
                    continue
                if st.st_uid != me:
                    continue
                try:
                    if stat.S_ISDIR(st.st_mode):
                        remove_tree(top, name, deadline)
                    else:
                        os.unlink(name, dir_fd=top)
                except OSError as exc:
                    where = f"{folder}/{name}"
                    raise SweepFailed(f"cannot remove {where}: {exc.strerror or exc}") from None
        finally:
            os.close(top)


def remove_tree(parent, name, deadline=None):
    """Remove folder ``name`` of descriptor ``parent`` with all it holds, no recursion: the
    walk goes down by descriptor and back up by ``..`` (nothing runs meanwhile), holding
    one descriptor and the names on the way (the identity of each folder, checked on the
    way up). Raises OSError, or TimeoutError past ``deadline`` (monotonic)."""
    cur = _open_folder(parent, name)
    way = [(name, os.fstat(parent).st_ino)]
    try:
        while True:
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"the removal of {name} did not finish in time")
            sub = None
            with os.scandir(cur) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        sub = entry.name
                        break
                    os.unlink(entry.name, dir_fd=cur)
            if sub is not None:
                here = os.fstat(cur).st_ino
                child = _open_folder(cur, sub)
                os.close(cur)
                cur = child
                way.append((sub, here))
                continue
            up = os.open("..", DIRECTORY, dir_fd=cur)
            os.close(cur)
            cur = up
            last, expected = way.pop()
            if os.fstat(cur).st_ino != expected:
                raise OSError(f"the folder above {last!r} changed during the removal")
            os.rmdir(last, dir_fd=cur)
            if not way:
                return
    finally:
        os.close(cur)


def _open_folder(parent, name):
    """A descriptor of folder ``name`` of ``parent``, made readable and writable by its owner
    first when it is not (a phase may leave a folder 0000)."""
    try:
        fd = os.open(name, DIRECTORY, dir_fd=parent)
    except PermissionError:
        os.chmod(name, 0o700, dir_fd=parent)  # a folder (lstat said so); nothing runs now
        fd = os.open(name, DIRECTORY, dir_fd=parent)
    if os.fstat(fd).st_mode & 0o700 != 0o700:
        os.fchmod(fd, 0o700)
    return fd
