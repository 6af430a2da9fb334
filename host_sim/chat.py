"""``python -m host_sim`` with no arguments: the offline default, a chat in the terminal.

No account, key or board: a local fake Telegram (``host_sim/fakes/telegram.py``) and a
fake Anthropic server (``host_sim/fakes/llm.py``) whose answers come from the stand-in in
``host_sim/brain.py``, which says plainly that it is not a real model. The firmware boots
unchanged (``python -m host_sim run``, the CPython runtime by default, through
``host_sim.harness.Sim``) with its settings pointed at them through the ``MIMI_*``
variables, and polls the fake Telegram as it would the real one. What you type arrives
there as a message from an allowed private chat; what the firmware sends back prints as
the chat would show it, and between them the tool calls the model asked for and what the
tools answered.

The flash folder is a new temporary folder (printed at start, deleted at exit), so every
run starts as a fresh board and nothing of it is left behind or mixed with ``./flash``,
whose settings a run with real credentials uses; ``--flash DIR`` uses and keeps DIR
instead. The board's console log goes to ``DIR/console.log`` (``--log`` prints it too).

On a terminal the chat prompts with ``you> `` and waits for the answer before the next
prompt; the line can be edited and earlier lines come back with the arrow keys (Python's
``readline``, where the platform has it). What arrives while you type (a reminder that
came due) is printed above the prompt, and the line typed so far is kept. ``/provider``
and ``/model`` with an argument stay here: the offline chat has no real server to switch
to, so the board stays on the stand-in (``python3 -m host_sim run`` with ``MIMI_*``
settings talks to a real one).

Ctrl-C or Ctrl-D (end of input) quits: the firmware is stopped as on SIGINT, the fakes
close. With input from a pipe, each line waits for its answer before the next is sent,
and the chat quits after the last answer: ``echo "what time is it?" | python -m host_sim``.
"""
import json
import os
import shutil
import sys
import tempfile
import threading
import time

from host_sim import brain, harness, hostenv, launcher

ANSWER_WAIT_S = 60  # how long a line waits for its answer
_PREVIEW = 160  # characters of a tool's input or result shown
PROMPT = "you> "
NO_SERVER = ("(the offline chat has no real server: the board stays on the stand-in, a fake Anthropic server on "
             "this machine. For a real model: MIMI_PROVIDER=... MIMI_API_KEY=... python3 -m host_sim run)")


def _short(s):
    s = " ".join(str(s).split())
    return s if len(s) <= _PREVIEW else s[:_PREVIEW - 3] + "..."


def _check_reusable(flash):
    """A kept folder: refuse one with a real bot's or model's settings (the chat would put
    its fakes over them); forget the Telegram offset of an earlier chat (each fake Telegram
    numbers its updates from the start again, and the board would skip them as seen)."""
    try:
        token = launcher._stored(flash, "tg_token")
        keys = [launcher._stored(flash, n) for n in launcher.setting_specs() if n == "api_key" or n[:4] == "key_"]
    except (OSError, ValueError, KeyError):
        token, keys = None, []
    real = [n for n, v, fake in [("a Telegram bot token", token, harness.TOKEN)] +
            [("an API key", k, harness.API_KEY) for k in keys] if v and v != fake]
    real = sorted(set(real), key=real.index)
    if real:
        raise OSError("%s holds the settings of a real board (%s); the offline chat would replace them with its "
                      "fakes. Use another folder (or none: a fresh one each run), or python3 -m host_sim run "
                      "--flash %s for a real run." % (flash, " and ".join(real), flash))
    try:
        launcher.forget_store_keys(flash, ("tg_offset",))
    except (OSError, ValueError):
        pass  # a damaged store is set aside at boot


class OfflineChat:
    """The fakes, the board process and the terminal, wired together."""

    def __init__(self, flash_dir=None, runtime="cpython", out=None, show_log=False):
        self.keep = flash_dir is not None
        flash = os.path.abspath(flash_dir) if flash_dir else tempfile.mkdtemp(prefix="mimi-offline-")
        os.makedirs(flash, exist_ok=True)
        if self.keep:
            _check_reusable(flash)
        self.out = out or sys.stdout
        self.sim = harness.Sim(flash, runtime, "anthropic", model="offline-stand-in",
                               log_sink=(lambda line: self.say("  | " + line)) if show_log else None)
        self.flash = flash
        self.sent = 0  # messages typed
        self.answered = 0  # of them, answered by at least one message
        self._print_lock = threading.Lock()
        self._stop = threading.Event()
        self.prompting = None  # readline while input() shows the prompt, so text goes above it

    def say(self, text):
        with self._print_lock:
            rl = self.prompting
            if rl is None:
                self.out.write(text + "\n")
            else:  # above the prompt, which comes back with what was typed so far
                self.out.write("\r\x1b[K" + text + "\n" + PROMPT + rl.get_line_buffer())
            self.out.flush()

    def _respond(self, req):
        """The fake LLM's responder: the stand-in's answer, shown as it goes."""
        from host_sim.fakes.llm import Reply

        body = req.get("json") or {}
        _, msgs, _ = brain.normalise(body)
        k = len(msgs)
        while k > 0 and msgs[k - 1]["role"] == "tool":
            k -= 1
        for m in msgs[k:]:
            self.say("  . %s answered: %s" % (m["name"] or "tool", _short(m["text"])))
        r = brain.think(body)
        for name, args in r["calls"]:
            self.say("  . the model calls %s %s" % (name, _short(json.dumps(args, ensure_ascii=False))))
        if r["calls"]:
            return Reply.tools(r["calls"], text=r["text"])
        return Reply.text(r["text"])

    def _watch(self):
        # Messages the firmware sent to our chat, as the chat shows them.
        seen = 0
        while not self._stop.is_set():
            msgs = self.sim.messages()
            for c in msgs[seen:]:
                self.say("mimi> " + c.result.get("text", "").replace("\n", "\n      "))
                self.answered = self.sent
            seen = len(msgs)
            self._stop.wait(0.05)

    def start(self):
        """Start the fakes and boot the firmware against them (without waiting for it)."""
        self.sim.start_fakes()
        self.sim.llm.responder = self._respond
        self.sim.boot(wait=False)
        threading.Thread(target=self._watch, daemon=True).start()

    def send(self, text):
        """Deliver ``text`` to the firmware as a Telegram message from our chat."""
        self.sent += 1
        self.sim.send(text)

    def wait_answers(self, timeout_s=ANSWER_WAIT_S):
        """Wait until every message typed so far got an answer (or ``timeout_s``)."""
        deadline = time.time() + timeout_s
        while self.answered < self.sent and time.time() < deadline and self.sim.alive():
            time.sleep(0.05)
        time.sleep(0.3)  # the rest of a reply split in several messages

    def stop(self):
        """Stop the firmware (SIGINT, as Ctrl-C on a board's console), then the fakes."""
        try:
            self.sim.stop()
        finally:
            self._stop.set()
            if not self.keep:
                shutil.rmtree(self.flash, ignore_errors=True)


def _board_died(chat):
    """0 while the board runs; else say why it stopped (its console's last lines) and return 1."""
    if chat.sim.alive():
        return 0
    tail = chat.sim.log().rstrip().splitlines()[-8:]
    chat.say("the board stopped (exit status %s); the end of its console%s:\n  %s"
             % (chat.sim.proc.returncode, " (%s)" % chat.sim.log_path if chat.keep else "",
                "\n  ".join(tail) or "(empty)"))
    return 1


def _reader(chat, stdin, interactive):
    """A function giving the next line typed (str), or None at the end of input."""
    if not interactive:
        return lambda: stdin.readline() or None
    try:
        import readline  # input() gets line editing and history
    except ImportError:
        readline = None

    def read():
        chat.prompting = readline
        try:
            return input(PROMPT)
        except EOFError:
            chat.say("")
            return None
        finally:
            chat.prompting = None

    return read


def main(flash_dir=None, runtime="cpython", show_log=False, stdin=None):
    """Run the terminal chat until Ctrl-C or end of input; return an exit status."""
    stdin = stdin or sys.stdin
    try:
        import host_sim.fakes.llm  # noqa: F401
        import host_sim.fakes.telegram  # noqa: F401
    except ImportError as e:
        print("mimi host simulator: the offline chat needs the local fakes (%s)" % e, file=sys.stderr)
        return 2
    if runtime == "micropython" and not hostenv.micropython_exe():
        print("mimi host simulator: --runtime micropython: %s" % hostenv.micropython_missing(), file=sys.stderr)
        return 2
    try:
        chat = OfflineChat(flash_dir, runtime, show_log=show_log)
    except OSError as e:
        print("mimi host simulator: %s" % e, file=sys.stderr)
        return 2
    chat.say("mimi host simulator, offline: a local fake Telegram and a stand-in that is NOT a real model.")
    chat.say("Flash folder: %s (%s)" % (chat.flash, "kept" if chat.keep else "deleted on exit; python3 -m host_sim chat --flash DIR keeps one"))
    chat.say("Type a message and press Enter; Ctrl-C or Ctrl-D quits. Try: \"remember that my cat is called "
             "Miso\", \"what time is it?\", \"what do you remember?\", \"remind me in 1 minute to stretch\", /status")
    interactive = stdin.isatty()
    read = _reader(chat, stdin, interactive)
    rc = 0
    try:
        chat.start()
        while True:
            line = read()
            if line is None:
                chat.wait_answers()
                rc = _board_died(chat)
                break
            line = line.strip()
            if not line:
                continue
            rc = _board_died(chat)
            if rc:
                break
            if not interactive:
                chat.say(PROMPT + line)
            word, _, arg = line.partition(" ")
            if word.split("@")[0] in ("/provider", "/model"):
                chat.say(NO_SERVER)
                if arg.strip():
                    continue  # not sent: the firmware would switch to a server that is not there
            chat.send(line)
            chat.wait_answers()  # a conversation, one message at a time
    except KeyboardInterrupt:
        chat.say("")
    finally:
        chat.stop()
    chat.say("bye")
    return rc
