"""The kernel zygote: imports what kernels need once, then forks one fresh kernel per request.

A standalone script (standard library and ipykernel only: it runs inside the sandbox image,
which does not have the ``sandbox`` package). The host reads this file and runs it as

    python -E -s -B -u -c "<this source>" SOCKET

in the sandbox (docker exec, or a subprocess for the local backend). It preloads ipykernel,
IPython, zmq and, when importable, pandas and numpy, WITHOUT creating a zmq context, thread or
event loop, then listens on the unix socket SOCKET. One request per connection: one JSON
object on one line, answered with one JSON object on one line (``ok`` true or false, and an
``error`` text when false):

    {"op": "ping"}                                    -> {"ok": true}
    {"op": "spawn", "key": K, "connection": INFO, "code": [CELL, ...]}
                                                      -> {"ok": true, "pid": PID}
    {"op": "activate", "key": K}                      -> {"ok": true}
    {"op": "kill", "key": K}                          -> {"ok": true}
    {"op": "sweep"}                                   -> {"ok": true}
    {"op": "status", "key": K}  -> {"ok": true, "status": "running PID" | "exit N" |
                                                          "signal N" | "unknown"}

Two identities (docker): the zygote runs as root with only the capabilities SETUID, SETGID
and KILL; phase code runs as the kernel uid with none. A kernel is a forked child that
starts its own session, creates its socket folder ``KEY/`` (0700, the zygote's owner) next to
SOCKET, binds its sockets there and runs the start CELLs as IPKernelApp.initialize does,
then WAITS, still as root, until ``activate``: only then does it switch to the kernel uid
(which drops every capability), add the flow's own packages (``FLOW_SITE``, a prefix apart
from the image's, with their ``.pth`` hooks) to its path and start answering: nothing a
flow's package installed runs as root, in the zygote or in a dormant kernel. A spare kernel
is therefore out of reach of the running phase: its sockets sit in a folder the phase cannot
enter, and it cannot be signalled or traced by the phase's uid. ``sweep`` SIGKILLs every
process that is not the zygote's own, whatever its uid (found in /proc, again until none is
left that can run code), removes every SysV IPC object and, without recursion, what the
kernel uid left in /tmp, /dev/shm and /dev/mqueue (``zygote_sweep.py``): nothing of a phase
survives it, and a sweep that cannot finish answers an error. Only peers
whose uid is the zygote's own or the host's may connect (SO_PEERCRED). Without a kernel uid
(the local backend, no isolation) kernels keep the zygote's identity and sweep is a no-op.

The INFO, with the kernel's key, never touches a file another process could read: the child
keeps it in a memfd, and kernels and the zygote are not dumpable (no ptrace, no
/proc/PID/mem or fd for other processes of their user). A fork that fails (EAGAIN under a pids
limit) is an error answer. The zygote reaps its children, kills what is left of a dead
kernel's process group, records each exit status and writes it to ``KEY.exit`` next to
SOCKET. Its own output goes to ``zygote.log`` there. It exits on SIGTERM (killing every kernel
it started) and when the process that started it goes away.
"""

import ctypes
import gc
import json
import os
import re
import select
import signal
import socket
import struct
import sys
import time
import traceback

try:  # on the host; in the sandbox, forkserver.zygote_source() put them above this source
    from sandbox.zygote_sweep import (
        SweepFailed,
        elders,
        file_identity,
        kill_all_but,
        remove_ipc,
        scrub,
    )
except ImportError:
    pass

KEY = re.compile(r"[A-Za-z0-9_.-]{1,64}")
MAX_LINE = 1 << 20
CLIENT_TIMEOUT = 5.0
SWEEP_SECONDS = 10.0  # to kill every process of the phase
SCRUB_SECONDS = 20.0  # to empty the folders (forkserver.SWEEP_TIMEOUT waits for both)
# The flow's own packages: a prefix apart from the image's /opt/venv, on the path of a kernel
# only once it took the kernel uid (and of that uid's own Python processes: the layer's
# praxis-flow.pth). Never on the zygote's.
FLOW_PREFIX = "/opt/flow"
FLOW_SITE = f"{FLOW_PREFIX}/lib/python{sys.version_info[0]}.{sys.version_info[1]}/site-packages"

# Imported before any fork, so that each kernel finds them in memory. Importing them creates
# no thread, zmq context or event loop.
PRELOAD = (
    "zmq",
    "tornado.ioloop",
    "tornado.platform.asyncio",
    "jupyter_client.session",
    "faulthandler",
    "ipykernel.kernelapp",
    "ipykernel.ipkernel",
    "ipykernel.zmqshell",
    "ipykernel.iostream",
    "ipykernel.comm",
    "ipykernel.debugger",  # without debugpy (see preload)
    "IPython.core.interactiveshell",
    "IPython.core.completer",
    "IPython.core.logger",
    "IPython.core.completerlib",
    "IPython.core.debugger",
    "IPython.core.oinspect",
    "IPython.extensions.storemagic",
    "IPython.core.formatters",
    "IPython.display",
)
OPTIONAL = ("numpy", "pandas", "pyarrow")
# Nothing asks a sandbox's kernel for the Jupyter debugger, so ipykernel starts without it (its
# own fallback when debugpy cannot be imported): 60 ms less before the first kernel, and one
# socket less in each. A phase's own `import debugpy` still works.
UNUSED = ("debugpy",)


def preload():
    blocked = [name for name in UNUSED if name not in sys.modules]
    for name in blocked:
        sys.modules[name] = None  # type: ignore[assignment]  # importing it: ImportError
    try:
        for name in PRELOAD:
            __import__(name)
    finally:
        for name in blocked:
            if sys.modules.get(name, False) is None:
                del sys.modules[name]
    from jupyter_client import localinterfaces

    localinterfaces.localhost()  # the interface list each kernel's start-up asks for (psutil)
    for name in OPTIONAL:
        try:
            __import__(name)
        except Exception:  # not installed, or broken: the kernel reports it when imported
            pass


def describe(code, status):
    """'exit N' or 'signal N' from a waitid si_code and si_status."""
    if code == os.CLD_EXITED:
        return f"exit {status}"
    return f"signal {status}"


class Zygote:
    listener: socket.socket  # set by listen(), before serve() reads it

    def __init__(self, path, kernel_uid=None, kernel_gid=None, peers=()):
        self.path = path
        # the host user: runtime files are made as it (setfsuid), so a host that is not
        # root can reach them; kernels then leave files it can remove (umask 000)
        self.host_uid = next(iter(peers), os.getuid())
        self.kernel_uid = kernel_uid  # None: kernels keep the zygote's identity (local)
        self.kernel_gid = kernel_gid
        self.peers = {os.getuid(), *peers}  # uids allowed to connect
        self.gates = {}  # key -> write end of the pipe a dormant kernel waits on
        self.folder = os.path.dirname(path) or "."
        self.parent = os.getppid()
        self.kernels = {}  # key -> pid, while running
        self.keys = {}  # pid -> key, while running
        self.ended = {}  # key -> "exit N" | "signal N"
        self.stop = False
        self.wake_r, self.wake_w = os.pipe()
        # what a sweep never kills, as it is before any phase code ran
        self.elders = elders() if kernel_uid is not None else set()

    # -- server ------------------------------------------------------------------------------

    def listen(self):
        os.set_blocking(self.wake_w, False)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(signal.SIGTERM, self._terminate)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        if os.path.exists(self.path):
            os.unlink(self.path)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o077)  # only the zygote's uid (and root) can connect
        try:
            listener.bind(self.path)
        finally:
            os.umask(old)
        listener.listen(64)
        self.listener = listener

    def _terminate(self, *_):
        self.stop = True

    def serve(self):
        watched: list[socket.socket | int] = [self.listener, self.wake_r]
        while not self.stop:
            try:
                ready, _, _ = select.select(watched, [], [], 1.0)
            except InterruptedError:
                ready = []
            if self.wake_r in ready:
                try:
                    os.read(self.wake_r, 512)
                except BlockingIOError:
                    pass
            self.reap()
            if self.listener in ready:
                self.accept()
            if self.parent > 1 and os.getppid() != self.parent:
                break  # whoever started us is gone: so are we
        self.shutdown()

    def accept(self):
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        with conn:
            conn.settimeout(CLIENT_TIMEOUT)
            try:
                if self.peer_uid(conn) not in self.peers:
                    return  # a process of the kernel uid, or a stranger: no answer at all
                line = self._read_line(conn)
                if line is None:
                    answer = {"ok": False, "error": "bad request: no line"}
                else:
                    answer = self.handle(line, conn)
                conn.sendall(json.dumps(answer).encode() + b"\n")
            except OSError:
                pass  # the client went away; nothing to answer

    @staticmethod
    def peer_uid(conn):
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return struct.unpack("3i", creds)[1]

    @staticmethod
    def _read_line(conn):
        data = b""
        while b"\n" not in data:
            chunk = conn.recv(4096)
            if not chunk:
                break
            data += chunk
            if len(data) > MAX_LINE:
                return None
        if b"\n" not in data:
            return None
        return data.split(b"\n", 1)[0].decode("utf-8", "surrogateescape")

    def handle(self, line, conn):
        try:
            request = json.loads(line)
            op, key = request["op"], request.get("key", "")
        except (ValueError, TypeError, KeyError):
            return {"ok": False, "error": f"bad request: {line[:200]!r}"}
        if op == "ping":
            return {"ok": True}
        if op == "sweep":
            return self.sweep()
        if not isinstance(key, str) or not KEY.fullmatch(key):
            return {"ok": False, "error": f"bad kernel key: {key!r}"}
        if op == "spawn":
            connection, code = request.get("connection"), request.get("code", [])
            if not isinstance(connection, dict) or not isinstance(code, list):
                return {"ok": False, "error": "spawn needs connection info and a list of code"}
            return self.spawn(key, connection, [str(c) for c in code], conn)
        if op == "kill":
            return self.kill(key)
        if op == "activate":
            return self.activate(key)
        if op == "status":
            return {"ok": True, "status": self.status(key)}
        return {"ok": False, "error": f"unknown request {op!r}"}

    # -- kernels -----------------------------------------------------------------------------

    def spawn(self, key, connection, code, conn):
        if key in self.kernels or key in self.ended:
            return {"ok": False, "error": f"kernel {key} exists already"}
        gate_r, gate_w = os.pipe()
        try:
            pid = os.fork()
        except OSError as exc:  # EAGAIN under a pids limit, ENOMEM
            os.close(gate_r)
            os.close(gate_w)
            return {"ok": False, "error": f"cannot fork a kernel: {exc.strerror or exc}"}
        if pid == 0:
            os.close(gate_w)
            self.become_kernel(key, connection, code, conn, gate_r)  # never returns
        os.close(gate_r)
        self.kernels[key] = pid
        self.keys[pid] = key
        self.gates[key] = gate_w
        return {"ok": True, "pid": pid}

    def activate(self, key):
        """Let dormant kernel ``key`` take the kernel uid and start answering."""
        gate = self.gates.pop(key, None)
        if gate is None:
            return {"ok": False, "error": f"kernel {key} is not waiting to start"}
        try:
            os.write(gate, b"go")
        except OSError as exc:
            return {"ok": False, "error": f"kernel {key} ended before it started ({exc})"}
        finally:
            os.close(gate)
        return {"ok": True}

    def own(self):
        """The pids this zygote keeps at a sweep: itself, its elders (pid 1, its ancestors,
        the container's command) and the dormant kernels it forked (still its identity)."""
        dormant = {self.kernels[key] for key in self.gates if key in self.kernels}
        return {os.getpid(), *self.elders, *dormant}

    def sweep(self):
        """SIGKILL every process that is not this zygote's own, whatever its uid; wait until
        none can run code; remove every SysV IPC object, and what the kernel uid left in
        /tmp, /dev/shm and /dev/mqueue. In this process (CAP_KILL; the files as that uid
        through setfsuid): no fork of the zygote's large memory. An error answer when a step
        cannot finish."""
        if self.kernel_uid is None:
            return {"ok": True}
        try:
            kill_all_but(self.own(), SWEEP_SECONDS, reap=self.reap)
            self.reap()
            remove_ipc()
            with file_identity(self.kernel_uid, self.kernel_gid, back=self.host_uid):
                scrub(seconds=SCRUB_SECONDS)
        except SweepFailed as exc:
            return {"ok": False, "error": str(exc)}
        return {"ok": True}

    def drop_identity(self):
        """Become the kernel uid: every capability goes with the root identity."""
        if self.kernel_uid is None:
            return
        os.setgroups([])
        os.setresgid(self.kernel_gid, self.kernel_gid, self.kernel_gid)
        os.setresuid(self.kernel_uid, self.kernel_uid, self.kernel_uid)
        not_dumpable()

    def kill(self, key):
        gate = self.gates.pop(key, None)
        if gate is not None:
            os.close(gate)
        pid = self.kernels.get(key)
        if pid is None:
            return {"ok": key in self.ended, "error": f"no kernel {key}"}
        for send in (os.killpg, os.kill):  # kill: a child too young to lead its group yet
            try:
                send(pid, signal.SIGKILL)
            except OSError:
                pass
        return {"ok": True}

    def status(self, key):
        if key in self.ended:
            return self.ended[key]
        if key in self.kernels:
            return f"running {self.kernels[key]}"
        return "unknown"

    def reap(self):
        while True:
            try:
                info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                return
            if info is None or info.si_pid == 0:
                return
            pid = info.si_pid
            # While the kernel is a zombie its pid cannot be reused: the group kill is safe.
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
            key = self.keys.pop(pid, None)
            if key is None:
                continue
            del self.kernels[key]
            gate = self.gates.pop(key, None)
            if gate is not None:
                os.close(gate)
            self.ended[key] = describe(info.si_code, info.si_status)
            self._write_exit(key, self.ended[key])

    def _write_exit(self, key, text):
        final = os.path.join(self.folder, key + ".exit")
        tmp = final + ".tmp"
        try:
            old = os.umask(0o022)
            try:
                with open(tmp, "w") as f:
                    f.write(text + "\n")
            finally:
                os.umask(old)
            os.replace(tmp, final)
        except OSError:
            traceback.print_exc()

    def shutdown(self):
        for pid in list(self.kernels.values()):
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
        deadline = time.monotonic() + 5
        while self.kernels and time.monotonic() < deadline:
            self.reap()
            time.sleep(0.01)
        try:
            os.unlink(self.path)
        except OSError:
            pass

    # -- in the child ------------------------------------------------------------------------

    def become_kernel(self, key, connection, cells, conn, gate):
        """Turn this forked child into a kernel on ``connection`` info; exits, never returns.

        As the zygote's identity: make the socket folder, bind the sockets, run ``cells``
        (code) in the kernel's namespace. Then wait on ``gate`` for ``activate``, take the
        kernel uid, and answer.
        """
        code = 1
        try:
            os.setsid()  # its own session and process group: a kill takes the whole group
            conn.close()
            self.listener.close()
            for other in self.gates.values():
                os.close(other)
            signal.set_wakeup_fd(-1)
            os.close(self.wake_r)
            os.close(self.wake_w)
            for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
                signal.signal(sig, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            os.umask(0o077)
            os.mkdir(os.path.join(self.folder, key), 0o700)
            # Dormant, it starts up in its own folder, not the workspace: IPython puts the
            # working folder on sys.path, and no module a phase left there may load while
            # this kernel is still the zygote's identity.
            workspace = os.getcwd()
            os.chdir(os.path.join(self.folder, key))
            connection_file = private_file(json.dumps(connection).encode())
            zygote = os.getppid()
            argv = [
                "-f",
                connection_file,
                "--HistoryManager.enabled=False",
                "--HistoryManager.hist_file=:memory:",  # as nbclient starts kernels
                f"--IPKernelApp.parent_handle={zygote}",  # exit if the zygote dies
            ]
            sys.argv = ["ipykernel_launcher"] + argv
            from ipykernel.kernelapp import IPKernelApp

            app = IPKernelApp.instance(exec_lines=cells)
            app.initialize(argv)
            if os.read(gate, 2) != b"go":  # the zygote closed the pipe: never activated
                os._exit(0)
            os.close(gate)
            self.drop_identity()
            add_flow_packages()
            os.chdir(workspace)
            manager = getattr(app.shell, "history_manager", None)
            history = getattr(manager, "dir_hist", None)  # IPython's _dh: where it started
            if history:
                history[:] = [type(history[0])(workspace)]
            os.umask(0o022 if self.host_uid == 0 else 0)  # a host user must remove its files
            app.start()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            traceback.print_exc()
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)


def add_flow_packages():
    """Put the flow's own packages (a layer's ``FLOW_PREFIX``) on this kernel's path, their
    ``.pth`` hooks run: only ever after the kernel took the kernel uid."""
    if not os.path.isdir(FLOW_SITE):
        return
    import site

    site.addsitedir(FLOW_SITE)
    os.environ["PATH"] = f"{FLOW_PREFIX}/bin:" + os.environ.get("PATH", "")


def private_file(data):
    """A path to ``data`` that only this process can open: a memfd, seen as /proc/self/fd/N."""
    fd = os.memfd_create("praxis-connection", 0)  # not inherited across exec
    os.write(fd, data)
    return f"/proc/self/fd/{fd}"


def not_dumpable():
    """Let no other process of this user ptrace this one or read its memory (a kernel's key,
    the zygote every later kernel is forked from). The flag survives fork, not exec."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    except Exception:
        traceback.print_exc()


def redirect_output(folder):
    """stdin from /dev/null; stdout and stderr to zygote.log in ``folder``."""
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    log = os.open(os.path.join(folder, "zygote.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)


def main(argv):
    if len(argv) not in (2, 5):
        sys.stderr.write("usage: python zygote.py SOCKET [KERNEL_UID KERNEL_GID PEER_UID]\n")
        return 2
    path = argv[1]
    kernel_uid = kernel_gid = None
    peers: tuple[int, ...] = ()
    if len(argv) == 5:
        kernel_uid, kernel_gid, peers = int(argv[2]), int(argv[3]), (int(argv[4]),)
        if peers[0] != os.geteuid():  # the host is another user: its runtime folder is its own
            ctypes.CDLL(None, use_errno=True).setfsuid(peers[0])
    redirect_output(os.path.dirname(path) or ".")
    not_dumpable()
    if sys.path and sys.path[0] in ("", os.getcwd()):
        del sys.path[0]  # as ipykernel_launcher does; IPython puts it back for user code
    try:
        preload()
    except Exception:
        traceback.print_exc()
        return 1
    # What the preload made is shared with every kernel forked from here until one writes to
    # its pages. A full collection looks at (and writes to) every object: frozen, the
    # preload's objects are never looked at, so a kernel's full collection takes about 1 ms
    # instead of 40-65 ms here, and does not copy the shared pages.
    gc.collect()
    gc.freeze()
    zygote = Zygote(path, kernel_uid, kernel_gid, peers)
    zygote.listen()
    sys.stderr.write(f"zygote {os.getpid()} listening on {path}\n")
    sys.stderr.flush()
    zygote.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
