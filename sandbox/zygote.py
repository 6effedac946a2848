"""The kernel zygote: imports what kernels need once, then forks one fresh kernel per request.

A standalone script (standard library and ipykernel only: it runs inside the sandbox image,
which does not have the ``sandbox`` package). The host reads this file and runs it as

    python -c "<this source>" SOCKET

in the sandbox (docker exec, or a subprocess for the local backend). It preloads ipykernel,
IPython, zmq and, when importable, pandas and numpy, WITHOUT creating a zmq context, thread or
event loop, then listens on the unix socket SOCKET. One request per connection: one JSON
object on one line, answered with one JSON object on one line (``ok`` true or false, and an
``error`` text when false):

    {"op": "ping"}                                    -> {"ok": true}
    {"op": "spawn", "key": K, "connection": INFO, "code": [CELL, ...]}
                                                      -> {"ok": true, "pid": PID}
    {"op": "kill", "key": K}                          -> {"ok": true}
    {"op": "status", "key": K}  -> {"ok": true, "status": "running PID" | "exit N" |
                                                          "signal N" | "unknown"}

A kernel is a forked child that starts its own session (so a kill takes its whole process
group, fork bombs included), sets umask 000 and runs IPKernelApp on the connection INFO (a
connection file's JSON) as ``ipykernel_launcher`` would, after running the CELLs in its
namespace (``exec_lines``). The INFO, with the kernel's key, never touches a file another
process could read: the child keeps it in a memfd, and kernels and the zygote are not
dumpable (no ptrace, no /proc/PID/mem or fd for other processes of their user). A
fork that fails (EAGAIN under a pids limit) is an error answer. The zygote reaps its
children, kills what is left of a dead kernel's process group, records each exit status and
writes it to ``KEY.exit`` next to SOCKET. Its own output goes to ``zygote.log`` there. It
exits on SIGTERM (killing every kernel it started) and when the process that started it goes
away.
"""

import json
import os
import re
import select
import signal
import socket
import sys
import time
import traceback

KEY = re.compile(r"[A-Za-z0-9_.-]{1,64}")
MAX_LINE = 1 << 20
CLIENT_TIMEOUT = 5.0

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
    "ipykernel.debugger",  # imports debugpy: 60 ms a kernel otherwise
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


def preload():
    for name in PRELOAD:
        __import__(name)
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
    def __init__(self, path):
        self.path = path
        self.folder = os.path.dirname(path) or "."
        self.parent = os.getppid()
        self.kernels = {}  # key -> pid, while running
        self.keys = {}  # pid -> key, while running
        self.ended = {}  # key -> "exit N" | "signal N"
        self.stop = False
        self.listener = None
        self.wake_r, self.wake_w = os.pipe()

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
        old = os.umask(0)  # the host user connects to the socket (a private folder holds it)
        try:
            listener.bind(self.path)
        finally:
            os.umask(old)
        listener.listen(64)
        self.listener = listener

    def _terminate(self, *_):
        self.stop = True

    def serve(self):
        while not self.stop:
            try:
                ready, _, _ = select.select([self.listener, self.wake_r], [], [], 1.0)
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
                line = self._read_line(conn)
                if line is None:
                    answer = {"ok": False, "error": "bad request: no line"}
                else:
                    answer = self.handle(line, conn)
                conn.sendall(json.dumps(answer).encode() + b"\n")
            except OSError:
                pass  # the client went away; nothing to answer

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
        if not isinstance(key, str) or not KEY.fullmatch(key):
            return {"ok": False, "error": f"bad kernel key: {key!r}"}
        if op == "spawn":
            connection, code = request.get("connection"), request.get("code", [])
            if not isinstance(connection, dict) or not isinstance(code, list):
                return {"ok": False, "error": "spawn needs connection info and a list of code"}
            return self.spawn(key, connection, [str(c) for c in code], conn)
        if op == "kill":
            return self.kill(key)
        if op == "status":
            return {"ok": True, "status": self.status(key)}
        return {"ok": False, "error": f"unknown request {op!r}"}

    # -- kernels -----------------------------------------------------------------------------

    def spawn(self, key, connection, code, conn):
        if key in self.kernels or key in self.ended:
            return {"ok": False, "error": f"kernel {key} exists already"}
        try:
            pid = os.fork()
        except OSError as exc:  # EAGAIN under a pids limit, ENOMEM
            return {"ok": False, "error": f"cannot fork a kernel: {exc.strerror or exc}"}
        if pid == 0:
            self.become_kernel(connection, code, conn)  # never returns
        self.kernels[key] = pid
        self.keys[pid] = key
        return {"ok": True, "pid": pid}

    def kill(self, key):
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

    def become_kernel(self, connection, cells, conn):
        """Turn this forked child into a kernel on ``connection`` info; exits, never returns.

        ``cells`` (code) run in the kernel's namespace before it answers anyone.
        """
        code = 1
        try:
            os.setsid()  # its own session and process group: a kill takes the whole group
            conn.close()
            self.listener.close()
            signal.set_wakeup_fd(-1)
            os.close(self.wake_r)
            os.close(self.wake_w)
            for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
                signal.signal(sig, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            os.umask(0)
            connection_file = private_file(json.dumps(connection).encode())
            zygote = os.getppid()
            argv = [
                "-f",
                connection_file,
                "--HistoryManager.enabled=False",
                f"--IPKernelApp.parent_handle={zygote}",  # exit if the zygote dies
            ]
            sys.argv = ["ipykernel_launcher"] + argv
            from ipykernel.kernelapp import IPKernelApp

            IPKernelApp.launch_instance(argv=argv, exec_lines=cells)
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
    if len(argv) != 2:
        sys.stderr.write("usage: python zygote.py SOCKET\n")
        return 2
    path = argv[1]
    redirect_output(os.path.dirname(path) or ".")
    not_dumpable()
    if sys.path and sys.path[0] in ("", os.getcwd()):
        del sys.path[0]  # as ipykernel_launcher does; IPython puts it back for user code
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # quiet debugpy's import
    try:
        preload()
    except Exception:
        traceback.print_exc()
        return 1
    zygote = Zygote(path)
    zygote.listen()
    sys.stderr.write(f"zygote {os.getpid()} listening on {path}\n")
    sys.stderr.flush()
    zygote.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
