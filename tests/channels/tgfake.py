"""A scripted stand-in for the Bot API wire of ``mimi.channels.telegram.Telegram`` (both runtimes).

Updates are given as JSON text, as Telegram sends them (non-ASCII escaped), and parsed
with the runtime's own ``json.loads``, so MicroPython's lone surrogates reach the channel.
"""
import json

from mimi.channels.telegram import TgError

ME = {"id": 777, "is_bot": True, "first_name": "mimi", "username": "mimi_test_bot"}


class Poll:
    def __init__(self, api, offset, limit):
        self.api = api
        self.offset = offset
        self.limit = limit
        self.closed = False

    def ready(self, timeout_ms=0):
        return bool(self.api.answers)

    def expired(self):
        return False

    def close(self):
        self.closed = True


class FakeApi:
    def __init__(self, token="123456:FAKE-token"):
        self.tok = token
        self.calls = []  # (method, params)
        self.polls = []  # Poll objects started, in order
        self.answers = []  # per poll: a list of updates, or an exception to raise
        self.fails = {}  # method -> [exception, ...] raised by the next calls
        self.log = []  # everything in order: ("poll", offset) or (method, params)

    def token(self):
        return self.tok

    def fail(self, method, exc, times=1):
        self.fails.setdefault(method, []).extend([exc] * times)

    def _fail(self, method):
        lst = self.fails.get(method)
        if lst:
            raise lst.pop(0)

    def call(self, method, params=None, want_result=False, timeout_ms=None):
        self.calls.append((method, params))
        self.log.append((method, params))
        self._fail(method)
        if method == "getMe":
            return dict(ME)
        return True

    def start_poll(self, offset, timeout_s, limit):
        self._fail("start_poll")
        p = Poll(self, offset, limit)
        self.polls.append(p)
        self.log.append(("poll", offset))
        return p

    def updates(self, p):
        x = self.answers.pop(0)
        if isinstance(x, Exception):
            raise x
        return x

    # -- helpers -----------------------------------------------------------------------

    def answer(self, *updates_json):
        """Queue one poll answer made of updates given as JSON text."""
        self.answers.append([json.loads(u) for u in updates_json])

    def sent(self, method="sendMessage"):
        return [p for m, p in self.calls if m == method]

    def texts(self, chat_id=None):
        return [p["text"] for p in self.sent() if chat_id is None or str(p["chat_id"]) == str(chat_id)]


_n = [1000]


def text_update(chat_id, text, chat_type="private", user_id=None, extra=""):
    """JSON of a text message update; ``text`` is written with non-ASCII escaped."""
    _n[0] += 1
    user_id = chat_id if user_id is None else user_id
    return ('{"update_id":%d,"message":{"message_id":%d,"from":{"id":%d,"is_bot":false,"first_name":"Ann"},'
            '"chat":{"id":%d,"type":"%s"},"date":1767225600,"text":%s%s}}'
            % (_n[0], _n[0], user_id, chat_id, chat_type, escape_json(text), extra))


def update(kind, body):
    _n[0] += 1
    return '{"update_id":%d,"%s":%s}' % (_n[0], kind, body)


def message_update(chat_id, fields, chat_type="private"):
    """JSON of a message update with extra ``fields`` (JSON text without braces)."""
    _n[0] += 1
    return ('{"update_id":%d,"message":{"message_id":%d,"from":{"id":%d,"is_bot":false,"first_name":"Ann"},'
            '"chat":{"id":%d,"type":"%s"},"date":1767225600,%s}}'
            % (_n[0], _n[0], chat_id, chat_id, chat_type, fields))


def escape_json(s):
    """JSON string literal with every non-ASCII character escaped as Telegram does
    (characters above U+FFFF as a surrogate pair)."""
    out = ['"']
    for ch in s:
        c = ord(ch)
        if ch == '"' or ch == "\\":
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif c < 0x20:
            out.append("\\u%04x" % c)
        elif c < 0x80:
            out.append(ch)
        elif c < 0x10000:
            out.append("\\u%04x" % c)
        else:
            c -= 0x10000
            out.append("\\u%04x\\u%04x" % (0xD800 + (c >> 10), 0xDC00 + (c & 0x3FF)))
    out.append('"')
    return "".join(out)


def tg_error(code, description, retry_after=None):
    return TgError(code, description, retry_after)
