"""The exit-code contract of every subcommand (README's table): 0 hold/proved, 1 violation/refutation,
2 usage error, 3 unknown, 4 internal error, 130 interrupted; each failure says one line and no cpgraph
traceback reaches the user."""

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from cpgraph.cli import main

POLICIES = {
    "none_admit": "from cpgraph.reference.policy import replay_bucket\ndef admit(**b):\n    return None\n",
    "yes_admit": "from cpgraph.reference.policy import replay_bucket\ndef admit(**b):\n    return 'yes'\n",
    "float_bucket": (
        "from cpgraph.reference.policy import admit\n"
        "def replay_bucket(**b):\n    return 8.0\n"
    ),
    "positional": (
        "from cpgraph.reference.policy import replay_bucket\n"
        "def admit(cp_rank, cp_size, align_size, num_tokens, extend_seq_lens, capture_num_tokens,\n"
        "          bucket_local_tokens, max_padding_factor, /):\n    return False\n"
    ),
    "exits": "import sys\nfrom cpgraph.reference.policy import replay_bucket\ndef admit(**b):\n    sys.exit(3)\n",
    "interrupts": "from cpgraph.reference.policy import replay_bucket\ndef admit(**b):\n    raise KeyboardInterrupt\n",
    "hangs": (
        "import time\nfrom cpgraph.reference.policy import replay_bucket, admit as _admit\n"
        "def admit(**b):\n    if b['cp_size'] == 4:\n        time.sleep(3600)\n    return _admit(**b)\n"
    ),
    "import_hangs": "import time\ntime.sleep(3600)\n",
    "import_exits": "import sys\nsys.exit(3)\n",
    "raises": (
        "from cpgraph.reference.policy import replay_bucket, admit as _admit\n"
        "def _helper(b):\n    if b['num_tokens'] > 100:\n        raise ZeroDivisionError('policy bug')\n    return _admit(**b)\n"
        "def admit(**b):\n    return _helper(b)\n"
    ),
}

# A count, not a time: the misbehaviour below is met within the first batches on any machine.
FAST = ["--max-cases", "500", "--cp-sizes", "2,4", "--call-timeout-s", "1"]


@pytest.fixture()
def files(tmp_path: Path) -> dict[str, str]:
    out = {}
    for name, source in POLICIES.items():
        (tmp_path / f"{name}.py").write_text(source)
        out[name] = str(tmp_path / f"{name}.py")
    (tmp_path / "a_file").write_text("not a directory\n")
    out["under_a_file"] = str(tmp_path / "a_file" / "sub" / "out.png")
    out["a_file"] = str(tmp_path / "a_file")
    (tmp_path / "bad.toml").write_text('cp_size = 4\ncapture_num_tokens = [512]\nselector = "fastest"\n')
    out["bad_toml"] = str(tmp_path / "bad.toml")
    (tmp_path / "binary.toml").write_bytes(b"\xff\xfe\x00garbage")
    out["binary"] = str(tmp_path / "binary.toml")
    (tmp_path / "w.jsonl").write_text("[10, -1]\n")
    (tmp_path / "huge.jsonl").write_text(f"[{10**15}]\n")
    out["huge_workload"] = str(tmp_path / "huge.jsonl")
    out["bad_workload"] = str(tmp_path / "w.jsonl")
    out["dir"] = str(tmp_path)
    return out


def _fill(argv: list[str], files: dict[str, str]) -> list[str]:
    return [files[a[1:]] if a.startswith("@") else a for a in argv]


USAGE = [
    # (argv with @name for a fixture path, what the one line must say)
    (["check", "no_such_module_xyz:policy"], "cannot import policy module 'no_such_module_xyz'"),
    (["check", "cpgraph.reference.policy", "--max-tokens", str(10**18)], "argument --max-tokens: must be an int in 2..1048576"),
    (["check", "cpgraph.reference.policy", "--max-requests", str(10**18)], "argument --max-requests: must be an int in 1..1024"),
    (["check", "cpgraph.reference.policy", "--cp-sizes", "2,1000"], "--cp-sizes must be ints in 1..64"),
    (["check", "cpgraph.reference.policy", "--budget-s", "nan"], "argument --budget-s: must be a number of seconds"),
    (["check", "cpgraph.reference.policy", "--call-timeout-s", "0"], "argument --call-timeout-s: must be a number of seconds"),
    (["check", "cpgraph.reference.policy", "--format", "yaml"], "argument --format: invalid choice: 'yaml'"),
    (["check", "cpgraph.reference.policy", "--emit-test", "@under_a_file"], "--emit-test"),
    (["check", "cpgraph.reference.policy", "--plot", "@under_a_file"], "--plot"),
    (["check", "cpgraph.reference.policy", "--emit-test", "@dir"], "is a directory"),
    (["check", "@none_admit", *FAST], "admit(cp_rank=0, ...) returned None (NoneType); the protocol requires a bool"),
    (["check", "@yes_admit", *FAST], "returned 'yes' (str); the protocol requires a bool"),
    (["check", "@float_bucket", *FAST], "replay_bucket(cp_rank=0, ...) returned 8.0 (float); the protocol requires an int"),
    (["check", "@positional", *FAST], "cannot be called with the protocol's keywords"),
    (["check", "@import_hangs", *FAST], "importing it did not finish within 1 s (--call-timeout-s)"),
    (["check", "@import_exits", *FAST], "importing it raised SystemExit(3)"),
    (["prove", "--cp-max", str(10**18)], "argument --cp-max: must be an int in 1..64"),
    (["prove", "--jobs", "0"], "argument --jobs: must be an int in 1..256, got 0"),
    (["prove", "--only", "no_such_theorem"], "'no_such_theorem' is not a theorem"),
    (["review", "no/such/design.toml"], "no such file"),
    (["review", "@bad_toml"], "'selector': got 'fastest'"),
    (["review", "@binary"], "binary.toml"),
    (["review", "--plot", "@a_file"], "--plot"),
    (["review", "--bogus"], "cpgraph review: error: unrecognized arguments: --bogus"),
    (["plan", "--workload", "mixed", "--cp-size", "4", "--max-requests", "0"], "argument --max-requests: must be an int in 1..1024, got 0"),
    (["plan", "--workload", "mixed", "--cp-size", str(10**18)], "argument --cp-size: must be an int in 2..64"),
    (["plan", "--workload", "mixed", "--cp-size", "4", "--max-buckets", str(10**18)], "argument --max-buckets"),
    (["plan", "--workload", "mixed", "--cp-size", "4", "--out", "@under_a_file"], "--out"),
    (["plan", "--workload", "mixed", "--cp-size", "4", "--nope"], "cpgraph plan: error: unrecognized arguments: --nope"),
    (["plan", "--workload", "mixed"], "the following arguments are required: --cp-size"),
    (["plan", "--workload", "@huge_workload", "--cp-size", "4"], "plan covers batches of at most 262144 tokens"),
    (["simulate", "--workload", "@bad_workload"], "w.jsonl:1"),
    (["simulate", "no_such_design"], "no such file and no bundled design"),
    (["simulate", "--plot", "@under_a_file"], "--plot"),
    (["bogus-command"], "invalid choice: 'bogus-command'"),
    ([], "usage: cpgraph"),
]


@pytest.mark.parametrize("argv, says", USAGE, ids=[" ".join(a)[:60] or "no-command" for a, _ in USAGE])
def test_usage_errors_exit_2_with_one_line(argv: list[str], says: str, files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_fill(argv, files)) == 2
    out, err = capsys.readouterr()
    assert says in err, err
    assert "Traceback" not in err and "Traceback" not in out
    if argv:
        assert len(err.strip().splitlines()) == 1, err
        assert out == ""


FINDINGS = [
    (["check", "@exits", *FAST], "admit(cp_rank=0, ...) raised SystemExit(3)"),
    (["check", "@interrupts", *FAST], "raised KeyboardInterrupt (a policy must answer"),
    (["check", "@hangs", *FAST], "did not return within 1 s (--call-timeout-s); the check stopped"),
    (["check", "@raises", *FAST, "--format", "text"], "ZeroDivisionError: policy bug"),
]


@pytest.mark.parametrize("argv, says", FINDINGS, ids=[a[1] for a, _ in FINDINGS])
def test_misbehaving_policies_are_findings_exit_1(argv: list[str], says: str, files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_fill(argv, files)) == 1
    out, err = capsys.readouterr()
    assert says in out
    assert "Traceback" not in out + err
    assert "cpgraph/check/" not in out  # only the policy's own frames are shown
    if "raises" not in argv[1]:
        assert out.strip().splitlines()[0].startswith("cpgraph check ") and "FAILED" in out.splitlines()[0]


def test_the_policys_traceback_is_shown_as_its_own(files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", files["raises"], *FAST]) == 1
    out = capsys.readouterr().out
    assert "the policy's traceback" in out and "in _helper" in out and "raises.py" in out


def test_an_internal_error_is_one_line_and_the_traceback_needs_debug(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import cpgraph.design.simulate as simulate

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("planted bug")

    monkeypatch.setattr(simulate, "simulate", broken)
    assert main(["simulate", "upstream"]) == 4
    err = capsys.readouterr().err
    assert "internal error (a bug in cpgraph" in err and "RuntimeError: planted bug" in err and "--debug" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 2  # the start note, then the one line
    assert main(["simulate", "upstream", "--debug"]) == 4
    assert "Traceback" in capsys.readouterr().err


def test_version_and_help_exit_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("cpgraph ")
    assert main(["check", "--help"]) == 0
    assert "--call-timeout-s" in capsys.readouterr().out


def _interrupt(argv: list[str], ready: str) -> tuple[int, str]:
    """Start ``cpgraph ARGV`` in its own process group, wait for the line ``ready`` on stderr, then send
    SIGINT to the whole group, as a terminal's Ctrl-C does."""
    env = dict(os.environ, NO_COLOR="1")
    # The child starts with Ctrl-C's default action whatever this process inherited: a test run launched in the
    # background of a shell without job control ignores SIGINT, and a Python started that way keeps ignoring it.
    proc = subprocess.Popen([sys.executable, "-m", "cpgraph", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stderr is not None
    guard = threading.Timer(120, lambda: os.killpg(proc.pid, signal.SIGKILL))  # a ready line that never comes
    guard.start()
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if ready in line:
            break
    guard.cancel()
    try:
        os.killpg(proc.pid, signal.SIGINT)
    except ProcessLookupError:  # it ended before it was ready: the assertions below say how
        pass
    out, err = proc.communicate(timeout=120)
    return proc.returncode, "".join(seen) + err


@pytest.mark.parametrize(
    "argv, ready",
    [
        (["check", "cpgraph.reference.policy", "--budget-s", "120", "--cp-sizes", "2,4"], "batches in"),
        (["prove", "--cp-max", "64", "--jobs", "2"], "theorem instances checked"),  # the pool is up
        (["simulate", "--workload", "docs"], "cpgraph simulate:"),
        (["review"], "cpgraph review:"),
    ],
    ids=["check", "prove", "simulate", "review"],
)
def test_ctrl_c_exits_130_with_one_line(argv: list[str], ready: str) -> None:
    code, err = _interrupt(argv, ready)
    assert code == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert err.strip().splitlines()[-1] == f"cpgraph {argv[0]}: interrupted"


def _check_file(policy: Path, source: str) -> subprocess.CompletedProcess[str]:
    """``cpgraph check`` (FAST) of a policy file written with ``source``."""
    policy.write_text(source)
    return subprocess.run([sys.executable, "-m", "cpgraph", "check", str(policy), *FAST], capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize(
    "name, source, says",
    [
        ("stubborn", "import time\nfrom cpgraph.reference.policy import replay_bucket\n"
         "def admit(**b):\n    while True:\n        try:\n            time.sleep(3600)\n        except BaseException:\n            pass\n",
         ("ignored every attempt to stop it",)),
        ("c_loop", "from cpgraph.reference.policy import replay_bucket\n"
         "def admit(**b):\n    return sum(range(10**15)) > 0  # one C call: never returns to the interpreter\n",
         ("could not be interrupted", "admit(cp_rank=0, ...)")),  # ended by the supervisor
    ],
    ids=["swallows-every-stop", "stuck-in-c-code"],
)
def test_a_call_that_cannot_be_stopped_still_ends_the_check(name: str, source: str, says: tuple[str, ...], tmp_path: Path) -> None:
    result = _check_file(tmp_path / f"{name}.py", source)
    assert result.returncode == 1
    assert all(part in result.stderr for part in says), result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "body, code, says",
    [
        ("def admit(**b):\n    os._exit(0)\n", 1, "admit(cp_rank=0, ...) ended the process (exit status 0) instead of answering"),
        ("os._exit(0)\n", 2, "importing it ended the process (exit status 0)"),
    ],
    ids=["in-a-call", "at-import"],
)
def test_a_policy_that_ends_the_process_is_caught_on_the_command_line(body: str, code: int, says: str, tmp_path: Path) -> None:
    result = _check_file(tmp_path / "ender.py", "import os\nfrom cpgraph.reference.policy import replay_bucket\n" + body)
    assert result.returncode == code and says in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
