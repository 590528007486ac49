"""What the commands share: their options, one-line errors and exit codes, the
spinner, writing a report (atomically) and connecting to the cluster.

Exit codes (a public contract): 0 nothing failing; 1 a checklist step is
``fail`` or a finding is critical; 2 usage error or unreadable input; 3 the
cluster cannot be reached or refuses the credentials.
"""

from __future__ import annotations

import errno
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import regex

from triage.collect import CollectError, InputError
from triage.safety import outfile
from triage.safety.redact import redact_text
from triage.safety.sanitize import sanitize
from triage.speed import lazyregex

if TYPE_CHECKING:
    from rich.console import Console

    from triage.collect.live import LiveCollector
    from triage.collect.prometheus import PrometheusOptions
    from triage.commands.options import PrometheusArgs
    from triage.report import Report

# 1 comes from the report (pipeline.exit_code), 3 from ClusterUnreachable.
EXIT_OK, EXIT_USAGE = 0, 2
# Set by the shell's completion script: the command line is a question, not a command.
COMPLETE_VAR = "_VLLM_TRIAGE_COMPLETE"


class Output(str, Enum):
    table = "table"
    json = "json"
    yaml = "yaml"
    markdown = "markdown"
    html = "html"


def stderr_console() -> Console:
    from rich.console import Console  # a quiet run (analyze -o json) draws nothing with it

    return Console(stderr=True, highlight=False, soft_wrap=True)  # paths stay on one line


def say(message: str) -> None:
    """One line on stderr. It can quote a kubeconfig, a bundle, a server's
    message or a path: made safe for the terminal and masked like a report."""
    stderr_console().print(redact_text(sanitize(message)), markup=False, highlight=False)


def fail(message: str, code: int) -> None:
    say(f"vllm-triage: error: {message}")
    # SystemExit: click lets it through as the same exit code, and a caller that is not a
    # typer command (the tests, another program) gets a plain exit.
    raise SystemExit(code)


def _is_typer_exit(exc: BaseException) -> bool:
    """A command's own ``raise typer.Exit(n)``: an exit, not an internal error (typer is
    not imported here: a caller of these helpers may not be a typer command)."""
    typer = sys.modules.get("typer")
    return typer is not None and isinstance(exc, typer.Exit)


_DURATION = lazyregex.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s?)?$")


def parse_duration(text: str) -> float:
    """kubectl's --request-timeout: '0' (no limit), '30', '30s', '1m', '1m30s'."""
    m = _DURATION.match(text.strip())
    if not text.strip() or not m:
        raise InputError(f"--request-timeout {text!r} is not a duration such as 30s, 1m or 0")
    hours, minutes, seconds = (float(g) if g else 0.0 for g in m.groups())
    total = hours * 3600 + minutes * 60 + seconds
    return total if total > 0 else 3600.0  # "0" means no limit; an hour is our ceiling


def use_color() -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return sys.stdout.isatty()


@contextmanager
def guard(debug: bool) -> Iterator[None]:
    """Turn every failure into one clear line and an exit code; never a traceback."""
    try:
        yield
    except CollectError as exc:
        fail(str(exc), exc.exit_code)
    except KeyboardInterrupt:
        _STOP_HANDLED.set()
        fail("interrupted", 130)
    except Terminated:
        _STOP_HANDLED.set()
        fail("terminated", 143)
    except Exception as exc:
        if _is_typer_exit(exc):
            raise
        if debug:
            import traceback  # only for --debug: a plain run prints no traceback

            traceback.print_exc()
        fail(f"internal error: {exc or 'no message'} (rerun with --debug for the details)",
             EXIT_USAGE)


def terminal_width() -> int | None:
    """The width the table is drawn to: COLUMNS, else the terminal's; None for a pipe."""
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if sys.stdout.isatty():
        import shutil  # only for a terminal (shutil brings bz2 and lzma)

        return shutil.get_terminal_size((120, 24)).columns
    return None


def emit(report: Report, output: Output, output_file: Path | None, quiet: bool = False,
         fix_dir: Path | None = None) -> None:
    from triage.writers import chunks, writers

    if fix_dir is not None:
        from triage.fixes import files as fixdir

        # The commands printed name the files where they are written.
        report = fixdir.placed(report, fix_dir)
        write_fixes([report], fix_dir)

    def draw_table(r: Report, color: bool) -> str:
        from triage.writers import table

        return table.render(r, color, width=terminal_width())

    render = writers()
    render["table"] = draw_table
    if output.value not in render:
        fail(f"output format {output.value!r} is not available in this build", EXIT_USAGE)
    if output_file is None:
        sys.stdout.writelines(chunks(output.value, report, output is Output.table
                                     and use_color(), render[output.value]))
    elif write_report(output_file, lambda: chunks(output.value, report, False,
                                                  render[output.value])) and not quiet:
        say(f"report written to {output_file}")  # to a file, or a stream other than stdout
        sys.stdout.write(render["table"](report, use_color()))
    sys.stdout.flush()


def write_fixes(reports: list[Report], fix_dir: Path) -> None:
    """--fix-dir: every patch of the reports (placed in ``fix_dir``) to its own file; the
    count said is the count of files written."""
    from triage.fixes import files as fixdir

    written: list[Path] = []
    for report in reports:
        try:
            written += fixdir.write(report, write_atomically)
        except OSError as exc:
            fail(f"cannot write patches to {fix_dir}: {exc.strerror or exc}", EXIT_USAGE)
    count = len(set(written))
    say(f"{count} patch file(s) written to {fix_dir}" if count else
        f"no patch to write to {fix_dir}: no finding has a computed patch")


def write_report(output_file: Path, text: Callable[[], str | Iterable[str]]) -> bool:
    """``--output-file``: the report to a file (atomically) or through a stream of this
    process; a device, a pipe or a link to one is refused, never replaced. False when it
    went to stdout (which then carries nothing else)."""
    target = outfile.classify(output_file)
    if target.refused:
        fail(f"--output-file {output_file}: {target.refused}; not replaced (give a regular "
             "file or a new path, or - for stdout)", EXIT_USAGE)
    if target.fd == 1:
        sys.stdout.writelines(_pieces(text()))  # written through, not replaced
        return False
    try:
        if target.fd is not None:
            outfile.write_through(target.fd, "".join(_pieces(text())).encode("utf-8"))
        else:  # a piece at a time (a pod's, for JSON): never the whole report as bytes
            write_atomically(output_file, (t.encode("utf-8") for t in _pieces(text())))
    except OSError as exc:
        fail(f"cannot write {output_file}: {exc.strerror or exc}", EXIT_USAGE)
    return True


def _pieces(text: str | Iterable[str]) -> Iterable[str]:
    return (text,) if isinstance(text, str) else text


def is_stdout(path: Path) -> bool:
    """``-``, or a name for this process's stdout (``/dev/stdout``, ``/proc/self/fd/1``)."""
    return outfile.classify(path).fd == 1


def not_a_report_file(path: Path) -> str | None:
    """Why a report must not replace what is at ``path`` (a device, a pipe, a stream of
    this process, a link to one), or None for a regular file, a link to one, or a new path."""
    target = outfile.classify(path)
    if target.fd is not None:
        return f"a stream of this process (file descriptor {target.fd})"
    return target.refused


def write_atomically(path: Path, data: bytes | Iterable[bytes]) -> None:
    """Write ``path`` so that it holds the old report or the new one, never half of one.

    The text goes to a temporary file in the same directory, which then
    replaces the target by rename: a kill mid-write leaves the previous
    report intact, and a symbolic link at the target is replaced, not
    followed (the report never lands where the link points). What must not be
    replaced (a device, a pipe, a stream such as /dev/stderr, a link to one:
    ``not_a_report_file``) is an error here, whoever calls.
    """
    refused = not_a_report_file(path)
    if refused:
        raise OSError(errno.EPERM, f"{refused}: not replaced")
    import tempfile  # only when a report file is written (tempfile brings shutil, random)

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            for piece in (data,) if isinstance(data, bytes) else data:
                fh.write(piece)
            fh.flush()
            os.fsync(fh.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # what a plain write would have made
        os.replace(tmp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise


class Terminated(BaseException):
    """SIGTERM, turned into an exception so cleanups (temp files, the kubernetes
    client's decoded client key, open connections) run as for Ctrl-C."""


def on_sigterm(_signum: int, _frame: object) -> None:
    raise Terminated


# Set once the run has answered a signal: a copy of it that a finaliser saw while the
# first was unwinding the run must not stop the exit that answer started.
_STOP_HANDLED = threading.Event()


def _signal_later(thread: int, sig: signal.Signals) -> None:
    time.sleep(0.05)  # the finaliser and the hook that started this have returned by then
    if not _STOP_HANDLED.is_set():
        signal.pthread_kill(thread, sig)


def install_signal_handlers() -> None:
    """SIGTERM raises Terminated (as SIGINT raises KeyboardInterrupt), and a signal
    that a finaliser swallowed is delivered again.

    Python runs a signal's handler between bytecodes of the main thread, also
    inside a ``__del__`` (the regex compiler's parse nodes have one), and an
    exception raised there is only printed as "Exception ignored": the run would
    go on as if no signal had come. The unraisable hook sees that exception and
    sends the same signal to the main thread again, from a thread of its own so
    that it arrives after the finaliser (and the hook) have returned.
    """
    signal.signal(signal.SIGTERM, on_sigterm)
    previous = sys.unraisablehook
    main_thread = threading.main_thread().ident

    def redeliver(unraisable: Any) -> None:
        exc = unraisable.exc_value
        if isinstance(exc, (Terminated, KeyboardInterrupt)) and main_thread is not None:
            sig = signal.SIGTERM if isinstance(exc, Terminated) else signal.SIGINT
            threading.Thread(target=_signal_later, args=(main_thread, sig), daemon=True).start()
        else:
            previous(unraisable)

    sys.unraisablehook = redeliver


@contextmanager
def progress() -> Iterator[Callable[[str], None]]:
    """A spinner on stderr while collecting; stdout carries only the report."""
    console = stderr_console()
    if not console.is_terminal:
        yield lambda _msg: None
        return
    with console.status("collecting") as status:
        yield lambda msg: status.update(f"collecting: {sanitize(msg)}")


def check_label_selector(value: str | None) -> str | None:
    """-l is a valid label selector, checked before any request is made."""
    from triage.kube.labelselector import SelectorError, check

    try:
        check(value or "")
    except SelectorError as exc:
        fail(f"-l {exc}", EXIT_USAGE)
    return value


MAX_TAIL_LINES = 200000


def check_pattern_dirs(value: list[Path] | None) -> list[Path] | None:
    """--patterns names directories that exist: a typo is a usage error before anything
    is read, never a run without the patterns it meant."""
    for directory in value or []:
        if not directory.exists():
            fail(f"--patterns {directory}: no such directory", EXIT_USAGE)
        if not directory.is_dir():
            fail(f"--patterns {directory} is not a directory of pattern files", EXIT_USAGE)
    return value


FORMATS = ", ".join(o.value for o in Output)


def report_format(text: str) -> Output:
    """-o: one of the report formats, said in one sentence when it is not."""
    try:
        return Output(text.strip().lower())
    except ValueError:
        raise InputError(f"-o {text!r} is not a report format; use one of {FORMATS}") from None


def check_report_flags(output_file: Path | None, quiet: bool, fail_on: str) -> None:
    if quiet and output_file is None:
        raise InputError("--quiet needs --output-file: the report has to go somewhere")
    if fail_on not in ("critical", "warning"):
        raise InputError(f"--fail-on {fail_on!r} must be critical or warning")


def check_tail_lines(tail_lines: int) -> None:
    if not 1 <= tail_lines <= MAX_TAIL_LINES:
        raise InputError(f"--tail-lines {tail_lines} must be between 1 and {MAX_TAIL_LINES}")


def parse_window(text: str) -> float:
    """--since: a positive duration such as 30m, 2h or 1h30m, at most 7 days."""
    m = _DURATION.match(text.strip())
    if not text.strip() or not m:
        raise InputError(f"--since {text!r} is not a duration such as 30m, 2h or 1h30m")
    hours, minutes, seconds = (float(g) if g else 0.0 for g in m.groups())
    total = hours * 3600 + minutes * 60 + seconds
    if not 60 <= total <= 7 * 86400:
        raise InputError(f"--since {text!r} must be between 1m and 7 days")
    return total


def prometheus_options(args: PrometheusArgs, timeout: float) -> PrometheusOptions | None:
    window = parse_window(args.since)
    if args.prometheus is None:
        return None
    from triage.collect.prometheus import PrometheusOptions

    url = args.prometheus.strip()
    if url != "auto" and not regex.match(r"^https?://[^\s/]+", url):
        raise InputError(f"--prometheus {redact_text(url)!r} is neither an http(s):// URL "
                         "nor auto")
    ca_file = args.prometheus_ca_file
    if ca_file is not None and not ca_file.is_file():
        raise InputError(f"--prometheus-ca-file {ca_file} does not exist")
    return PrometheusOptions(url=url, window_seconds=window, token=args.prometheus_token,
                             username=args.prometheus_user,
                             password=args.prometheus_password,
                             ca_file=str(ca_file) if ca_file else None,
                             insecure_skip_tls_verify=args.prometheus_insecure_skip_tls_verify,
                             timeout=timeout)


def live_collector(namespace: str | None, all_namespaces: bool, kubeconfig: str | None,
                    context: str | None, selector: str | None, request_timeout: str,
                    tail_lines: int, progress: Callable[[str], None],
                    prometheus: PrometheusArgs | None = None) -> LiveCollector:
    # The kubernetes client takes a fifth of a second to import; analyze never needs it.
    from triage.collect.live import LiveCollector, Options, connect

    timeout = parse_duration(request_timeout)
    check_tail_lines(tail_lines)
    prom = prometheus_options(prometheus, timeout) if prometheus is not None else None
    conn = connect(kubeconfig, context, timeout)
    opts = Options(namespace=namespace or conn.default_namespace, all_namespaces=all_namespaces,
                   selector=selector, tail_lines=tail_lines, request_timeout=timeout,
                   prometheus=prom)
    return LiveCollector(conn, opts, progress)
