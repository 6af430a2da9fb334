"""The LLM: one interface, two wire protocols, presets, switching at run time.

``current()`` is the provider the settings name (built once, rebuilt after ``switch``):
``provider.chat(system, messages, tools, max_tokens) -> {"text", "tool_calls", "stop",
"usage"}`` (docs/internals.md "LLM"); failures raise ``LLMError`` with a short message
for the user. Presets (``PRESETS``, the names) give the protocol, base URL and a starting
model; ``switch(provider, model, base_url)`` changes them and persists the choice in the
settings store (``mimi.config``), so it survives a reboot. Each preset keeps its own API
key (setting ``key_<preset>``) and sends no other (a key for one company never goes to
another); switching back and forth needs no key re-entry. The ``api_key`` setting is
only what ``MIMI_API_KEY`` and ``flash.sh config api_key=`` store, copied to the key of
the provider in effect then.

Base URLs follow each official SDK: Anthropic's has no ``/v1`` (the path adds it),
OpenAI-compatible ones include it (``{base}/chat/completions``). Ollama and LM Studio run
on a computer, not on the board: set ``base_url`` to ``http://<computer's IP>:11434/v1``
(or ``:1234/v1``).
"""
from micropython import const

from mimi import config, log, pick, seam  # noqa: F401 - pick: llm.pick, as before

_TAG = const("llm")


class LLMError(Exception):
    """A call that failed for good: ``user_message`` is short, names the cause, and is
    safe to show (no key, no traceback); ``status`` is the HTTP status or None;
    ``retryable`` says whether trying again later may help; ``too_long`` that the
    request did not fit the model's context window (a 413, or a 400 that says so: the
    agent shortens the history and tries once more). (Defined here, not in ``common``, so
    importing the package does not load the HTTP client.)"""

    too_long = False

    def __init__(self, user_message, status=None, retryable=False):
        super().__init__(user_message)
        self.user_message = user_message
        self.status = status
        self.retryable = retryable


# The presets: the first speaks Anthropic Messages, the others OpenAI Chat Completions;
# the first four need an API key (local servers do not).
PRESETS = ("anthropic", "openai", "openrouter", "deepseek", "ollama", "lmstudio", "custom")
# base URL and starting model of each, in that order
_PRESET = const("https://api.anthropic.com claude-sonnet-4-5|https://api.openai.com/v1 gpt-4.1-mini"
                "|https://openrouter.ai/api/v1 anthropic/claude-sonnet-4.5|https://api.deepseek.com deepseek-v4-flash"
                "|http://localhost:11434/v1 qwen3:8b|http://localhost:1234/v1 local-model| ")

_UNKNOWN = const("unknown provider '%s' (one of: %s)")
_current = None
_buf = None


def init(size=None):
    """Allocate the one reply buffer (``LLM_RESPONSE_MAX_BYTES``) and return it.

    Call early at boot, before the heap fragments: it is one large block, and importing
    the rest of the firmware first can leave no free run that long (a 256 KB heap after
    the imports has lots of free bytes but no 36 KB run). Importing this package is light
    (it does not load the HTTP client). Later calls return the same buffer.
    """
    global _buf
    if _buf is None or (size and len(_buf) != size):
        _buf = None
        _buf = bytearray(size or config.LLM_RESPONSE_MAX_BYTES)
    return _buf


def current():
    """The provider for the current settings (a ``common.Provider``)."""
    global _current
    if _current is None:
        name = config.get("provider")
        if name not in PRESETS:
            log.warn(_TAG, "%s unknown", name)
            name = "anthropic"
        i = PRESETS.index(name)
        base, model = _PRESET.split("|")[i].split(" ")
        from mimi.llm import common

        _current = common.Provider("openai" if i else "anthropic", name, config.get("base_url") or base,
                                   config.get("key_" + name),  # its own key only: never another's
                                   config.get("model") or model, i < 4)
        seam.collect()  # the first call compiles the HTTP client: free the compiler's garbage at once
    return _current


def reset():
    """Forget the built provider; the next ``current()`` reads the settings again."""
    global _current
    _current = None


def switch(provider=None, model=None, base_url=None):
    """Change provider, model and/or base URL; persisted; returns the new provider.

    A new provider starts from its preset's model and base URL unless given. ``""`` for
    ``model`` or ``base_url`` means "the preset's". Raises ``ValueError`` with a message
    for the user on an unknown provider, a bad URL or model name, or ``custom`` without a
    base URL; nothing is changed then.
    """
    from mimi.net import http

    name = config.get("provider")
    if provider is not None:
        provider = provider.strip().lower()
        if provider not in PRESETS:
            raise ValueError(_UNKNOWN % (provider, ", ".join(PRESETS)))
        if provider != name:
            model = model or ""
            if provider != "custom":  # custom keeps an address set before it (it has no preset)
                base_url = base_url or ""
        name = provider
    if model is not None:
        model = model.strip()
        if len(model) > 100 or " " in model or "\n" in model:
            raise ValueError("that is not a model name")
    if base_url is not None:
        base_url = base_url.strip().rstrip("/")
        if base_url:
            http.parse_url(base_url)  # ValueError names the problem
    if name == "custom" and not (config.get("base_url") if base_url is None else base_url):
        raise ValueError("the custom provider needs a base URL")
    for k, v in (("provider", provider), ("model", model), ("base_url", base_url)):
        if v is not None:
            config.set(k, v)
    reset()
    p = current()
    log.info(_TAG, "now %s", describe(p))
    return p


def set_key(key, provider=None):
    """Store the API key for ``provider`` (default: the current one). Never logged."""
    name = provider or config.get("provider")
    if name not in PRESETS:
        raise ValueError(_UNKNOWN % (name, ", ".join(PRESETS)))
    config.set("key_" + name, key.strip())
    reset()


def describe(p=None):
    """One line for /status: ``anthropic, claude-sonnet-4-5 at https://api.anthropic.com``."""
    p = p or current()
    return "%s, %s at %s" % (p.name, p.model or "(none)", p.base_url or "(none)")
