"""The firmware as a user meets it: ``python -m host_sim run`` against local fakes.

``Sim`` starts a fake Telegram and a fake LLM (Anthropic or OpenAI) on loopback, boots
the firmware in a separate process with the ``MIMI_*`` settings pointing at them, and
offers what a test, the benchmark or the offline chat needs::

    sim = Sim(runtime="micropython").start()     # waits until the bot polls
    sim.llm.script(Reply.tools([("get_current_time", {})]), Reply.text("It is noon."))
    sim.send("what time is it?")
    sim.wait_texts(1) == ["It is noon."]
    sim.stop()                                   # SIGINT, as Ctrl-C; returns its exit status

The board process runs in its own session (a Ctrl-C in the terminal does not reach it);
its console goes to ``<flash>/console.log``. Only loopback addresses are used.
"""
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

from host_sim import hostenv, launcher

CHAT = 1001
TOKEN = "123456:FAKE-sim-token"
API_KEY = "sk-FAKE-sim-key"
BOOT_TIMEOUT_S = 60


# The person's own settings the offline chat's board keeps (README, "The web app and the
# chat gateway"): they name no account the fakes stand in for.
PASSED = ("MIMI_WEB_PASSWORD", "MIMI_WEB_PORT", "MIMI_GATEWAY_PORT", "MIMI_WEB_HOST", "MIMI_MQTT_URL", "MIMI_TZ")

class Sim:
    """Fakes + one board process. ``start()``; ``reboot()``; ``stop()``."""

    def __init__(self, flash=None, runtime="cpython", provider="anthropic", heap=None, allowed=(CHAT,),
                 model="fake-model", env=None, log_sink=None, boot_timeout_s=BOOT_TIMEOUT_S):
        self.flash = os.path.abspath(flash) if flash else tempfile.mkdtemp(prefix="mimi-sim-")
        self.runtime = runtime
        self.provider = provider
        self.heap = heap or launcher.HEAP_DEFAULT
        self.allowed = allowed
        self.model = model
        self.env_extra = dict(env or {})
        self.log_sink = log_sink  # fn(line str) for each console line, besides the file
        self.boot_timeout_s = boot_timeout_s
        self.tg = None
        self.llm = None
        self.proc = None
        self.log_path = os.path.join(self.flash, "console.log")
        self._log_lock = threading.Lock()
        self._log_lines = []

    # -- life ----------------------------------------------------------------------------

    def start(self, wait=True):
        """Start the fakes, then boot; with ``wait``, return once the bot polls Telegram."""
        self.start_fakes()
        self.boot(wait)
        return self

    def start_fakes(self):
        """Start the fake Telegram and the fake LLM (before ``boot``)."""
        from host_sim.fakes.llm import FakeAnthropic, FakeOpenAI
        from host_sim.fakes.telegram import FakeTelegram

        self.tg = FakeTelegram(token=TOKEN).start()
        cls = FakeOpenAI if self.provider == "openai" else FakeAnthropic
        self.llm = cls(api_key=API_KEY, model=self.model).start()
        return self

    def env(self):
        """The board's environment: ours without any ``MIMI_*`` setting, plus the fakes' settings
        (``MIMI_MICROPYTHON``, the binary, is no setting: it stays; nor are those of
        ``PASSED``, which the fakes do not replace: the web app, the gateway, MQTT)."""
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("MIMI_") or k == hostenv.MICROPYTHON_VAR or k in PASSED}
        env.update(MIMI_TG_TOKEN=TOKEN, MIMI_TG_API_BASE=self.tg.url, MIMI_PROVIDER=self.provider,
                   MIMI_API_KEY=API_KEY, MIMI_MODEL=self.model, MIMI_LLM_BASE_URL=self.llm.base_url,
                   MIMI_ALLOWED_CHATS=",".join(str(c) for c in self.allowed), PYTHONUNBUFFERED="1",
                   PYTHONPATH=hostenv.ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        env.update(self.env_extra)
        return env

    def boot(self, wait=True):
        """Start the board process (``python -m host_sim run``) on this flash folder."""
        cmd = [sys.executable, "-m", "host_sim", "run", "--flash", self.flash, "--runtime", self.runtime,
               "--heap", self.heap]
        mark = len(self.tg.calls)
        # stdin: not the terminal, which belongs to the offline chat (no console in run).
        self.proc = subprocess.Popen(cmd, env=self.env(), cwd=hostenv.ROOT, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        threading.Thread(target=self._pump, args=(self.proc.stdout,), daemon=True).start()
        if wait:
            self.wait_polling(mark)
        return self

    def wait_polling(self, mark=0, timeout_s=None):
        """Wait for the bot's first ``getUpdates`` after call number ``mark``."""
        timeout_s = timeout_s or self.boot_timeout_s
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            if any(c.method == "getUpdates" for c in self.tg.calls[mark:]) or self._poll_started():
                return
            if self.proc.poll() is not None:
                raise RuntimeError("the board exited (%s) while booting:\n%s" % (self.proc.returncode, self.log()))
            time.sleep(0.05)
        raise RuntimeError("the bot did not poll within %d s:\n%s" % (timeout_s, self.log()))

    def _poll_started(self):
        # A long poll is recorded by the fake only when it returns; the console says so first.
        with self._log_lock:
            return any("[tg] bot @" in ln for ln in self._log_lines)

    def _pump(self, stream):
        with open(self.log_path, "ab") as f:
            for raw in iter(stream.readline, b""):
                f.write(raw)
                f.flush()
                line = raw.decode(errors="replace").rstrip("\n")
                with self._log_lock:
                    self._log_lines.append(line)
                if self.log_sink:
                    self.log_sink(line)

    def stop_board(self, sig=signal.SIGINT, timeout_s=20):
        """Stop the board process (SIGINT: as Ctrl-C; SIGKILL: a power cut). Returns its status."""
        p = self.proc
        if p is None or p.poll() is not None:
            return None if p is None else p.returncode
        if sig == signal.SIGKILL:
            os.killpg(p.pid, signal.SIGKILL)  # the launcher and the board under it
        else:
            p.send_signal(sig)
        try:
            return p.wait(timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            raise RuntimeError("the board did not stop within %d s:\n%s" % (timeout_s, self.log()))
        finally:
            with self._log_lock:
                self._log_lines = []

    def reboot(self, sig=signal.SIGINT):
        """Stop the board and boot it again on the same flash; returns the stop status."""
        rc = self.stop_board(sig)
        self.boot()
        return rc

    def stop(self):
        """Stop the board (SIGINT) and the fakes; returns the board's exit status."""
        rc = self.stop_board()
        for f in (self.tg, self.llm):
            if f is not None:
                f.stop()
        return rc

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    # -- chatting ---------------------------------------------------------------------

    def send(self, text, chat=CHAT, **kw):
        """A Telegram text message from ``chat`` (a private chat unless ``kw`` says otherwise)."""
        return self.tg.inject_text(chat, text, **kw)

    def messages(self, chat=CHAT):
        """The successful ``sendMessage`` calls to ``chat``, in order."""
        return [c for c in self.tg.sent if c.method == "sendMessage" and str(c.params.get("chat_id")) == str(chat)]

    def texts(self, chat=CHAT):
        return self.tg.texts(chat)

    def wait_texts(self, count, chat=CHAT, timeout_s=30):
        """Wait until ``count`` messages reached ``chat``; return their texts."""
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            t = self.texts(chat)
            if len(t) >= count:
                return t
            if not self.alive():
                break
            time.sleep(0.02)
        raise AssertionError("wanted %d messages in chat %s, got %r\nconsole:\n%s"
                             % (count, chat, self.texts(chat), self.log()[-4000:]))

    def llm_requests(self):
        """The requests the fake LLM answered (API calls only), as dicts with ``json``."""
        return [r for r in self.llm.requests if r["method"] == "POST"]
