"""The sandbox contract, one suite over every backend (docker, local, and fake where it applies)."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox import PathRefused, Sandbox, open_sandbox

from ..labels import TEST_LABELS

TIMEOUT = 60.0

DOCKER = pytest.param("docker", marks=pytest.mark.docker)
KERNEL_BACKENDS = ["local", DOCKER]  # real Jupyter kernels
ALL_BACKENDS = ["local", DOCKER, "fake"]


def _config(backend: str, request: pytest.FixtureRequest) -> dict[str, object]:
    if backend == "docker":
        image = request.getfixturevalue("docker_image")
        return {"backend": "docker", "image": image, "labels": dict(TEST_LABELS)}
    return {"backend": backend}


@pytest.fixture
def sandbox(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Sandbox]:
    sb = open_sandbox(
        _config(request.param, request),
        workspace=tmp_path / "workspace",
        # a name of its own: opening a run's sandbox removes what an earlier open of the same
        # name left (container, runtime folder), so a shared name would end a test beside it
        name=f"contract-{uuid.uuid4().hex[:8]}",
    )
    sb.open()
    try:
        yield sb
    finally:
        sb.close()


def run(sb: Sandbox, code: str) -> str:
    """Run ``code`` in a fresh kernel; return its stdout, failing on an error."""
    kernel = sb.kernel()
    try:
        result = kernel.execute(code, timeout=TIMEOUT)
    finally:
        kernel.shutdown()
    assert result.ok, (result.ename, result.evalue, result.stderr)
    return result.stdout


def workspace(sb: Sandbox) -> Path:
    root = sb.workspace.root  # type: ignore[attr-defined]
    assert isinstance(root, Path)
    return root


@pytest.mark.parametrize("sandbox", KERNEL_BACKENDS, indirect=True)
def test_execute_returns_streams_result_and_error(sandbox: Sandbox) -> None:
    kernel = sandbox.kernel()
    try:
        ok = kernel.execute(
            "import sys\nprint('out')\nprint('err', file=sys.stderr)\n6 * 7", timeout=TIMEOUT
        )
        failed = kernel.execute("{}['missing']", timeout=TIMEOUT)
    finally:
        kernel.shutdown()
    assert (ok.status, ok.stdout, ok.stderr) == ("ok", "out\n", "err\n")
    assert ok.result is not None and ok.result["text/plain"] == "42"
    kinds = [o["output_type"] for o in ok.outputs]
    assert kinds == ["stream", "stream", "execute_result"]
    assert (failed.status, failed.ename, failed.evalue) == ("error", "KeyError", "'missing'")
    assert failed.traceback and failed.outputs[-1]["output_type"] == "error"


@pytest.mark.parametrize("sandbox", ["fake"], indirect=True)
def test_fake_execute_returns_streams_and_error(sandbox: Sandbox) -> None:
    kernel = sandbox.kernel()
    ok = kernel.execute("import sys\nprint('out')\nprint('err', file=sys.stderr)", timeout=1)
    failed = kernel.execute("{}['missing']", timeout=1)
    assert (ok.status, ok.stdout, ok.stderr) == ("ok", "out\n", "err\n")
    assert (failed.status, failed.ename, failed.evalue) == ("error", "KeyError", "'missing'")
    assert failed.traceback


@pytest.mark.parametrize("sandbox", ALL_BACKENDS, indirect=True)
def test_upload_replaces_a_same_named_file(sandbox: Sandbox, tmp_path: Path) -> None:
    src = tmp_path / "sales.csv"
    src.write_text("v1\n")
    sandbox.upload(src, "data/sales.csv")
    assert run(sandbox, "print(open('data/sales.csv').read(), end='')") == "v1\n"

    # the old workspace file is a hardlink of this very source: uploading again keeps it
    sandbox.upload(src, "data/sales.csv")
    assert src.read_text() == "v1\n"

    # the source is replaced (new inode), as an editor or a Gate edit does
    new = tmp_path / "new.csv"
    new.write_text("v2, longer\n")
    os.replace(new, src)
    sandbox.upload(src, "data/sales.csv")
    assert run(sandbox, "print(open('data/sales.csv').read(), end='')") == "v2, longer\n"

    # a file the kernel put under the same name is replaced too, and the source is untouched
    run(sandbox, "import os\nos.remove('data/sales.csv')\nopen('data/sales.csv', 'w').write('k')")
    assert src.read_text() == "v2, longer\n"
    sandbox.upload(src, "data/sales.csv")
    assert (workspace(sandbox) / "data/sales.csv").read_text() == "v2, longer\n"
    assert sorted(sandbox.listing()) == ["data/sales.csv"]


@pytest.mark.parametrize("sandbox", ALL_BACKENDS, indirect=True)
def test_a_kernel_rewriting_an_input_in_place_never_changes_its_source(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    src = tmp_path / "input.csv"
    src.write_text("id\n1\n")
    src.chmod(0o644)
    sandbox.upload(src, "input.csv")
    run(
        sandbox,
        "try:\n"
        "    with open('input.csv', 'r+') as fh:\n"
        "        fh.write('XX')\n"
        "except PermissionError:\n"
        "    pass\n",
    )
    assert src.read_text() == "id\n1\n"


@pytest.mark.parametrize("sandbox", ALL_BACKENDS, indirect=True)
def test_upload_refuses_unsafe_names(sandbox: Sandbox, tmp_path: Path) -> None:
    src = tmp_path / "x.txt"
    src.write_text("x")
    for name in ("../x.txt", "/etc/x.txt", "a\\b", ""):
        with pytest.raises(PathRefused):
            sandbox.upload(src, name)
    assert sandbox.listing() == {}


@pytest.mark.parametrize("sandbox", ALL_BACKENDS, indirect=True)
def test_listing_sees_new_and_changed_files(sandbox: Sandbox, tmp_path: Path) -> None:
    src = tmp_path / "in.txt"
    src.write_text("abc")
    sandbox.upload(src, "in.txt")
    before = sandbox.listing()
    assert set(before) == {"in.txt"} and before["in.txt"].size == 3

    run(
        sandbox,
        "import os\nos.makedirs('sub', exist_ok=True)\n"
        "open('sub/new.txt', 'w').write('hello')\n"
        "open('changed.txt', 'w').write('1')\n",
    )
    middle = sandbox.listing()
    assert set(middle) == {"in.txt", "sub/new.txt", "changed.txt"}
    assert middle["sub/new.txt"].size == 5

    run(sandbox, "open('changed.txt', 'a').write('23')")
    after = sandbox.listing()
    changed = {name for name in after if after[name] != middle.get(name)}
    assert changed == {"changed.txt"} and after["changed.txt"].size == 3


@pytest.mark.parametrize("sandbox", ALL_BACKENDS, indirect=True)
def test_fetch_copies_out(sandbox: Sandbox, tmp_path: Path) -> None:
    run(sandbox, "open('out.csv', 'w').write('a,b\\n1,2\\n')")
    dest = tmp_path / "record" / "output" / "out.csv"
    sandbox.fetch("out.csv", dest)
    assert dest.read_text() == "a,b\n1,2\n"

    # a copy, not a link: writing the workspace file in place leaves the fetched one alone
    run(sandbox, "open('out.csv', 'a').write('3,4\\n')")
    assert dest.read_text() == "a,b\n1,2\n"
    assert dest.stat().st_uid == os.getuid()

    for name in ("missing.csv", "../out.csv", "/etc/passwd"):
        with pytest.raises(PathRefused):
            sandbox.fetch(name, tmp_path / "nope")


@pytest.mark.parametrize("sandbox", ALL_BACKENDS, indirect=True)
def test_files_the_kernel_writes_are_readable_and_movable(sandbox: Sandbox, tmp_path: Path) -> None:
    run(
        sandbox,
        "import os\nos.makedirs('deep/er', exist_ok=True)\n"
        "open('deep/er/f.txt', 'w').write('made inside')\n"
        "open('top.txt', 'w').write('top')\n",
    )
    root = workspace(sandbox)
    assert (root / "deep/er/f.txt").read_text() == "made inside"
    os.rename(root / "deep/er/f.txt", root / "deep/moved.txt")
    shutil.move(root / "top.txt", tmp_path / "top.txt")  # the workspace may be its own mount
    (root / "deep/moved.txt").unlink()
    assert (tmp_path / "top.txt").read_text() == "top"
    assert sandbox.listing() == {}


@pytest.mark.parametrize("sandbox", ALL_BACKENDS, indirect=True)
def test_each_kernel_is_a_fresh_interpreter(sandbox: Sandbox) -> None:
    run(sandbox, "secret = 41")
    assert run(sandbox, "print('secret' in globals())") == "False\n"


@pytest.mark.parametrize("sandbox", ALL_BACKENDS, indirect=True)
def test_kernel_running_hands_out_a_kernel_in_which_the_code_ran_once(sandbox: Sandbox) -> None:
    code = "ran = globals().get('ran', 0) + 1\nprint('first', ran)"
    kernel, result = sandbox.kernel_running(code, timeout=TIMEOUT)
    try:
        assert result.ok and result.stdout == "first 1\n"
        again = kernel.execute("print(ran)", timeout=TIMEOUT)
        assert again.stdout == "1\n"  # once, in the kernel handed out
        failed = sandbox.kernel_running("1 / 0", timeout=TIMEOUT)
        assert failed[1].ename == "ZeroDivisionError"
        failed[0].shutdown()
    finally:
        kernel.shutdown()


@pytest.mark.parametrize("sandbox", KERNEL_BACKENDS, indirect=True)
def test_the_objects_a_kernel_inherits_are_out_of_its_garbage_collections(
    sandbox: Sandbox,
) -> None:
    # what the kernel server imported once (pandas, ipykernel) is frozen before each fork
    assert run(sandbox, "import gc\nprint(gc.get_freeze_count() > 10_000)") == "True\n"


@pytest.mark.parametrize("sandbox", ALL_BACKENDS, indirect=True)
def test_kernels_start_in_the_workspace(sandbox: Sandbox) -> None:
    run(sandbox, "open('here.txt', 'w').write('x')")
    assert set(sandbox.listing()) == {"here.txt"}
    assert (workspace(sandbox) / "here.txt").read_text() == "x"


@pytest.mark.parametrize("sandbox", ALL_BACKENDS, indirect=True)
def test_open_and_close_are_idempotent_and_close_keeps_the_workspace(sandbox: Sandbox) -> None:
    sandbox.open()
    run(sandbox, "open('kept.txt', 'w').write('x')")
    sandbox.close()
    sandbox.close()
    sandbox.open()  # a workspace with a disk quota is a mount, there again once open
    assert (workspace(sandbox) / "kept.txt").read_text() == "x"


@pytest.mark.parametrize("sandbox", ALL_BACKENDS, indirect=True)
def test_symlinks_and_fifos_are_never_listed_fetched_or_followed(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    root = workspace(sandbox)
    secret = tmp_path / "secret.txt"
    secret.write_text("host only")
    os.symlink(secret, root / "link.txt")
    os.symlink(tmp_path, root / "linkdir")
    os.mkfifo(root / "pipe")
    (root / "real.txt").write_text("r")
    assert set(sandbox.listing()) == {"real.txt"}
    for name in ("link.txt", "linkdir/secret.txt", "pipe"):
        with pytest.raises(PathRefused):
            sandbox.fetch(name, tmp_path / "out")
    with pytest.raises(PathRefused):
        sandbox.upload(root / "real.txt", "linkdir/planted.txt")
    assert not (tmp_path / "planted.txt").exists()
    sandbox.upload(root / "real.txt", "link.txt")  # replaces the link, never writes through it
    assert secret.read_text() == "host only" and (root / "link.txt").read_text() == "r"


@pytest.mark.parametrize("sandbox", KERNEL_BACKENDS, indirect=True)
def test_code_runs_in_the_workspace_where_the_kernel_did_not_start(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """A kernel starts up dormant in a folder of its own (no module a phase left in the
    workspace can load then); the code it is handed runs in the workspace, and a module
    there imports (IPython's '' on sys.path), and IPython's _dh says the workspace."""
    helper = tmp_path / "helper_mod.py"
    helper.write_text("VALUE = 42\n", encoding="utf-8")
    sandbox.upload(helper, "helper_mod.py")
    kernel = sandbox.kernel()
    try:
        code = "import os, helper_mod\nprint(helper_mod.VALUE, os.listdir('.'))"
        result = kernel.execute(code, timeout=60)
        assert result.ok, result.evalue
        assert result.stdout.strip() == "42 ['helper_mod.py']"
        cwd = kernel.execute("import os; print(os.getcwd() == str(_dh[0]))", timeout=60)
        assert cwd.stdout.strip() == "True"
    finally:
        kernel.shutdown()
